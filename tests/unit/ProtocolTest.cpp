// Messages between coordinator and workers, encoded and decoded without sockets.
#include "orch/runtime/Protocol.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

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

TEST(ProtocolTest, AHelloWithoutMemoryOffersNone) {
  // A worker of an earlier version says nothing of its memory: any `memory` hint fits it.
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(8);
  out.pack("type"), out.pack("hello");
  out.pack("version"), out.pack(kProtocolVersion);
  out.pack("worker"), out.pack("old");
  out.pack("pid"), out.pack(7);
  out.pack("host"), out.pack("h");
  out.pack("cpus"), out.pack(2.0);
  out.pack("gpus"), out.pack(std::vector<int64_t>{});
  out.pack("operators"), out.pack(std::vector<std::string>{});
  auto decoded = decodeMessage(std::string_view(buffer.data(), buffer.size()));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const auto *back = std::get_if<HelloMessage>(&std::get<Message>(decoded));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->memoryBytes, 0u);
  EXPECT_EQ(back->worker, "old");
}

} // namespace
} // namespace orch::runtime
