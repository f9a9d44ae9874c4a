// The run journal's store of finished grains' values (`<pipeline>.run/values`, docs/outputs.md,
// resume down to the child): a resumed run seals a grain found here with its value instead of
// running it. Records are [u32 length][u32 FNV-1a of the payload][payload], the payload a
// MessagePack array [node, key, source, row, value]; a record cut short by a crash, or damaged,
// ends the store. Dedup nodes' decisions are kept there too, as records of their node whose
// value describes the decision: a resumed run loads all of them, of every row (the survivors of
// rows that are done stay in the index).
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/values/Value.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

/// A source row's key in the journal's sets and maps: its source in the top 16 bits.
inline uint64_t sourceRowKey(uint32_t source, uint64_t row) { return uint64_t(source) << 48 | row; }

class GrainCheckpoints {
public:
  /// Values are kept for the invoke nodes of Calls that keep their results (`checkpoint`), and
  /// do not read what a Call with `checkpoint: false` made.
  explicit GrainCheckpoints(const plan::Plan &plan);
  ~GrainCheckpoints();

  /// Loads the store at `path` of an earlier run, a record at a time: where the values of the
  /// rows `wanted` (source, row) are (read when recalled, so that a store bigger than memory
  /// resumes), and the Dedup decisions of every row but those `failed` (a failed row takes no
  /// part). A record cut short or damaged ends the store.
  void load(const std::string &path, const std::function<bool(uint32_t, uint64_t)> &wanted,
            const std::function<bool(uint32_t, uint64_t)> &failed);
  /// Replaces the store at `path` with the records loaded (the rest is garbage: values of rows
  /// that are done), copied from the loaded store a piece at a time, and reads recalled values
  /// from it. False when it cannot.
  bool replaceStore(const std::string &path);
  /// From now on, new values are appended to `fd` (owned).
  void attach(int fd);

  /// The value a grain (its invoke node, its entity's key) had in an earlier run, or nullptr
  /// (also when it cannot be read back). Valid until the next recall.
  const Value *recall(uint32_t node, uint64_t key) const;
  size_t recallable() const { return kept_.size(); }
  /// Keeps a grain's value when its node keeps values and it is below kValueLimit encoded (any
  /// size below kRecordLimit for a `checkpoint: true` Call). A `cheap` one (its batch took less
  /// per grain than keeping costs) is not kept unless its Call says `checkpoint: true` or
  /// something after it keeps values: a resume computes it again, and what was kept from its
  /// old value would not match a new one (an operator that is not deterministic).
  /// Buffered until 1 MiB waits or flushIfDue finds it a tenth of a second old (a process
  /// killed loses at most that). It is encoded when written: the value of a row committed
  /// meanwhile is never encoded (see rowCommitted).
  void keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow, const Value &value,
            bool cheap = false);
  /// Writes what waits when the last write is a tenth of a second old: the run loop calls it
  /// with its clock once a round, so that keeping a grain's value reads no clock.
  void flushIfDue(std::chrono::steady_clock::time_point now);
  /// A row was committed: a resumed run skips it, so the values of its grains not written yet
  /// are not (the values of a failed row are: a --retry-failed run recalls them).
  void rowCommitted(uint32_t source, uint64_t sourceRow, bool failed);
  /// Keeps a Dedup node's decision; the decisions loaded, in the order they were made.
  void keepDecision(const DedupDecision &decision);
  /// Hands the decisions loaded over (once: the engine keeps what it needs of them).
  std::vector<DedupDecision> takeDecisions() { return std::move(decisions_); }
  /// Writes the buffered records if a decision is among them: before a row is committed, the
  /// decisions it was made with must be in the store (a resumed run that skips the row still
  /// indexes its survivors).
  void flushDecisions();
  /// The largest value kept of a Call without `checkpoint` (encoded).
  static constexpr size_t kValueLimit = 64 * 1024;
  /// The largest record of the store (a value of a `checkpoint: true` Call).
  static constexpr size_t kRecordLimit = size_t(1) << 31;
  /// A Dedup decision may be bigger (confirm: "exact" keeps a text's shingle hashes): one
  /// past this is not kept (a resumed run does not index that survivor, or decides its entity
  /// again if its row runs again).
  static constexpr size_t kDecisionLimit = 16 * 1024 * 1024;
  /// The encoding buffers keep their room between records up to this (a bigger record's goes).
  static constexpr size_t kKeptBufferBytes = 1024 * 1024;
  /// Writes what is buffered, the values waiting encoded first.
  void flush();
  /// Writes what is buffered and, when Dedup decisions are among what was written since the
  /// last sync, makes the store durable (kept values alone are work to skip: not synced).
  void sync();
  /// Empties the store: a run that finished with no failed row needs none of it (nothing will
  /// resume it, and --retry-failed has nothing to run).
  void discard();

private:
  struct GrainKey {
    uint32_t node;
    uint64_t key;
    friend bool operator==(const GrainKey &, const GrainKey &) = default;
  };
  struct GrainKeyHash {
    size_t operator()(const GrainKey &k) const { return k.key ^ (uint64_t(k.node) << 40); }
  };
  std::vector<bool> keepsNode_;
  /// Nodes of `checkpoint: true` Calls: their values are kept whatever their size.
  std::vector<bool> keepsAnySize_;
  std::vector<bool> dedupNode_;
  /// Nodes whose values something after them keeps (a Call's kept results, a Dedup decision):
  /// kept even when cheap.
  std::vector<bool> feedsKept_;
  std::vector<DedupDecision> decisions_;
  bool decisionsBuffered_ = false;
  /// Decisions written since the store was last synced (sync).
  bool decisionsUnsynced_ = false;
  /// A kept value: in memory when small (below kValueLimit), else where its record's payload
  /// is in the store, read when recalled.
  struct Location {
    uint64_t offset = 0;
    uint32_t length = 0;
    std::optional<Value> value;
  };
  /// A record loaded (a kept value's, or a decision's without a grain), where it was.
  struct LoadedRecord {
    uint64_t offset = 0;
    uint32_t length = 0;
    std::optional<GrainKey> grain;
  };
  std::unordered_map<GrainKey, Location, GrainKeyHash> kept_;
  std::vector<LoadedRecord> loaded_;
  std::string loadedFrom_;
  int readFd_ = -1;
  mutable Value recalled_;
  /// Appends one record (its head, then its payload) to buffer_, unless its encoding is
  /// `limit` bytes or more.
  void append(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow, const Value &value,
              size_t limit);
  /// Encodes the values waiting into buffer_, but those of rows committed meanwhile.
  void encodeWaiting();
  /// Writes buffer_ to the store in one write.
  void writeBuffered();
  std::string buffer_;
  /// Values kept and not encoded yet, by row (sourceRowKey): a row written or dropped
  /// lets go of its values at once (most rows are done long before the tenth of a second is
  /// up, so the values waiting are those of the rows in progress).
  struct WaitingValue {
    uint32_t node;
    uint64_t key;
    Value value;
  };
  struct WaitingRow {
    uint32_t source = 0;
    uint64_t sourceRow = 0;
    std::vector<WaitingValue> values;
    uint64_t bytes = 0; // approximately
  };
  std::unordered_map<uint64_t, WaitingRow> waiting_;
  /// The row a value was last kept for (a batch's grains are often one row's), or null.
  WaitingRow *lastRow_ = nullptr;
  uint64_t lastRowKey_ = 0;
  uint64_t waitingBytes_ = 0;
  /// Where one record is packed before it joins buffer_ (kept between records: a grain's
  /// value is packed without an allocation of its own).
  struct PackBuffer;
  std::unique_ptr<PackBuffer> packed_;
  std::chrono::steady_clock::time_point flushedAt_{};
  int fd_ = -1;
};

} // namespace orch::runtime
