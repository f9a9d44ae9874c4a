// Checks of values, batches and results against the limits of one message between processes.
#include "orch/runtime/operators/MessageLimits.h"

#include "orch/runtime/values/ValueCodec.h"

namespace orch::runtime {

// Values are read within the protocol's limits, long lists' chunks too (the header cannot
// include ValueCodec.h: MessagePack's headers declare the sockets' names).
static_assert(ValueReadLimits::kArrayElements == ProtocolLimits::kArrayElements);
static_assert(ValueReadLimits::kMapEntries == ProtocolLimits::kMapEntries);
static_assert(ValueReadLimits::kStringBytes == ProtocolLimits::kStringBytes);
static_assert(ValueReadLimits::kBinaryBytes == ProtocolLimits::kBinaryBytes);
static_assert(ValueReadLimits::kDepth == ProtocolLimits::kDepth);

namespace {

/// A string's or binary's size against the limits (other scalars have none).
std::optional<std::string> leafExceedsProtocolLimits(const Value &value) {
  using L = ProtocolLimits;
  if (value.kind() == Value::Kind::String && value.asString().size() > L::kStringBytes)
    return "a string of " + std::to_string(value.asString().size()) + " bytes (at most " +
           std::to_string(L::kStringBytes) + ")";
  if (value.kind() == Value::Kind::Bytes && value.asBytes().size() > L::kBinaryBytes)
    return "a byte string of " + std::to_string(value.asBytes().size()) + " bytes (at most " +
           std::to_string(L::kBinaryBytes) + ")";
  return std::nullopt;
}

bool isContainer(const Value &value) {
  return value.kind() == Value::Kind::List || value.kind() == Value::Kind::Record;
}

} // namespace

std::optional<std::string> exceedsProtocolLimits(const Value &root) {
  using L = ProtocolLimits;
  // Called on every value of every batch and result: a scalar costs a comparison or two.
  if (!isContainer(root))
    return leafExceedsProtocolLimits(root);
  // Only containers wait in the work list (a list of a million numbers needs no copy of it);
  // scalars are checked where they are met.
  auto visit =
      [&](const Value &value, uint32_t depth,
          std::vector<std::pair<const Value *, uint32_t>> &pending) -> std::optional<std::string> {
    if (depth > L::kValueDepth)
      return "a value nested deeper than " + std::to_string(L::kValueDepth) + " levels";
    if (isContainer(value)) {
      pending.emplace_back(&value, depth);
      return std::nullopt;
    }
    if (value.kind() != Value::Kind::String && value.kind() != Value::Kind::Bytes)
      return std::nullopt; // other scalars have no limit
    return leafExceedsProtocolLimits(value);
  };
  // The work list is this thread's, kept between calls (a big one is let go).
  thread_local std::vector<std::pair<const Value *, uint32_t>> pending;
  pending.clear();
  struct LetGoOfABigList {
    std::vector<std::pair<const Value *, uint32_t>> &list;
    ~LetGoOfABigList() {
      if (list.capacity() > 4096)
        std::vector<std::pair<const Value *, uint32_t>>().swap(list);
    }
  } letGo{pending};
  if (auto problem = visit(root, 1, pending))
    return problem;
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (value->kind() == Value::Kind::List) {
      // A list of any length travels: one longer than an array may be goes in chunks
      // (ValueCodec.h, kLongListExtType); the message's bytes bound it.
      for (const Value &element : value->asList())
        if (auto problem = visit(element, depth + 1, pending))
          return problem;
    } else {
      if (value->asRecord().size() > L::kMapEntries)
        return "a record of " + std::to_string(value->asRecord().size()) + " fields (at most " +
               std::to_string(L::kMapEntries) + ")";
      for (const auto &[name, field] : value->asRecord())
        if (auto problem = visit(field, depth + 1, pending))
          return problem;
    }
  }
  return std::nullopt;
}

namespace {

std::string tooLarge(const std::string &what, const std::string &problem) {
  return what + " is too large for a message between processes: " + problem +
         " (see the limits in docs/protocol.md)";
}

/// Room in a message for everything but the values (keys, ids, labels).
constexpr uint64_t kMessageOverhead = 1u << 20;

std::string tooLargeMessage(const std::string &what, uint64_t count, uint64_t bytes) {
  return what + " of " + std::to_string(count) +
         " values is too large for one message between "
         "processes: about " +
         std::to_string(bytes >> 20) + " MiB (at most " +
         std::to_string((ProtocolLimits::kMessageBytes - kMessageOverhead) >> 20) +
         " MiB; see the limits in docs/protocol.md)";
}

} // namespace

uint64_t messageBytes(const Value &value) {
  return value.kind() == Value::Kind::Ref ? 32 + value.asRef().owner.size()
                                          : approximateBytes(value);
}

std::optional<std::string> batchExceedsProtocolLimits(const Batch &batch) {
  uint64_t bytes = 0;
  for (const Value &input : batch.inputs) {
    if (std::optional<std::string> problem = exceedsProtocolLimits(input))
      return tooLarge("an input", *problem);
    bytes += messageBytes(input);
  }
  if (bytes > ProtocolLimits::kMessageBytes - kMessageOverhead)
    return tooLargeMessage("a batch", batch.inputs.size(), bytes);
  return std::nullopt;
}

std::optional<std::string> reportExceedsProtocolLimits(const BatchReport &report) {
  uint64_t bytes = 0;
  for (const GrainReport &grain : report.grains) {
    if (std::optional<std::string> problem = exceedsProtocolLimits(grain.value))
      return tooLarge("a result", *problem);
    bytes += messageBytes(grain.value);
  }
  if (bytes > ProtocolLimits::kMessageBytes - kMessageOverhead)
    return tooLargeMessage("a result", report.grains.size(), bytes);
  return std::nullopt;
}

} // namespace orch::runtime
