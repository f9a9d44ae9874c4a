// Value locality between workers, without a coordinator: a worker's kept values served on its
// peer socket (PeerServer) and a batch's references resolved by another worker (PeerFetcher),
// with and without CURVE keys, over real ZeroMQ sockets.
#include "KeptValues.h"
#include "PeerEndpoint.h"
#include "PeerFetcher.h"
#include "PeerServer.h"

#include "orch/runtime/cluster/CurveKeys.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace orch::runtime {
namespace {

Value reference(const std::string &owner, uint64_t id, uint64_t bytes) {
  return Value::ref(std::make_shared<const ValueRef>(ValueRef{owner, id, bytes}));
}

std::string socketPath(const std::string &name) {
  return "ipc://" + (std::filesystem::temp_directory_path() /
                     ("orch-peer-test-" + std::to_string(::getpid()) + "-" + name + ".sock"))
                        .string();
}

/// A batch of one grain whose inputs are `inputs`.
Batch batchOf(std::vector<Value> inputs) {
  Batch batch;
  batch.id = 1;
  batch.call = 0;
  batch.grains.resize(1);
  batch.inputsPerGrain = static_cast<uint32_t>(inputs.size());
  batch.inputs = std::move(inputs);
  return batch;
}

TEST(PeerFetchTest, ABatchGetsItsOwnAndAPeersKeptValues) {
  KeptValues mine, theirs;
  const Value page = Value::bytes(std::string(300000, 'p'));
  const Value image = Value::record({{"width", Value::integer(2)}, {"pixels", page}});
  const uint64_t own = mine.keep(Value::string("kept here"));
  const uint64_t far = theirs.keep(image);
  EXPECT_EQ(theirs.bytes(), approximateBytes(image));
  PeerServer server(theirs, socketPath("plain"), std::nullopt, nullptr);
  zmq::context_t context;
  PeerFetcher fetcher(context, "me", mine, std::nullopt, std::chrono::milliseconds(5000));
  Batch batch = batchOf({reference("me", own, 25), Value::integer(7),
                         reference("them", far, approximateBytes(image))});
  const std::vector<PeerAddress> peers{{"them", server.boundEndpoint(), ""}};
  ASSERT_EQ(fetcher.resolve(batch, peers), std::nullopt);
  EXPECT_EQ(batch.inputs[0], Value::string("kept here"));
  EXPECT_EQ(batch.inputs[1], Value::integer(7));
  EXPECT_EQ(batch.inputs[2], image);
  EXPECT_EQ(fetcher.valuesFetched(), 1u);
  EXPECT_EQ(server.valuesServed(), 1u);

  // Dropped values are gone: a batch that still names one cannot run here.
  theirs.drop({far});
  EXPECT_EQ(theirs.count(), 0u);
  Batch late = batchOf({reference("them", far, 10)});
  const std::optional<PeerFetcher::Missing> problem = fetcher.resolve(late, peers);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->message.find("no longer keeps value"), std::string::npos) << problem->message;
  EXPECT_EQ(problem->unreachable, "") << "the owner answered";
  Batch unknown = batchOf({reference("nobody", 1, 10)});
  ASSERT_TRUE(fetcher.resolve(unknown, peers));
}

TEST(PeerFetchTest, AFetchFromAWorkerTheCoordinatorLostEndsAtOnce) {
  // A batch sent before its input's owner was lost waited out the fetch's time limit (10 s by
  // default), and every batch queued behind it on its replica with it.
  KeptValues mine;
  zmq::context_t context;
  LostPeers lost;
  PeerFetcher fetcher(context, "me", mine, std::nullopt, std::chrono::milliseconds(60000), &lost);
  // Nobody listens there any more: the owner's process is gone.
  const std::vector<PeerAddress> gone{{"them", socketPath("gone"), ""}};
  Batch batch = batchOf({reference("them", 1, 10)});
  std::thread coordinator([&lost] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lost.add("them", 1); // after this worker's first batch (number 0)
  });
  const auto began = std::chrono::steady_clock::now();
  const std::optional<PeerFetcher::Missing> problem = fetcher.resolve(batch, gone, 0);
  const auto waited = std::chrono::steady_clock::now() - began;
  coordinator.join();
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->message.find("the coordinator lost that worker"), std::string::npos)
      << problem->message;
  EXPECT_EQ(problem->unreachable, "") << "nothing to relay: its values are computed again";
  EXPECT_LT(waited, std::chrono::seconds(30)) << "it ended long before its time limit";
  Batch queuedBehind = batchOf({reference("them", 2, 10)});
  ASSERT_TRUE(fetcher.resolve(queuedBehind, gone, 0)) << "a batch received before the notice";

  // A batch received after the notice names a worker of that name that joined again.
  KeptValues theirs;
  const uint64_t id = theirs.keep(Value::string("made again"));
  PeerServer server(theirs, socketPath("back"), std::nullopt, nullptr);
  Batch later = batchOf({reference("them", id, 20)});
  EXPECT_EQ(fetcher.resolve(later, {{"them", server.boundEndpoint(), ""}}, 1), std::nullopt);
  EXPECT_EQ(later.inputs[0], Value::string("made again"));
}

TEST(PeerFetchTest, BigValuesComeInSeveralFetchesThatEachFitInAMessage) {
  // Five 30 MiB values: 150 MiB at once would be one message; each fetch asks for 64 MiB at
  // most (two values), so three fetches.
  KeptValues theirs, none;
  std::vector<Value> inputs, expected;
  for (char fill : std::string("abcde")) {
    const Value value = Value::bytes(std::string(30 << 20, fill));
    expected.push_back(value);
    inputs.push_back(reference("them", theirs.keep(value), approximateBytes(value)));
  }
  PeerServer server(theirs, socketPath("big"), std::nullopt, nullptr);
  zmq::context_t context;
  PeerFetcher fetcher(context, "me", none, std::nullopt, std::chrono::milliseconds(10000));
  Batch batch = batchOf(inputs);
  ASSERT_EQ(fetcher.resolve(batch, {{"them", server.boundEndpoint(), ""}}), std::nullopt);
  EXPECT_EQ(batch.inputs, expected);
  EXPECT_EQ(fetcher.requests(), 3u);
}

TEST(PeerFetchTest, WithCurveKeysOnlyTheRunsWorkersFetch) {
  KeptValues theirs;
  const uint64_t id = theirs.keep(Value::bytes(std::string(100000, 'x')));
  const CurveKeyPair owner = generateCurveKeyPair("owner");
  const CurveKeyPair member = generateCurveKeyPair("member");
  const CurveKeyPair stranger = generateCurveKeyPair("stranger");
  PeerServer server(theirs, socketPath("curve"), owner, nullptr);
  server.admit({member.publicKey, owner.publicKey});
  const std::vector<PeerAddress> peers{{"owner", server.boundEndpoint(), owner.publicKey}};
  zmq::context_t context;
  KeptValues none;

  PeerFetcher admitted(context, "member", none, member, std::chrono::milliseconds(5000));
  Batch batch = batchOf({reference("owner", id, 100016)});
  ASSERT_EQ(admitted.resolve(batch, peers), std::nullopt);
  EXPECT_EQ(batch.inputs[0].asBytes().size(), 100000u);

  PeerFetcher refused(context, "stranger", none, stranger, std::chrono::milliseconds(500));
  Batch denied = batchOf({reference("owner", id, 100016)});
  const std::optional<PeerFetcher::Missing> problem = refused.resolve(denied, peers);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->message.find("no answer within 500 ms"), std::string::npos)
      << problem->message;
  EXPECT_EQ(problem->unreachable, "owner");
  EXPECT_EQ(denied.inputs[0].kind(), Value::Kind::Ref);
  EXPECT_EQ(server.valuesServed(), 1u);
}

TEST(PeerFetchTest, APeerSocketListensWhereTheCoordinatorsWorkersReachIt) {
  const std::string pid = std::to_string(::getpid());
  EXPECT_EQ(peerBindEndpoint("ipc:///tmp/orch-1-x/coordinator.sock"),
            "ipc:///tmp/orch-1-x/peer-" + pid + ".sock");
  EXPECT_EQ(peerBindEndpoint("tcp://127.0.0.1:7700"), "tcp://127.0.0.1:*");
  EXPECT_EQ(peerBindEndpoint("tcp://localhost:7700"), "tcp://127.0.0.1:*");
  EXPECT_EQ(peerBindEndpoint("tcp://10.0.0.5:7700"), "tcp://*:*");
  // Announced: the address on the route to the coordinator, not a wildcard (nor the host
  // name, which Debian maps to 127.0.1.1).
  EXPECT_EQ(announcedPeerEndpoint("tcp://0.0.0.0:41000", "tcp://127.0.0.1:7700"),
            "tcp://127.0.0.1:41000");
  EXPECT_EQ(announcedPeerEndpoint("tcp://10.1.2.3:41000", "tcp://10.0.0.5:7700"),
            "tcp://10.1.2.3:41000");
  EXPECT_EQ(announcedPeerEndpoint("ipc:///tmp/x/peer-1.sock", "ipc:///tmp/x/coordinator.sock"),
            "ipc:///tmp/x/peer-1.sock");
}

} // namespace
} // namespace orch::runtime
