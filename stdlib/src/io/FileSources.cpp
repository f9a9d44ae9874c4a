// Sources over local files: `files(glob)` (one File row per match, sorted by path),
// `jsonl(path)` (one row per JSON line) and `lines(path)` (one String row per line).
#include "FileIo.h"
#include "JsonValue.h"
#include "OperatorGroups.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <glob.h>
#include <sys/stat.h>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::SourceRow;
using runtime::Value;

class FilesSource : public runtime::RowSource {
public:
  explicit FilesSource(const OperatorConfig &config) {
    const std::string pattern = config.stringConstant("glob");
    paths_ = expandGlob(pattern, "files");
    // A mistyped pattern must not look like an empty input (and empty the outputs).
    if (paths_.empty() && !config.boolConstant("optional"))
      throw OperatorError("files: no file matches \"" + pattern +
                          "\" (write `files(\"...\", optional: true)` if that can happen)");
  }

  std::optional<SourceRow> next() override {
    if (next_ >= paths_.size())
      return std::nullopt;
    return SourceRow{fileValue(paths_[next_++]), {}};
  }

  std::optional<uint64_t> total() const override { return paths_.size(); }

  std::string fingerprint() const override { return filesFingerprint(paths_); }

private:
  std::vector<std::string> paths_;
  size_t next_ = 0;
};

/// Reads a text file line by line: one row per line, parsed as JSON or kept as text.
class LineSource : public runtime::RowSource {
public:
  LineSource(const OperatorConfig &config, bool json)
      : path_(config.stringConstant("path")), json_(json) {
    std::error_code error;
    if (std::filesystem::is_directory(path_, error))
      throw OperatorError(config.op() + ": \"" + path_ + "\" is a directory, not a file");
    input_.open(path_);
    if (!input_)
      throw OperatorError(config.op() + ": cannot read \"" + path_ + "\": " + std::strerror(errno));
  }

  std::optional<SourceRow> next() override {
    std::string line;
    while (std::getline(input_, line)) {
      ++lineNumber_;
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (!json_)
        return SourceRow{Value::string(std::move(line)), {}};
      if (line.find_first_not_of(" \t") == std::string::npos)
        continue;
      if (std::optional<std::string> deep = jsonNestedTooDeep(line))
        return SourceRow{std::nullopt, path_ + ":" + std::to_string(lineNumber_) + ": " + *deep};
      nlohmann::ordered_json parsed =
          nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        return SourceRow{std::nullopt,
                         path_ + ":" + std::to_string(lineNumber_) + ": malformed JSON line"};
      return SourceRow{valueFromJson(parsed), {}};
    }
    return std::nullopt;
  }

  bool skip() override {
    std::string line;
    while (std::getline(input_, line)) {
      ++lineNumber_;
      if (!json_ || line.find_first_not_of(" \t\r") != std::string::npos)
        return true;
    }
    return false;
  }

  std::string fingerprint() const override { return fileFingerprint(path_); }

private:
  std::string path_;
  bool json_;
  std::ifstream input_;
  size_t lineNumber_ = 0;
};

} // namespace

std::string fileFingerprint(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return path + " missing";
  return path + " " + std::to_string(info.st_size) + " " + std::to_string(info.st_mtim.tv_sec) +
         "." + std::to_string(info.st_mtim.tv_nsec);
}

std::string filesFingerprint(const std::vector<std::string> &paths) {
  std::string text;
  for (const std::string &path : paths)
    text += fileFingerprint(path) + "\n";
  return text;
}

std::vector<std::string> expandGlob(const std::string &pattern, const std::string &op) {
  std::vector<std::string> paths;
  glob_t matches{};
  const int status = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches);
  if (status == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i)
      paths.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  if (status != 0 && status != GLOB_NOMATCH)
    throw OperatorError(op + ": cannot expand \"" + pattern + "\"");
  std::sort(paths.begin(), paths.end());
  return paths;
}

Value fileValue(const std::string &path) {
  const std::filesystem::path file(path);
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  return Value::record({{"path", Value::string(path)},
                        {"name", Value::string(file.filename().string())},
                        {"stem", Value::string(file.stem().string())},
                        {"size", Value::integer(error ? -1 : static_cast<int64_t>(size))}});
}

void registerFileSources(runtime::OperatorRegistry &registry) {
  registry.addSource(
      "files", [](const OperatorConfig &config) { return std::make_unique<FilesSource>(config); });
  registry.addSource("jsonl", [](const OperatorConfig &config) {
    return std::make_unique<LineSource>(config, true);
  });
  registry.addSource("lines", [](const OperatorConfig &config) {
    return std::make_unique<LineSource>(config, false);
  });
}

} // namespace orch::stdlib
