// Values as native MessagePack, shared by the coordinator <-> worker protocol (Protocol.cpp)
// and the worker <-> operator process bridge (OperatorBridge.cpp): records are maps, bytes are
// bin, lists are arrays.
#pragma once

#include "orch/runtime/values/Value.h"

#include "orch/plan/MessagePackReader.h"

#include <msgpack.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace orch::runtime {

/// A packer that writes every double as a float64: msgpack-c's pack(double) and pack_double
/// write 2.0 as the integer 2, so a Float result would come back from another process as an
/// Int (and print as `2` where an in-process run prints `2.0`).
class Packer : public msgpack::packer<msgpack::sbuffer> {
public:
  explicit Packer(msgpack::sbuffer &buffer)
      : msgpack::packer<msgpack::sbuffer>(buffer), buffer_(buffer) {}
  using msgpack::packer<msgpack::sbuffer>::pack;
  Packer &pack(double value) {
    packFloat64(value);
    return *this;
  }
  void packFloat64(double value);

private:
  msgpack::sbuffer &buffer_;
};

/// How a list longer than one MessagePack array may be (kLongListElements) is written: as a
/// kLongListExtType in chunks (between Orch's own processes, whose readers bound each array),
/// or as one array (to an operator process, whose MessagePack library reads it).
enum class LongLists { InChunks, AsOneArray };

void packValue(Packer &out, const Value &value, LongLists longLists = LongLists::InChunks);

/// Unpacks the one MessagePack object that fills `bytes` (within `limits`; strings and binaries
/// referenced in place when `inPlace`) and gives it to `read`; what is wrong otherwise. The
/// boundary where every decoding error of a message becomes text.
template <typename Result, typename Read>
std::variant<Result, std::string> decodeWhole(std::string_view bytes,
                                              const msgpack::unpack_limit &limits, bool inPlace,
                                              Read &&read) {
  try {
    std::size_t offset = 0;
    const msgpack::unpack_reference_func reference = [](msgpack::type::object_type type, size_t,
                                                        void *) {
      return type == msgpack::type::STR || type == msgpack::type::BIN;
    };
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size(), offset,
                                                    inPlace ? reference : nullptr, nullptr, limits);
    if (offset != bytes.size())
      return std::string("unexpected bytes after the message");
    return read(handle.get());
  } catch (const plan::MessagePackError &error) {
    return std::string(error.what());
  } catch (const msgpack::insufficient_bytes &) {
    return std::string("the message is truncated");
  } catch (const std::exception &error) {
    return std::string("not a MessagePack message: ") + error.what();
  }
}
/// The value `object` holds; MessagePackError for an ext type or a map key that is not a string.
Value readValue(const msgpack::object &object);

/// The MessagePack ext type of a ValueRef (docs/protocol.md): its body is [owner, id, bytes].
inline constexpr int8_t kValueRefExtType = 1;

/// What a reader of values from another process accepts in one MessagePack object: the
/// protocol's limits (ProtocolLimits, MessageLimits.h, are these), and a long list's chunks'.
struct ValueReadLimits {
  static constexpr uint32_t kArrayElements = 1u << 20;
  static constexpr uint32_t kMapEntries = 1u << 16;
  static constexpr uint32_t kStringBytes = 64u << 20;
  static constexpr uint32_t kBinaryBytes = 256u << 20;
  /// Nesting of a whole message, which a value read from it never exceeds, long lists
  /// included (a value may nest 60 levels: MessageLimits.h checks values before they go).
  static constexpr uint32_t kDepth = 64;
};

/// The MessagePack ext type of a list of more than kLongListElements elements (docs/protocol.md,
/// "Bodies" and "Limits"): its body is the elements as consecutive arrays of kLongListChunk
/// elements (the last one shorter). Shorter lists are arrays, so every message that could be sent
/// before is written as it was.
inline constexpr int8_t kLongListExtType = 2;
inline constexpr uint32_t kLongListElements = ValueReadLimits::kArrayElements;
inline constexpr uint32_t kLongListChunk = 1u << 16;
/// An item's whole value in a batch or result: like readValue, but a ValueRef may stand for it.
Value readItemValue(const msgpack::object &object);

} // namespace orch::runtime
