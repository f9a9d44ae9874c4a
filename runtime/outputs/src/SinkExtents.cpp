// Extent records: their text, and what a run that takes an output up makes of them.
#include "orch/runtime/outputs/SinkExtents.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <algorithm>
#include <charconv>

namespace orch::runtime {
namespace {

/// The fields of `text` between single spaces (an empty one where two spaces meet).
std::vector<std::string_view> fieldsOf(std::string_view text) {
  std::vector<std::string_view> fields;
  for (size_t at = 0;;) {
    const size_t space = text.find(' ', at);
    fields.push_back(text.substr(at, space == std::string_view::npos ? space : space - at));
    if (space == std::string_view::npos)
      return fields;
    at = space + 1;
  }
}

std::optional<uint64_t> number(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

ExtentRecord decodeOrRefuse(const SinkRecord &record, const std::string &sink) {
  std::optional<ExtentRecord> extent = decodeExtent(record.bytes);
  if (!extent)
    throw OperatorError(sink + ": cannot resume: the run journal holds a record this sink did " +
                        "not write (\"" + std::string(record.bytes.substr(0, 40)) +
                        "\"); run with --restart to start over");
  return *extent;
}

} // namespace

std::string encodeExtent(const ExtentRecord &record) {
  std::string text = std::to_string(record.begin) + " " + std::to_string(record.end);
  for (const std::string &name : record.names)
    text += " " + escapeField(name);
  return text;
}

std::optional<ExtentRecord> decodeExtent(std::string_view text) {
  if (text.empty())
    return ExtentRecord{};
  const std::vector<std::string_view> fields = fieldsOf(text);
  if (fields.size() < 2)
    return std::nullopt;
  const std::optional<uint64_t> begin = number(fields[0]), end = number(fields[1]);
  if (!begin || !end || *end < *begin)
    return std::nullopt;
  ExtentRecord record{*begin, *end, {}};
  for (size_t f = 2; f < fields.size(); ++f) {
    std::optional<std::string> name = unescapeField(fields[f]);
    if (!name || name->empty())
      return std::nullopt;
    record.names.push_back(std::move(*name));
  }
  return record;
}

SinkExtents foldExtents(const SinkHistory &history, const std::string &sink) {
  SinkExtents extents;
  history.forEach([&](const SinkRecord &record) {
    const ExtentRecord extent = decodeOrRefuse(record, sink);
    extents.size = std::max(extents.size, extent.end);
    extents.names.insert(extents.names.end(), extent.names.begin(), extent.names.end());
    extents.nameEnds.insert(extents.nameEnds.end(), extent.names.size(), extent.end);
    if (record.fate == RecordFate::Retired) {
      extents.retiredNames.insert(extents.retiredNames.end(), extent.names.begin(),
                                  extent.names.end());
    } else {
      // Written again since (the retried row succeeded): a name of the output again.
      for (const std::string &name : extent.names)
        std::erase(extents.retiredNames, name);
    }
    if (record.fate == RecordFate::RunsAgain) {
      if (extent.end > extent.begin)
        extents.dropRanges.emplace_back(extent.begin, extent.end);
      extents.dropNames.insert(extents.dropNames.end(), extent.names.begin(), extent.names.end());
    }
  });
  return extents;
}

std::optional<SinkExtents> extentsToResume(const OperatorConfig &config) {
  if (!config.resume())
    return std::nullopt;
  return foldExtents(*config.resume(), config.name());
}

std::string extentAfterRetry(const SinkRecord &record, const SinkExtents &extents,
                             const std::string &sink) {
  if (record.bytes.empty())
    return {};
  ExtentRecord extent = decodeOrRefuse(record, sink);
  uint64_t cutBefore = 0;
  for (const auto &[begin, end] : extents.dropRanges)
    if (end <= extent.begin)
      cutBefore += end - begin;
  extent.begin -= cutBefore;
  extent.end -= cutBefore;
  if (record.fate != RecordFate::RunsAgain)
    return encodeExtent(extent);
  // Its rows go; what it published stays published (a shard it ended), with none of them.
  extent.end = extent.begin;
  return extent.names.empty() ? std::string() : encodeExtent(extent);
}

} // namespace orch::runtime
