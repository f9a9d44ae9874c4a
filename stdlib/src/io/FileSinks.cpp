// Sinks to local files: `jsonl(path, record)` appends one JSON line per row as its root
// finishes; `files(dir, name, ext, content)` writes one file per row, atomically.
#include "FileIo.h"
#include "JsonValue.h"
#include "OperatorGroups.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::Value;

size_t labelIndex(const OperatorConfig &config, const std::string &label) {
  const std::vector<std::string> &labels = config.inputLabels();
  auto found = std::find(labels.begin(), labels.end(), label);
  if (found == labels.end())
    throw OperatorError(config.op() + ": no input '" + label + "'");
  return static_cast<size_t>(found - labels.begin());
}

void createParentDirectory(const std::filesystem::path &path, const OperatorConfig &config) {
  std::error_code error;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), error);
  if (error)
    throw OperatorError(config.name() + ": cannot create \"" + path.parent_path().string() +
                        "\": " + error.message());
}

class JsonlSink : public runtime::RowSink {
public:
  explicit JsonlSink(const OperatorConfig &config)
      : path_(config.stringConstant("path")), record_(labelIndex(config, "record")) {
    createParentDirectory(path_, config);
    output_.open(path_, std::ios::out | std::ios::trunc);
    if (!output_)
      throw OperatorError(config.name() + ": cannot write \"" + path_ + "\"");
  }

  void write(std::span<const Value> values) override {
    output_ << jsonFromValue(values[record_]).dump() << '\n';
    // Rows become visible as their root finishes, not at the end of the run.
    output_.flush();
    if (!output_)
      throw OperatorError("cannot write \"" + path_ + "\"");
  }

  void close() override { output_.close(); }

private:
  std::string path_;
  size_t record_;
  std::ofstream output_;
};

/// A file name that stays inside the output directory.
std::string sanitizeFileName(const std::string &name) {
  std::string safe;
  for (char c : name)
    safe += (c == '/' || c == '\\' || c == '\0') ? '_' : c;
  if (safe.empty() || safe == "." || safe == "..")
    safe = "_" + safe;
  if (safe.front() == '.')
    safe.front() = '_';
  return safe;
}

class FilesSink : public runtime::RowSink {
public:
  explicit FilesSink(const OperatorConfig &config)
      : dir_(config.stringConstant("dir")), ext_(config.stringConstant("ext")),
        name_(labelIndex(config, "name")), content_(labelIndex(config, "content")) {
    std::error_code error;
    std::filesystem::create_directories(dir_, error);
    if (error || !std::filesystem::is_directory(dir_))
      throw OperatorError(config.name() + ": cannot create directory \"" + dir_.string() + "\"");
  }

  void write(std::span<const Value> values) override {
    const std::filesystem::path target = dir_ / (sanitizeFileName(values[name_].asString()) + ext_);
    const std::filesystem::path partial = target.string() + ".partial";
    const Value &content = values[content_];
    {
      std::ofstream output(partial, std::ios::binary | std::ios::trunc);
      if (content.kind() == Value::Kind::String)
        output << content.asString();
      else if (content.kind() == Value::Kind::Bytes)
        output << content.asBytes();
      else
        output << jsonFromValue(content).dump() << '\n';
      if (!output)
        throw OperatorError("cannot write \"" + partial.string() + "\"");
    }
    std::filesystem::rename(partial, target);
  }

private:
  std::filesystem::path dir_;
  std::string ext_;
  size_t name_, content_;
};

} // namespace

void registerFileSinks(runtime::OperatorRegistry &registry) {
  registry.addSink(
      "jsonl", [](const OperatorConfig &config) { return std::make_unique<JsonlSink>(config); });
  registry.addSink(
      "files", [](const OperatorConfig &config) { return std::make_unique<FilesSink>(config); });
}

} // namespace orch::stdlib
