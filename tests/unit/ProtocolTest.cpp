// Messages between coordinator and workers, encoded and decoded without sockets.
#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/operators/MessageLimits.h"
#include "orch/runtime/values/ValueCodec.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <functional>
#include <memory>
#include <set>

namespace orch::runtime {
namespace {

TEST(ProtocolTest, HelloCarriesWhatAWorkerOffers) {
  HelloMessage hello;
  hello.worker = "w1";
  hello.host = "node-7";
  hello.cpus = 16;
  hello.gpus = {0, 1};
  hello.operators = {"clip-embedder"};
  hello.memoryBytes = uint64_t(96) << 30;
  auto decoded = decodeMessage(encodeMessage(hello));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const auto *back = std::get_if<HelloMessage>(&std::get<Message>(decoded));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cpus, 16);
  EXPECT_EQ(back->gpus, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(back->memoryBytes, uint64_t(96) << 30);
}

/// A hello of protocol `version` with only the fields version 1 had.
std::string versionOneHello(uint32_t version) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(8);
  out.pack("type"), out.pack("hello");
  out.pack("version"), out.pack(version);
  out.pack("worker"), out.pack("old");
  out.pack("pid"), out.pack(7);
  out.pack("host"), out.pack("h");
  out.pack("cpus"), out.pack(2.0);
  out.pack("gpus"), out.pack(std::vector<int64_t>{});
  out.pack("operators"), out.pack(std::vector<std::string>{});
  return std::string(buffer.data(), buffer.size());
}

TEST(ProtocolTest, AnEarlierWorkersHelloDecodesSoThatItCanBeRefusedByVersion) {
  // Version 1 had no `memory`, `peer_endpoint` or `peer_key`: its hello decodes (any `memory`
  // hint fits it), so that the coordinator can refuse it naming both versions.
  auto decoded = decodeMessage(versionOneHello(1));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const auto *back = std::get_if<HelloMessage>(&std::get<Message>(decoded));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->version, 1u);
  EXPECT_EQ(back->memoryBytes, 0u);
  EXPECT_EQ(back->worker, "old");
}

TEST(ProtocolTest, AFieldIsRequiredOfEverySenderWhoseVersionHasIt) {
  // The same hello from a sender that says it speaks this version lacks what that version
  // has: it is malformed, and the message says which field and since when.
  auto decoded = decodeMessage(versionOneHello(kProtocolVersion));
  ASSERT_TRUE(std::holds_alternative<std::string>(decoded));
  EXPECT_NE(std::get<std::string>(decoded).find(
                "missing 'memory' in the message (protocol version 2 and later have it; this is "
                "protocol version " +
                std::to_string(kProtocolVersion) + ")"),
            std::string::npos)
      << std::get<std::string>(decoded);
  // Messages without a version of their own are read as the one the handshake agreed on.
  InitMessage init{3, 1, {"pages"}, 65536, 0};
  std::string bytes = encodeMessage(init);
  const std::string key = "call_replica";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] = 'X'; // "call_Xeplica": call_replica is missing, an unknown field is there
  decoded = decodeMessage(bytes);
  ASSERT_TRUE(std::holds_alternative<std::string>(decoded));
  EXPECT_NE(std::get<std::string>(decoded).find("missing 'call_replica'"), std::string::npos)
      << std::get<std::string>(decoded);
  EXPECT_NE(std::get<std::string>(decoded).find("protocol version 4 and later"), std::string::npos)
      << std::get<std::string>(decoded);
}

template <typename T> T roundTrip(const Message &message) {
  auto decoded = decodeMessage(encodeMessage(message));
  EXPECT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const T *back = std::get_if<T>(&std::get<Message>(decoded));
  EXPECT_TRUE(back);
  return back ? *back : T{};
}

TEST(ProtocolTest, BatchesAndResultsCarryReferencesToKeptValues) {
  const Value kept = Value::ref(std::make_shared<const ValueRef>(ValueRef{"w2", 99, 25000000}));
  BatchMessage batch;
  batch.batch.id = 4;
  batch.batch.call = 0;
  batch.batch.grains.resize(2);
  batch.batch.inputsPerGrain = 1;
  batch.batch.inputs = {kept, Value::string("inline")};
  batch.peers = {{"w2", "tcp://node-2:7801", "KEY"}};
  const BatchMessage back = roundTrip<BatchMessage>(batch);
  ASSERT_EQ(back.batch.inputs.size(), 2u);
  ASSERT_EQ(back.batch.inputs[0].kind(), Value::Kind::Ref);
  EXPECT_EQ(back.batch.inputs[0].asRef().owner, "w2");
  EXPECT_EQ(back.batch.inputs[0].asRef().id, 99u);
  EXPECT_EQ(back.batch.inputs[0].asRef().bytes, 25000000u);
  EXPECT_EQ(back.batch.inputs[1], Value::string("inline"));
  EXPECT_EQ(back.peers, batch.peers);
  // A reference counts as its size for the byte budget, as a few bytes in a message.
  EXPECT_EQ(approximateBytes(kept), 25000000u);
  EXPECT_LT(messageBytes(kept), 64u);
  EXPECT_EQ(batchExceedsProtocolLimits(batch.batch), std::nullopt);

  ResultMessage result;
  result.report.batchId = 4;
  result.report.grains.push_back({{NodeId(3), EntityId(1)}, 0, RowResultKind::Value, kept, ""});
  EXPECT_EQ(roundTrip<ResultMessage>(result).report.grains.at(0).value.asRef(), kept.asRef());

  EXPECT_EQ(roundTrip<DropMessage>(DropMessage{{1, 2, 99}}).ids, (std::vector<uint64_t>{1, 2, 99}));
  EXPECT_EQ(roundTrip<FetchMessage>(FetchMessage{{7}}).ids, (std::vector<uint64_t>{7}));
  EXPECT_EQ(roundTrip<LostMessage>(LostMessage{"w7"}).worker, "w7");
  const BlobsMessage blobs =
      roundTrip<BlobsMessage>(BlobsMessage{{7}, {Value::bytes(std::string(10, 'b'))}});
  EXPECT_EQ(blobs.values.at(0), Value::bytes(std::string(10, 'b')));
  InitMessage init{1, 2, {"image"}, 65536};
  EXPECT_EQ(roundTrip<InitMessage>(init).keepOver, 65536u);
}

// A message for a coordinator without keys, in pieces that each fit its 64 KiB endpoint.
TEST(ProtocolTest, PiecesCarryBytesAndFitTheUnauthenticatedLimit) {
  const std::string bytes(ProtocolLimits::kPieceBytes, '\xff');
  const PieceMessage back = roundTrip<PieceMessage>(PieceMessage{1u << 20, 61440, bytes});
  EXPECT_EQ(back.total, 1u << 20);
  EXPECT_EQ(back.offset, 61440u);
  EXPECT_EQ(back.bytes, bytes);
  EXPECT_LE(encodeMessage(PieceMessage{ProtocolLimits::kUnauthenticatedPiecesBytes,
                                       ProtocolLimits::kUnauthenticatedPiecesBytes, bytes})
                .size(),
            ProtocolLimits::kUnauthenticatedMessageBytes);
  EXPECT_TRUE(std::holds_alternative<MoreMessage>(
      std::get<Message>(decodeMessage(encodeMessage(MoreMessage{})))));
}

TEST(ProtocolTest, AReferenceIsAWholeValueNeverPartOfOne) {
  // Inside a list, or in a fetch answer, a reference is refused: only an item's whole value
  // may stay on a worker, and a worker serves values, not references.
  const Value kept = Value::ref(std::make_shared<const ValueRef>(ValueRef{"w2", 1, 100}));
  BatchMessage batch;
  batch.batch.call = 0;
  batch.batch.grains.resize(1);
  batch.batch.inputsPerGrain = 1;
  batch.batch.inputs = {Value::list({kept})};
  auto decoded = decodeMessage(encodeMessage(batch));
  ASSERT_TRUE(std::holds_alternative<std::string>(decoded));
  EXPECT_NE(std::get<std::string>(decoded).find("value reference"), std::string::npos);
  auto blobs = decodeMessage(encodeMessage(BlobsMessage{{1}, {kept}}));
  EXPECT_TRUE(std::holds_alternative<std::string>(blobs));
}

Value longList(size_t count, const std::function<Value(size_t)> &element) {
  ValueList list;
  list.reserve(count);
  for (size_t i = 0; i < count; ++i)
    list.push_back(element(i));
  return Value::list(std::move(list));
}

ResultMessage resultWith(Value value) {
  ResultMessage result;
  result.report.batchId = 1;
  result.report.grains.push_back(
      GrainReport{GrainRef{NodeId(0), EntityId(0)}, 0, RowResultKind::Value, std::move(value), ""});
  return result;
}

TEST(ProtocolTest, ListsLongerThanAnArrayTravelInChunks) {
  // One more element than an array may hold, a record holding one (nested long lists too), and
  // a list of exactly the limit, which is still one array.
  const Value frames = longList(kLongListElements + 1, [](size_t i) { return Value::integer(i); });
  const Value nested =
      Value::record({{"frames", frames}, {"clips", longList(kLongListElements + 3, [](size_t i) {
                                            return i % 2 ? Value::list({}) : Value::string("c");
                                          })}});
  for (const Value &value : {frames, nested}) {
    EXPECT_FALSE(exceedsProtocolLimits(value));
    EXPECT_EQ(roundTrip<ResultMessage>(resultWith(value)).report.grains.at(0).value, value);
  }
  const Value atTheLimit =
      longList(kLongListElements, [](size_t i) { return Value::integer(i % 7); });
  msgpack::sbuffer plain;
  Packer out(plain);
  packValue(out, atTheLimit);
  EXPECT_EQ(uint8_t(plain.data()[0]), 0xdd) << "an array 32";
  EXPECT_EQ(roundTrip<ResultMessage>(resultWith(atTheLimit)).report.grains.at(0).value, atTheLimit);
  // To an operator process a long list is one array, as its MessagePack library reads it.
  msgpack::sbuffer whole;
  Packer toOperator(whole);
  packValue(toOperator, frames, LongLists::AsOneArray);
  msgpack::object_handle read = msgpack::unpack(whole.data(), whole.size());
  EXPECT_EQ(read.get().type, msgpack::type::ARRAY);
  EXPECT_EQ(read.get().via.array.size, kLongListElements + 1);
}

/// A result whose value is a long list's ext with `body`.
std::string resultWithLongListBody(const std::string &body) {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_ext(body.size(), kLongListExtType);
  out.pack_ext_body(body.data(), static_cast<uint32_t>(body.size()));
  const std::string value(buffer.data(), buffer.size());
  // The result as it is encoded, with its value replaced by the ext.
  const std::string marker = "\xa6marker";
  std::string bytes = encodeMessage(resultWith(Value::string("marker")));
  const size_t at = bytes.find(marker);
  return bytes.replace(at, marker.size(), value);
}

TEST(ProtocolTest, AMalformedLongListIsAnErrorNotACrash) {
  auto chunks = [](std::vector<uint32_t> sizes) {
    msgpack::sbuffer body;
    msgpack::packer<msgpack::sbuffer> out(body);
    for (uint32_t size : sizes) {
      out.pack_array(size);
      for (uint32_t i = 0; i < size; ++i)
        out.pack(1);
    }
    return std::string(body.data(), body.size());
  };
  const std::vector<std::pair<std::string, std::string>> cases{
      {chunks({3}), "a long list of 3 elements"},
      {chunks({kLongListChunk + 1}), "not an array of 1 to 65536 elements"},
      {chunks({0}), "not an array of 1 to 65536 elements"},
      {std::string("\x92\x01"), "a long list that cannot be read"},
      {std::string("\xc1"), "a long list that cannot be read"},
      {std::string(70, '\x91') + "\x01", "a long list that cannot be read"},
  };
  for (const auto &[body, expected] : cases) {
    auto decoded = decodeMessage(resultWithLongListBody(body));
    ASSERT_TRUE(std::holds_alternative<std::string>(decoded)) << expected;
    EXPECT_NE(std::get<std::string>(decoded).find(expected), std::string::npos)
        << std::get<std::string>(decoded);
  }
}

TEST(ProtocolTest, IntegralFloatsStayFloats) {
  // msgpack-c's pack(double) writes 2.0 as the integer 2: results crossing between processes
  // would change type (and JSON output would differ from an in-process run).
  ResultMessage result;
  result.report.batchId = 1;
  result.report.grains.push_back(
      GrainReport{GrainRef{NodeId(0), EntityId(0)}, 0, RowResultKind::Value,
                  Value::list({Value::real(0.0), Value::real(2.0), Value::real(-3.0)}), ""});
  auto decoded = decodeMessage(encodeMessage(result));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const auto &back = std::get<ResultMessage>(std::get<Message>(decoded));
  for (const Value &value : back.report.grains.at(0).value.asList())
    EXPECT_EQ(value.kind(), Value::Kind::Float) << value.str();
}

/// One or more of every message type, with optional fields set and not.
std::vector<Message> samples() {
  std::vector<Message> all;
  HelloMessage hello{3, "w1", 42, "host", 2.5, {0, 1}, {"a", "b"}, 1 << 30, "tcp://x:1", "KEY", {}};
  all.push_back(hello);
  all.push_back(HelloMessage{3, "w2", 7, "h", 1, {}, {}, 0, "", "", {}});
  all.push_back(HelloMessage{3, "w3", 8, "h", 16, {0, 1}, {}, 0, "", "", {80000000000, 0}});
  all.push_back(WelcomeMessage{3, 500, 5, std::string("plan\0bytes", 10), {"k1", "k2"}, {}});
  all.push_back(WelcomeMessage{3, 500, 5, "plan", {}, std::string("where\0", 6)});
  all.push_back(WelcomeMessage{3, 100, 2, "", {}, {}});
  all.push_back(InitMessage{1, 2, {"x", "y"}, 65536, 1});
  BatchMessage batch;
  batch.replica = 3;
  batch.batch.id = 99;
  batch.batch.call = 1;
  batch.batch.attempt = 2;
  batch.batch.inputsPerGrain = 1;
  batch.batch.grains.push_back(
      BatchGrain{GrainRef{NodeId(4), EntityId(5)}, 6, GrainLineage{7, 8, 9, 10}});
  batch.batch.grains.push_back(
      BatchGrain{GrainRef{NodeId(1), EntityId(2)}, 0, GrainLineage{1, 0, 1, 11}});
  batch.batch.inputs = {Value::string("s"),
                        Value::ref(std::make_shared<ValueRef>(ValueRef{"w1", 5, 100}))};
  all.push_back(batch);
  batch.batch.timeoutNanoseconds = 123456;
  batch.peers.push_back(PeerAddress{"w1", "tcp://1", "K"});
  all.push_back(batch);
  ResultMessage result;
  result.replica = 2;
  result.seconds = 0.25;
  result.report.batchId = 99;
  result.report.grains.push_back(
      GrainReport{GrainRef{NodeId(4), EntityId(5)}, 6, RowResultKind::Value, Value::real(2.0), ""});
  result.report.grains.push_back(GrainReport{GrainRef{NodeId(4), EntityId(6)}, 1,
                                             RowResultKind::RecordFailure, Value(), "bad"});
  all.push_back(result);
  ResultMessage lost = result;
  lost.report.grains.clear();
  lost.report.batchError = "it crashed";
  lost.report.loss = BatchLoss::Crash;
  lost.unreachable = "w3";
  all.push_back(lost);
  lost.report.loss = BatchLoss::Infrastructure;
  lost.unreachable = "";
  all.push_back(lost);
  lost.report.loss = BatchLoss::Timeout;
  all.push_back(lost);
  all.push_back(HeartbeatMessage{});
  all.push_back(ByeMessage{"done"});
  all.push_back(ErrorMessage{"no", ErrorCode::Restart});
  all.push_back(ErrorMessage{"x", ErrorCode::Unspecified});
  all.push_back(ErrorMessage{"y", ErrorCode::DeclaredLost});
  all.push_back(StartedMessage{4, 1.5, std::nullopt});
  all.push_back(StartedMessage{4, 1.5, std::string("trace")});
  all.push_back(ReleaseMessage{7});
  all.push_back(DropMessage{{1, 2, 3}});
  all.push_back(FetchMessage{{4}});
  all.push_back(BlobsMessage{{4, 5}, {Value::integer(1), Value::list({Value::boolean(true)})}});
  all.push_back(PieceMessage{100, 50, std::string("\0\1\2", 3)});
  all.push_back(MoreMessage{});
  all.push_back(LostMessage{"local-0"});
  return all;
}

TEST(ProtocolTest, EveryMessageTypeRoundTripsThroughItsFieldTable) {
  std::set<std::string> types;
  for (const Message &message : samples()) {
    const std::string bytes = encodeMessage(message);
    auto decoded = decodeMessage(bytes);
    ASSERT_TRUE(std::holds_alternative<Message>(decoded))
        << describeMessage(message) << ": " << std::get<std::string>(decoded);
    const Message &back = std::get<Message>(decoded);
    EXPECT_EQ(back.index(), message.index());
    EXPECT_EQ(encodeMessage(back), bytes) << describeMessage(message);
    EXPECT_EQ(describeMessage(back), describeMessage(message));
    types.insert(messageTypeName(message));
  }
  EXPECT_EQ(types.size(), std::variant_size_v<Message>) << "a message type has no sample";
}

TEST(ProtocolTest, ADescriptionNamesTheFieldsAMessageWrites) {
  ResultMessage lost;
  lost.replica = 2;
  lost.report.batchId = 9;
  lost.report.batchError = "it crashed";
  lost.report.loss = BatchLoss::Crash;
  EXPECT_EQ(describeMessage(lost), "result {batch=9, replica=2, seconds=0.000000, lost=true, "
                                   "loss=crash, error=\"it crashed\"}");
  EXPECT_EQ(describeMessage(WelcomeMessage{3, 500, 5, "abc", {}, {}}),
            "welcome {version=3, heartbeat_ms=500, liveness=5, peer_keys=[0], plan=3 bytes}");
}

/// The start of a result for batch 1 of replica 0, with room for `more` entries after it.
void packResultHead(msgpack::packer<msgpack::sbuffer> &out, uint32_t more) {
  out.pack_map(4 + more);
  out.pack("type");
  out.pack("result");
  out.pack("batch");
  out.pack(1);
  out.pack("replica");
  out.pack(0);
  out.pack("seconds");
  out.pack(0.5);
}

TEST(ProtocolTest, AResultWithoutRowsMustSayWhyItsBatchFailed) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  packResultHead(out, 0);
  auto decoded = decodeMessage(std::string_view(buffer.data(), buffer.size()));
  ASSERT_TRUE(std::holds_alternative<std::string>(decoded));
  EXPECT_NE(std::get<std::string>(decoded).find("missing 'rows'"), std::string::npos)
      << std::get<std::string>(decoded);
}

TEST(ProtocolTest, ABatchErrorWinsOverRowsAndANegativeSizeReadsAsNone) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  packResultHead(out, 2);
  out.pack("error");
  out.pack("the model crashed");
  out.pack("rows");
  out.pack_array(1);
  out.pack(1);
  auto decoded = decodeMessage(std::string_view(buffer.data(), buffer.size()));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const auto &result = std::get<ResultMessage>(std::get<Message>(decoded));
  EXPECT_EQ(result.report.batchError, std::optional<std::string>("the model crashed"));
  EXPECT_TRUE(result.report.grains.empty());

  msgpack::sbuffer helloBuffer;
  msgpack::packer<msgpack::sbuffer> helloOut(helloBuffer);
  helloOut.pack_map(9);
  for (auto [key, value] : std::initializer_list<std::pair<const char *, int64_t>>{
           {"version", 1}, {"pid", 1}, {"memory", -5}}) {
    helloOut.pack(key);
    helloOut.pack(value);
  }
  helloOut.pack("type");
  helloOut.pack("hello");
  helloOut.pack("worker");
  helloOut.pack("w");
  helloOut.pack("host");
  helloOut.pack("h");
  helloOut.pack("cpus");
  helloOut.pack(1.0);
  helloOut.pack("gpus");
  helloOut.pack_array(0);
  helloOut.pack("operators");
  helloOut.pack_array(0);
  auto decodedHello = decodeMessage(std::string_view(helloBuffer.data(), helloBuffer.size()));
  ASSERT_TRUE(std::holds_alternative<Message>(decodedHello)) << std::get<std::string>(decodedHello);
  EXPECT_EQ(std::get<HelloMessage>(std::get<Message>(decodedHello)).memoryBytes, 0u)
      << "an older or odd worker's negative memory offers none";
}

} // namespace
} // namespace orch::runtime
