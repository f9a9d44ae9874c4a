// The store of finished grains' values (GrainCheckpoints.h).
#include "GrainCheckpoints.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

uint32_t checksum(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 16777619u;
  return hash;
}

/// A record's head: its length and checksum, little-endian.
void appendHead(std::string &out, uint32_t length, uint32_t sum) {
  char head[8];
  for (int i = 0; i < 4; ++i) {
    head[i] = char((length >> (8 * i)) & 0xff);
    head[4 + i] = char((sum >> (8 * i)) & 0xff);
  }
  out.append(head, sizeof head);
}

uint32_t readU32(std::string_view in, size_t at) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= uint32_t(uint8_t(in[at + i])) << (8 * i);
  return value;
}

/// `bytes.size()` bytes of `fd` from `offset`.
bool readAt(int fd, uint64_t offset, std::string &bytes) {
  for (size_t got = 0; got < bytes.size();) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, off_t(offset + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    got += size_t(n);
  }
  return true;
}

/// A record's grain (its invoke node, its entity's key), its root (source, row) and, when asked
/// for, its value; nullopt for what is not a record.
struct RecordHead {
  uint32_t node = 0;
  uint64_t key = 0;
  uint32_t source = 0;
  uint64_t row = 0;
  Value value;
};

std::optional<RecordHead> readRecord(std::string_view payload, bool withValue) {
  // No part of a record is longer than the record (a value of a `checkpoint: true` Call may be
  // as long as kRecordLimit).
  const size_t length = payload.size();
  const msgpack::unpack_limit limits(length, length, length, length, length, 512);
  auto record =
      decodeWhole<RecordHead>(payload, limits, false, [withValue](const msgpack::object &object) {
        if (object.type != msgpack::type::ARRAY || object.via.array.size != 5)
          throw plan::MessagePackError("not a kept value");
        const msgpack::object *items = object.via.array.ptr;
        return RecordHead{items[0].as<uint32_t>(), items[1].as<uint64_t>(), items[2].as<uint32_t>(),
                          items[3].as<uint64_t>(), withValue ? readValue(items[4]) : Value()};
      });
  if (auto *head = std::get_if<0>(&record))
    return std::move(*head);
  return std::nullopt;
}

Value pathValue(const std::vector<uint32_t> &path) {
  ValueList ordinals;
  for (uint32_t ordinal : path)
    ordinals.push_back(Value::integer(ordinal));
  return Value::list(std::move(ordinals));
}

std::vector<uint32_t> pathOf(const Value *value) {
  std::vector<uint32_t> path;
  if (value && value->kind() == Value::Kind::List)
    for (const Value &ordinal : value->asList())
      if (ordinal.kind() == Value::Kind::Int)
        path.push_back(uint32_t(ordinal.asInt()));
  return path;
}

/// A decision as the value of its record.
Value decisionValue(const DedupDecision &decision) {
  return Value::record({{"survivor", Value::boolean(decision.survivor)},
                        {"path", pathValue(decision.path)},
                        {"fingerprint", Value::bytes(decision.fingerprint)},
                        {"survivor_row", Value::integer(int64_t(decision.survivorRow))},
                        {"survivor_path", pathValue(decision.survivorPath)},
                        {"similarity", Value::real(decision.similarity)}});
}

DedupDecision decisionOf(uint32_t node, uint64_t key, uint64_t sourceRow, const Value &value) {
  DedupDecision decision;
  decision.node = node;
  decision.key = key;
  decision.sourceRow = sourceRow;
  auto field = [&](const char *name) { return value.field(name); };
  const Value *survivor = field("survivor");
  decision.survivor = survivor && survivor->kind() == Value::Kind::Bool && survivor->asBool();
  decision.path = pathOf(field("path"));
  if (const Value *fingerprint = field("fingerprint");
      fingerprint && fingerprint->kind() == Value::Kind::Bytes)
    decision.fingerprint = fingerprint->asBytes();
  if (const Value *row = field("survivor_row"); row && row->kind() == Value::Kind::Int)
    decision.survivorRow = uint64_t(row->asInt());
  decision.survivorPath = pathOf(field("survivor_path"));
  if (const Value *similarity = field("similarity");
      similarity && similarity->kind() == Value::Kind::Float)
    decision.similarity = similarity->asFloat();
  return decision;
}

/// A value whose encoding is at least `limit` bytes, known without encoding it from its
/// `approximate` bytes (approximateBytes): a string or bytes that long, or a list or record
/// counted at 64 times that (approximateBytes counts at most 16 bytes for each byte of an
/// encoding: 16 for a number of one).
bool surelyOver(const Value &value, uint64_t approximate, size_t limit) {
  switch (value.kind()) {
  case Value::Kind::String:
    return value.asString().size() >= limit;
  case Value::Kind::Bytes:
    return value.asBytes().size() >= limit;
  case Value::Kind::List:
  case Value::Kind::Record:
    return approximate >= 64 * uint64_t(limit);
  default:
    return false;
  }
}

} // namespace

struct GrainCheckpoints::PackBuffer {
  msgpack::sbuffer bytes;
};

GrainCheckpoints::GrainCheckpoints(const plan::Plan &plan)
    : packed_(std::make_unique<PackBuffer>()) {
  // A kept value of a Call that reads what a `checkpoint: false` Call made would mix that
  // Call's results from before and after a stop.
  std::vector<bool> fresh(plan.nodes.size(), false);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const plan::PlanNode &node = plan.nodes[n];
    const bool invoke = node.kind == plan::NodeKind::Invoke && node.index < plan.calls.size();
    const plan::CheckpointPolicy policy =
        invoke ? plan.calls[node.index].options.checkpoint : plan::CheckpointPolicy::Never;
    fresh[n] = invoke && policy == plan::CheckpointPolicy::Never;
    for (uint32_t input : node.inputs)
      fresh[n] = fresh[n] || (input < n && fresh[input]);
    keepsNode_.push_back(invoke && !fresh[n]);
    keepsAnySize_.push_back(invoke && policy == plan::CheckpointPolicy::Always);
    dedupNode_.push_back(node.kind == plan::NodeKind::Dedup);
  }
  // Inputs come before the nodes that read them: one pass from the end.
  feedsKept_.assign(plan.nodes.size(), false);
  for (size_t n = plan.nodes.size(); n-- > 0;)
    for (uint32_t input : plan.nodes[n].inputs)
      if (input < n)
        feedsKept_[input] = feedsKept_[input] || keepsNode_[n] || dedupNode_[n] || feedsKept_[n];
}

GrainCheckpoints::~GrainCheckpoints() {
  flush();
  if (fd_ >= 0)
    ::close(fd_);
  if (readFd_ >= 0)
    ::close(readFd_);
}

void GrainCheckpoints::load(const std::string &path,
                            const std::function<bool(uint32_t, uint64_t)> &wanted,
                            const std::function<bool(uint32_t, uint64_t)> &failed) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return;
  struct stat info {};
  const uint64_t size = ::fstat(fd, &info) == 0 ? uint64_t(info.st_size) : 0;
  loadedFrom_ = path;
  // One record at a time: a store of rendered pages (`checkpoint: true`) is not read whole.
  std::string header(8, '\0'), payload;
  for (uint64_t at = 0; at + 8 <= size;) {
    if (!readAt(fd, at, header))
      break;
    const uint32_t length = readU32(header, 0);
    if (length > size - at - 8)
      break;
    payload.resize(length);
    if (!readAt(fd, at + 8, payload) || checksum(payload) != readU32(header, 4))
      break;
    std::optional<RecordHead> head = readRecord(payload, /*withValue=*/false);
    if (!head)
      break;
    const bool dedup = head->node < dedupNode_.size() && dedupNode_[head->node];
    if (dedup && !failed(head->source, head->row)) {
      // Every decision, of rows done or not: a resumed run decides as the earlier one did.
      std::optional<RecordHead> decided = readRecord(payload, /*withValue=*/true);
      if (!decided)
        break;
      decisions_.push_back(decisionOf(head->node, head->key, head->row, decided->value));
      decisions_.back().source = head->source;
      decisions_.back().rowDone = !wanted(head->source, head->row);
      loaded_.push_back(LoadedRecord{at, length, std::nullopt});
    } else if (!dedup && wanted(head->source, head->row)) {
      const GrainKey grain{head->node, head->key};
      Location &place = kept_[grain] = Location{at + 8, length, std::nullopt};
      if (length <= kValueLimit)
        if (std::optional<RecordHead> small = readRecord(payload, /*withValue=*/true))
          place.value = std::move(small->value);
      loaded_.push_back(LoadedRecord{at, length, grain});
    }
    at += 8 + length;
  }
  ::close(fd);
}

bool GrainCheckpoints::replaceStore(const std::string &path) {
  if (loaded_.empty()) {
    // Nothing to carry over (a fresh run, or a resume that needs no kept value): the store
    // is emptied in place, without a copy to sync and rename.
    const int out =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0)
      return false;
    ::close(out);
    readFd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    return readFd_ >= 0;
  }
  const std::string temporary = path + ".new";
  ::unlink(temporary.c_str());
  const int out =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out < 0)
    return false;
  const int in = loaded_.empty() ? -1 : ::open(loadedFrom_.c_str(), O_RDONLY | O_CLOEXEC);
  bool ok = loaded_.empty() || in >= 0;
  // The records loaded, copied in their order; each kept value's place moves with it.
  uint64_t written = 0;
  std::string chunk;
  for (const LoadedRecord &record : loaded_) {
    if (!ok)
      break;
    for (uint64_t done = 0, total = 8 + uint64_t(record.length); ok && done < total;) {
      chunk.resize(size_t(std::min<uint64_t>(total - done, uint64_t(1) << 20)));
      ok = readAt(in, record.offset + done, chunk) && writeAll(out, chunk);
      done += chunk.size();
    }
    if (record.grain)
      kept_[*record.grain].offset = written + 8;
    written += 8 + uint64_t(record.length);
  }
  if (in >= 0)
    ::close(in);
  ok = ok && ::fdatasync(out) == 0;
  ::close(out);
  ok = ok && ::rename(temporary.c_str(), path.c_str()) == 0;
  loaded_.clear();
  loaded_.shrink_to_fit();
  if (ok)
    readFd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  return ok && readFd_ >= 0;
}

void GrainCheckpoints::attach(int fd) {
  fd_ = fd;
  flushedAt_ = std::chrono::steady_clock::now();
}

const Value *GrainCheckpoints::recall(uint32_t node, uint64_t key) const {
  auto found = kept_.find(GrainKey{node, key});
  if (found == kept_.end())
    return nullptr;
  if (found->second.value)
    return &*found->second.value;
  if (readFd_ < 0)
    return nullptr;
  // Read when recalled: the store may hold far more than memory (rendered pages).
  std::string payload(found->second.length, '\0');
  if (!readAt(readFd_, found->second.offset, payload))
    return nullptr;
  std::optional<RecordHead> record = readRecord(payload, /*withValue=*/true);
  if (!record || record->node != node || record->key != key)
    return nullptr;
  recalled_ = std::move(record->value);
  return &recalled_;
}

void GrainCheckpoints::keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                            const Value &value, bool cheap) {
  if (node >= keepsNode_.size() || !(keepsNode_[node] || dedupNode_[node]) || fd_ < 0 ||
      value.kind() == Value::Kind::Ref)
    return;
  if (cheap && keepsNode_[node] && !keepsAnySize_[node] && !feedsKept_[node])
    return;
  if (dedupNode_[node]) {
    // Decisions are written in the order they were made (a resumed run decides alike).
    append(node, key, source, sourceRow, value, kDecisionLimit);
  } else {
    // A number costs no call (approximateBytes counts 16 for it, as for its lists' numbers).
    const uint64_t bytes = value.kind() <= Value::Kind::Float ? 16 : approximateBytes(value);
    if (!keepsAnySize_[node] && surelyOver(value, bytes, kValueLimit))
      return; // a rendered page: not encoded only to be found too big
    // Most rows are committed within the tenth of a second a value waits: theirs are never
    // encoded (a grain's value costs a reference until then, not an encoding).
    const uint64_t row = sourceRowKey(source, sourceRow);
    if (!lastRow_ || lastRowKey_ != row) {
      lastRow_ = &waiting_[row];
      lastRowKey_ = row;
      if (lastRow_->values.empty()) {
        lastRow_->source = source;
        lastRow_->sourceRow = sourceRow;
        lastRow_->values.reserve(16); // a document's pages, without growing one at a time
      }
    }
    lastRow_->values.push_back(WaitingValue{node, key, value});
    lastRow_->bytes += bytes;
    waitingBytes_ += bytes;
  }
  if (buffer_.size() + waitingBytes_ >= (1u << 20))
    flush();
}

void GrainCheckpoints::flushIfDue(std::chrono::steady_clock::time_point now) {
  if (now - flushedAt_ < std::chrono::milliseconds(100))
    return;
  flush();
  flushedAt_ = now;
}

void GrainCheckpoints::append(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                              const Value &value, size_t limit) {
  msgpack::sbuffer &buffer = packed_->bytes;
  buffer.clear();
  Packer out(buffer);
  out.pack_array(5);
  out.pack(node);
  out.pack(key);
  out.pack(source);
  out.pack(sourceRow);
  packValue(out, value);
  if (buffer.size() < limit) {
    const std::string_view payload(buffer.data(), buffer.size());
    appendHead(buffer_, uint32_t(payload.size()), checksum(payload));
    buffer_.append(payload);
  }
  // The buffer is kept for the next value, but not the room a big one took.
  if (buffer.size() > kKeptBufferBytes)
    packed_ = std::make_unique<PackBuffer>();
}

void GrainCheckpoints::rowCommitted(uint32_t source, uint64_t sourceRow, bool failed) {
  if (failed)
    return;
  const auto found = waiting_.find(sourceRowKey(source, sourceRow));
  if (found == waiting_.end())
    return;
  waitingBytes_ -= found->second.bytes;
  if (lastRow_ == &found->second)
    lastRow_ = nullptr;
  waiting_.erase(found);
}

void GrainCheckpoints::encodeWaiting() {
  for (const auto &[key, row] : waiting_)
    for (const WaitingValue &kept : row.values)
      append(kept.node, kept.key, row.source, row.sourceRow, kept.value,
             keepsAnySize_[kept.node] ? kRecordLimit : kValueLimit);
  waiting_.clear();
  lastRow_ = nullptr;
  waitingBytes_ = 0;
}

void GrainCheckpoints::keepDecision(const DedupDecision &decision) {
  keep(decision.node, decision.key, decision.source, decision.sourceRow, decisionValue(decision));
  decisionsBuffered_ = !buffer_.empty();
}

void GrainCheckpoints::flushDecisions() {
  if (decisionsBuffered_)
    writeBuffered();
}

void GrainCheckpoints::flush() {
  encodeWaiting();
  writeBuffered();
}

void GrainCheckpoints::writeBuffered() {
  if (buffer_.empty() || fd_ < 0)
    return;
  // One write: a crash leaves whole records and at most one cut short (ignored when loaded).
  writeAll(fd_, buffer_);
  buffer_.clear();
  if (buffer_.capacity() > 4 * kKeptBufferBytes)
    std::string().swap(buffer_); // what a `checkpoint: true` image took
  decisionsUnsynced_ = decisionsUnsynced_ || decisionsBuffered_;
  decisionsBuffered_ = false;
}

void GrainCheckpoints::discard() {
  waiting_.clear();
  lastRow_ = nullptr;
  waitingBytes_ = 0;
  buffer_.clear();
  decisionsBuffered_ = decisionsUnsynced_ = false;
  // Not synced: a finished run's store serves no one, emptied on disk now or not.
  if (fd_ >= 0)
    (void)::ftruncate(fd_, 0);
}

void GrainCheckpoints::sync() {
  flush();
  // Kept values are work to skip: one lost to a power cut is computed again. Dedup decisions
  // are not: a committed row's survivors must be indexed by a resumed run, so they are on
  // disk before the commits that follow them are.
  if (fd_ >= 0 && decisionsUnsynced_)
    ::fdatasync(fd_);
  decisionsUnsynced_ = false;
}

} // namespace orch::runtime
