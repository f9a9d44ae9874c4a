// Run-time values: what items hold and operators consume and produce. A Value is a small,
// immutable handle; strings, lists and records share their payload, so copying a value into a
// batch or a broadcast costs a reference count, not a deep copy. Domain objects (File, PdfPage,
// Image, ...) are records whose projectable fields are named as in plan/Type.h.
#pragma once

#include "orch/plan/Type.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace orch::runtime {

class Value;

/// Raw bytes, distinct from text so that sinks never mistake pixels for a string.
struct ByteString {
  std::string data;
  friend bool operator==(const ByteString &, const ByteString &) = default;
};

/// A value kept by the worker process that produced it (docs/runtime.md, "Value locality"):
/// the coordinator holds this and the size, and the worker that consumes it fetches it from
/// `owner`. Only ever a whole item's value, never inside a list or record.
struct ValueRef {
  /// The worker's name (its routing identity).
  std::string owner;
  /// Its number in the owner's store.
  uint64_t id = 0;
  /// approximateBytes of the value it stands for.
  uint64_t bytes = 0;
  friend bool operator==(const ValueRef &a, const ValueRef &b) {
    return a.owner == b.owner && a.id == b.id;
  }
};

using ValueList = std::vector<Value>;
using RecordFields = std::vector<std::pair<std::string, Value>>;

class Value {
public:
  enum class Kind : uint8_t { Null, Bool, Int, Float, String, Bytes, List, Record, Ref };

  Value() = default;
  static Value boolean(bool value) { return Value(Storage(value)); }
  static Value integer(int64_t value) { return Value(Storage(value)); }
  static Value real(double value) { return Value(Storage(value)); }
  static Value string(std::string text);
  static Value bytes(std::string data);
  static Value list(ValueList elements);
  static Value record(RecordFields fields);
  /// A reference; `reference` may carry a deleter that tells the owner when the last copy
  /// goes (the coordinator's, Coordinator.cpp).
  static Value ref(std::shared_ptr<const ValueRef> reference);

  Kind kind() const { return static_cast<Kind>(storage_.index()); }
  bool isNull() const { return kind() == Kind::Null; }

  // Accessors require the matching kind (asFloat also accepts an Int).
  bool asBool() const { return std::get<bool>(storage_); }
  int64_t asInt() const { return std::get<int64_t>(storage_); }
  double asFloat() const;
  const std::string &asString() const { return *std::get<StringPtr>(storage_); }
  const std::string &asBytes() const { return std::get<BytesPtr>(storage_)->data; }
  const ValueList &asList() const { return *std::get<ListPtr>(storage_); }
  const RecordFields &asRecord() const { return *std::get<RecordPtr>(storage_); }
  const ValueRef &asRef() const { return *std::get<RefPtr>(storage_); }

  /// A record's field, or nullptr when this is not a record or has no such field.
  const Value *field(std::string_view name) const;

  /// Compact, JSON-like text for messages and tests: `{"a": 1, "b": [2, 3]}`.
  std::string str() const;

  friend bool operator==(const Value &a, const Value &b);
  /// The same string, bytes, list, record or reference (not an equal one): a copy of `other`.
  bool sharesPayloadWith(const Value &other) const;

private:
  using StringPtr = std::shared_ptr<const std::string>;
  using BytesPtr = std::shared_ptr<const ByteString>;
  using ListPtr = std::shared_ptr<const ValueList>;
  using RecordPtr = std::shared_ptr<const RecordFields>;
  using RefPtr = std::shared_ptr<const ValueRef>;
  using Storage = std::variant<std::monostate, bool, int64_t, double, StringPtr, BytesPtr, ListPtr,
                               RecordPtr, RefPtr>;

  explicit Value(Storage storage) : storage_(std::move(storage)) {}

  Storage storage_;
};

const char *valueKindName(Value::Kind kind);

/// About how many bytes `value` takes: its strings' and binaries' bytes, its field names, and a
/// few bytes per element; for a reference, the bytes of the value it stands for (held by a
/// worker for this run). Never less than its MessagePack encoding (floats as float64).
uint64_t approximateBytes(const Value &value);

/// Checks that `value` has the shape `type` promises (an Int where Float is expected is fine;
/// Json and the type variable accept anything; domain objects must be records). Returns the
/// first mismatch as "expected List<Int>, got 3 at [2]", or nullopt.
std::optional<std::string> checkValueType(const Value &value, const plan::Type &type);

} // namespace orch::runtime
