// The resume record most sinks keep (RowSink::resumeRecord): their output described as an
// extent, a stream of bytes (one file's bytes, or all shards' member bytes laid end to end)
// and the names commits published (files, finished shards). A source row's record is where
// its rows begin and end in the stream and the names its commit published; a sink made with
// the records of an interrupted run folds them into where to cut back to, what to cut out
// for --retry-failed and which names are its output (docs/outputs.md).
#pragma once

#include "orch/runtime/operators/Operator.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orch::runtime {

/// What one source row left in a sink: the bytes [begin, end) of the stream, and the names its
/// commit published.
struct ExtentRecord {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::vector<std::string> names;

  bool operator==(const ExtentRecord &) const = default;
};

/// The record's text: "BEGIN END NAME..." with names %-escaped (no space, no line break).
std::string encodeExtent(const ExtentRecord &record);
/// nullopt for a text that is not one; "" is a row that left nothing.
std::optional<ExtentRecord> decodeExtent(std::string_view text);

/// Where a sink's output stands for a run that takes it up: the records of the interrupted
/// run folded together.
struct SinkExtents {
  /// Where the last committed source row left the byte stream (what to cut back to).
  uint64_t size = 0;
  /// The names committed rows published, in commit order. The last ones may not have been
  /// renamed into place yet: taking the output up finishes their publication.
  std::vector<std::string> names;
  /// For each of `names`: `size` as the commit that published it left it.
  std::vector<uint64_t> nameEnds;
  /// Names among `names` that rows published and a --retry-failed then took back (the sink
  /// decides what that means: a file is removed, a shard stays a shard without their samples).
  std::vector<std::string> retiredNames;
  /// What the source rows that run again (`--retry-failed`) had written: byte ranges (sorted,
  /// within `size`) to cut out after cutting back, and the names among `names` they published.
  std::vector<std::pair<uint64_t, uint64_t>> dropRanges;
  std::vector<std::string> dropNames;
};

/// The extents of the output a sink made with `config` takes up (nullopt: it starts afresh).
std::optional<SinkExtents> extentsToResume(const OperatorConfig &config);

/// Folds a history of extent records. OperatorError naming `sink` for a record that is not an
/// extent (a journal this sink did not write).
SinkExtents foldExtents(const SinkHistory &history, const std::string &sink);

/// RowSink::recordAfterRetry for extent records, `extents` the history folded: a kept row's
/// range moves back by the bytes cut out before it; a retried row keeps the names it published,
/// with no bytes ("" when it published none).
std::string extentAfterRetry(const SinkRecord &record, const SinkExtents &extents,
                             const std::string &sink);

} // namespace orch::runtime
