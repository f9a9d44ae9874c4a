// The store of finished grains' values (GrainCheckpoints.h).
#include "GrainCheckpoints.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <cerrno>
#include <fcntl.h>
#include <tuple>
#include <unistd.h>

namespace orch::runtime {
namespace {

uint32_t checksum(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 16777619u;
  return hash;
}

void appendU32(std::string &out, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out += char((value >> (8 * i)) & 0xff);
}

uint32_t readU32(std::string_view in, size_t at) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= uint32_t(uint8_t(in[at + i])) << (8 * i);
  return value;
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

} // namespace

GrainCheckpoints::GrainCheckpoints(const plan::Plan &plan) {
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
}

GrainCheckpoints::~GrainCheckpoints() {
  flush();
  if (fd_ >= 0)
    ::close(fd_);
}

void GrainCheckpoints::load(const std::string &bytes,
                            const std::function<bool(uint32_t, uint64_t)> &wanted,
                            const std::function<bool(uint32_t, uint64_t)> &failed) {
  const std::string_view store(bytes);
  for (size_t at = 0; at + 8 <= store.size();) {
    const uint32_t length = readU32(store, at);
    const std::string_view payload = store.substr(at + 8);
    if (length > payload.size() || checksum(payload.substr(0, length)) != readU32(store, at + 4))
      break;
    // No part of a record is longer than the record (a value of a `checkpoint: true` Call may
    // be as long as kRecordLimit).
    const msgpack::unpack_limit limits(length, length, length, length, length, 512);
    using Record = std::tuple<uint32_t, uint64_t, uint32_t, uint64_t, Value>;
    auto record = decodeWhole<Record>(
        payload.substr(0, length), limits, false, [](const msgpack::object &object) {
          if (object.type != msgpack::type::ARRAY || object.via.array.size != 5)
            throw plan::MessagePackError("not a kept value");
          const msgpack::object *items = object.via.array.ptr;
          return Record(items[0].as<uint32_t>(), items[1].as<uint64_t>(), items[2].as<uint32_t>(),
                        items[3].as<uint64_t>(), readValue(items[4]));
        });
    auto *kept = std::get_if<0>(&record);
    if (!kept)
      break;
    if (const uint32_t node = std::get<0>(*kept); node < dedupNode_.size() && dedupNode_[node]) {
      if (failed(std::get<2>(*kept), std::get<3>(*kept))) {
        at += 8 + length;
        continue;
      }
      // Every decision, of rows done or not: a resumed run decides as the earlier one did.
      decisions_.push_back(
          decisionOf(node, std::get<1>(*kept), std::get<3>(*kept), std::get<4>(*kept)));
      decisions_.back().source = std::get<2>(*kept);
      decisions_.back().rowDone = !wanted(std::get<2>(*kept), std::get<3>(*kept));
      loadedRecords_.append(store.substr(at, 8 + length));
    } else if (wanted(std::get<2>(*kept), std::get<3>(*kept))) {
      kept_[GrainKey{std::get<0>(*kept), std::get<1>(*kept)}] = std::move(std::get<4>(*kept));
      loadedRecords_.append(store.substr(at, 8 + length));
    }
    at += 8 + length;
  }
}

void GrainCheckpoints::attach(int fd) {
  fd_ = fd;
  loadedRecords_.clear();
  loadedRecords_.shrink_to_fit();
}

const Value *GrainCheckpoints::recall(uint32_t node, uint64_t key) const {
  auto found = kept_.find(GrainKey{node, key});
  return found == kept_.end() ? nullptr : &found->second;
}

void GrainCheckpoints::keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                            const Value &value) {
  if (node >= keepsNode_.size() || !(keepsNode_[node] || dedupNode_[node]) || fd_ < 0 ||
      value.kind() == Value::Kind::Ref)
    return;
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_array(5);
  out.pack(node);
  out.pack(key);
  out.pack(source);
  out.pack(sourceRow);
  packValue(out, value);
  const size_t limit = dedupNode_[node]      ? kDecisionLimit
                       : keepsAnySize_[node] ? kRecordLimit
                                             : kValueLimit;
  if (buffer.size() >= limit)
    return;
  const std::string_view payload(buffer.data(), buffer.size());
  appendU32(buffer_, uint32_t(payload.size()));
  appendU32(buffer_, checksum(payload));
  buffer_.append(payload);
  const auto now = std::chrono::steady_clock::now();
  if (buffer_.size() >= (1u << 20) || now - flushedAt_ >= std::chrono::milliseconds(100)) {
    flush();
    flushedAt_ = now;
  }
}

void GrainCheckpoints::keepDecision(const DedupDecision &decision) {
  keep(decision.node, decision.key, decision.source, decision.sourceRow, decisionValue(decision));
  decisionsBuffered_ = !buffer_.empty();
}

void GrainCheckpoints::flushDecisions() {
  if (decisionsBuffered_)
    flush();
}

void GrainCheckpoints::flush() {
  if (buffer_.empty() || fd_ < 0)
    return;
  // One write: a crash leaves whole records and at most one cut short (ignored when loaded).
  writeAll(fd_, buffer_);
  buffer_.clear();
  decisionsBuffered_ = false;
}

void GrainCheckpoints::discard() {
  buffer_.clear();
  decisionsBuffered_ = false;
  if (fd_ >= 0 && ::ftruncate(fd_, 0) == 0)
    ::fdatasync(fd_);
}

void GrainCheckpoints::sync() {
  flush();
  if (fd_ >= 0)
    ::fdatasync(fd_);
}

} // namespace orch::runtime
