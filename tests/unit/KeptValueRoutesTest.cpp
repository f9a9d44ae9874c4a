// Kept-value routing without sockets (KeptValueRoutes): where a batch that reads kept values
// goes, what it waits for (a value computed again, a relay through the coordinator), when it
// ends with an error, and which Calls' results may stay on workers at all.
#include "KeptValueRoutes.h"

#include "CompileExample.h"

#include <gtest/gtest.h>

#include <memory>

namespace orch::runtime {
namespace {

/// A coordinator stand-in: replicas on workers, each with room for `depth` batches, and a log
/// of what the routes asked of it.
class FakeTarget : public RouteTarget {
public:
  struct Replica {
    uint32_t call, worker;
    size_t queued = 0;
  };
  struct Sent {
    uint32_t replica;
    Batch batch;
    std::vector<uint32_t> peers;
    std::optional<KeptValueLedger::Key> recomputes;
  };

  std::vector<Replica> replicas;
  size_t depth = 2;
  std::vector<Sent> sent;
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> asked;
  std::vector<std::pair<uint64_t, std::string>> errors;
  std::vector<std::string> lines;

  uint32_t pickReplica(uint32_t call, uint32_t preferred, bool alone) override {
    (void)alone;
    uint32_t any = kNoIndex;
    for (uint32_t r = 0; r < replicas.size(); ++r) {
      if (replicas[r].call != call || replicas[r].queued >= depth)
        continue;
      if (replicas[r].worker == preferred)
        return r;
      if (any == kNoIndex)
        any = r;
    }
    return any;
  }
  uint32_t workerOfReplica(uint32_t replica) const override { return replicas[replica].worker; }
  void send(uint32_t replica, Batch batch, std::vector<uint32_t> peers,
            std::optional<KeptValueLedger::Key> recomputes) override {
    ++replicas[replica].queued;
    sent.push_back({replica, std::move(batch), std::move(peers), recomputes});
  }
  void askForValues(uint32_t owner, std::vector<uint64_t> ids) override {
    asked.emplace_back(owner, std::move(ids));
  }
  void endWithError(const Batch &batch, std::string why) override {
    errors.emplace_back(batch.id, std::move(why));
  }
  void log(const std::string &line) override { lines.push_back(line); }
};

constexpr uint32_t kProducer = 0, kConsumer = 1;

/// Worker `w` (named `owner`) answers a batch of the producer Call with a reference to its
/// value `id` of `bytes` bytes, made from the input `made`: the ledger takes it over (with its
/// recipe) and the reference the engine would hold comes back.
Value keptBy(KeptValueRoutes &routes, uint32_t w, const std::string &owner, uint64_t id,
             uint64_t bytes, int64_t made = 7) {
  BatchGrain grain;
  grain.grain.node = NodeId(3);
  grain.grain.entity = EntityId(static_cast<uint32_t>(id));
  const std::vector<BatchGrain> grains{grain};
  const std::vector<Value> inputs{Value::integer(made)};
  BatchReport report;
  report.grains.push_back(
      GrainReport{grain.grain, 0, RowResultKind::Value,
                  Value::ref(std::make_shared<ValueRef>(ValueRef{owner, id, bytes})), ""});
  routes.ledger().track(w, owner, report, KeptValueLedger::Recipe{kProducer, grains, inputs});
  return report.grains[0].value;
}

Batch consumerBatch(uint64_t id, std::vector<Value> inputs) {
  Batch batch;
  batch.id = id;
  batch.call = kConsumer;
  batch.inputsPerGrain = 1;
  for (size_t i = 0; i < inputs.size(); ++i)
    batch.grains.push_back(BatchGrain{});
  batch.inputs = std::move(inputs);
  return batch;
}

struct KeptValueRoutesTest : ::testing::Test {
  FakeTarget target;
  KeptValueRoutes routes{target};
  void SetUp() override {
    // Workers 0 and 1 each have a producer and a consumer replica.
    target.replicas = {{kProducer, 0}, {kConsumer, 0}, {kProducer, 1}, {kConsumer, 1}};
  }
};

TEST_F(KeptValueRoutesTest, ABatchGoesWhereMostOfItsInputBytesAreKeptAndIsToldWhereTheRestAre) {
  Value small = keptBy(routes, 0, "w0", 1, 100 << 10);
  Value large = keptBy(routes, 1, "w1", 2, 900 << 10);
  routes.route(consumerBatch(10, {small, large, Value::integer(5)}));
  ASSERT_EQ(target.sent.size(), 1u);
  EXPECT_EQ(target.replicas[target.sent[0].replica].worker, 1u) << "worker 1 keeps 900 KiB";
  EXPECT_EQ(target.sent[0].peers, std::vector<uint32_t>{0}) << "worker 0 keeps the rest";
  EXPECT_EQ(routes.fetchedFromPeers(), 1u);
  EXPECT_EQ(routes.waitingBatches(), 0u);

  // The preferred worker's replica is full: another one takes it, told about both owners.
  target.replicas[3].queued = target.depth;
  routes.route(consumerBatch(11, {large}));
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.replicas[target.sent[1].replica].worker, 0u);
  EXPECT_EQ(target.sent[1].peers, std::vector<uint32_t>{1});
}

TEST_F(KeptValueRoutesTest, ABatchWaitsWithoutAReplicaAndGoesWhenOneHasRoom) {
  target.replicas[1].queued = target.replicas[3].queued = target.depth;
  routes.route(consumerBatch(10, {Value::integer(1)}));
  EXPECT_TRUE(target.sent.empty());
  EXPECT_EQ(routes.waitingBatches(), 1u);
  target.replicas[1].queued = 0;
  routes.retryWaiting();
  ASSERT_EQ(target.sent.size(), 1u);
  EXPECT_EQ(target.sent[0].batch.id, 10u);
  EXPECT_EQ(routes.waitingBatches(), 0u);
}

TEST_F(KeptValueRoutesTest, ALostValueIsComputedAgainAndTheBatchThatReadsItWaitsForItsReplacement) {
  Value kept = keptBy(routes, 1, "w1", 2, 1 << 20, /*made=*/42);
  std::vector<KeptValueLedger::Key> lost = routes.workerLost(1);
  ASSERT_EQ(lost, (std::vector<KeptValueLedger::Key>{{"w1", 2}}));
  target.replicas.resize(2); // its replicas are gone with it
  routes.route(consumerBatch(10, {kept}));
  EXPECT_TRUE(target.sent.empty()) << "its input is being computed again";
  EXPECT_EQ(routes.waitingBatches(), 1u);

  routes.recompute(lost);
  ASSERT_EQ(target.sent.size(), 1u);
  const FakeTarget::Sent recomputation = target.sent[0];
  EXPECT_TRUE(KeptValueRoutes::isRecomputation(recomputation.batch.id));
  EXPECT_EQ(recomputation.batch.call, kProducer);
  EXPECT_EQ(recomputation.batch.inputs, std::vector<Value>{Value::integer(42)}) << "its recipe";
  ASSERT_TRUE(recomputation.recomputes);
  EXPECT_EQ(*recomputation.recomputes, (KeptValueLedger::Key{"w1", 2}));

  // Worker 0 answers with a value it keeps now; the waiting batch reads that one.
  BatchReport answer;
  answer.batchId = recomputation.batch.id;
  answer.grains.push_back(
      GrainReport{recomputation.batch.grains[0].grain, 0, RowResultKind::Value,
                  Value::ref(std::make_shared<ValueRef>(ValueRef{"w0", 9, 1 << 20})), ""});
  routes.ledger().track(0, "w0", answer, std::nullopt);
  routes.recomputed(*recomputation.recomputes, answer);
  routes.retryWaiting();
  ASSERT_EQ(target.sent.size(), 2u);
  const Batch &batch = target.sent[1].batch;
  EXPECT_EQ(batch.id, 10u);
  ASSERT_EQ(batch.inputs[0].kind(), Value::Kind::Ref);
  EXPECT_EQ(batch.inputs[0].asRef().owner, "w0");
  EXPECT_EQ(batch.inputs[0].asRef().id, 9u);
  EXPECT_EQ(routes.waitingBatches(), 0u);
  EXPECT_EQ(routes.ledger().valuesRecomputed(), 1u);
}

TEST_F(KeptValueRoutesTest, AValueThatCannotBeComputedAgainEndsTheBatchWithTheReason) {
  Value kept = keptBy(routes, 1, "w1", 2, 1 << 20);
  target.replicas.resize(2);
  routes.recompute(routes.workerLost(1));
  routes.route(consumerBatch(10, {kept}));
  for (uint32_t attempt = 0; attempt < KeptValueLedger::kRecomputeAttempts; ++attempt) {
    ASSERT_FALSE(target.sent.empty());
    FakeTarget::Sent recomputation = target.sent.back();
    ASSERT_TRUE(recomputation.recomputes);
    target.replicas[recomputation.replica].queued = 0;
    BatchReport failed;
    failed.batchId = recomputation.batch.id;
    failed.batchError = "the model crashed";
    routes.recomputed(*recomputation.recomputes, failed);
  }
  EXPECT_EQ(target.sent.size(), KeptValueLedger::kRecomputeAttempts);
  routes.retryWaiting();
  ASSERT_EQ(target.errors.size(), 1u);
  EXPECT_EQ(target.errors[0].first, 10u);
  EXPECT_NE(target.errors[0].second.find("kept by worker w1 was lost with it"), std::string::npos)
      << target.errors[0].second;
  EXPECT_EQ(routes.waitingBatches(), 0u);
}

TEST_F(KeptValueRoutesTest, AnUnreachableOwnerRelaysItsValuesThroughTheCoordinator) {
  Value far = keptBy(routes, 1, "w1", 2, 100 << 10);
  Value near = keptBy(routes, 0, "w0", 3, 900 << 10);
  EXPECT_TRUE(routes.markUnreachable(0, 1));
  EXPECT_FALSE(routes.markUnreachable(0, 1)) << "known already";
  routes.route(consumerBatch(10, {far, near}));
  EXPECT_TRUE(target.sent.empty()) << "it waits for the relay";
  ASSERT_EQ(target.asked.size(), 1u);
  EXPECT_EQ(target.asked[0].first, 1u);
  EXPECT_EQ(target.asked[0].second, std::vector<uint64_t>{2});

  routes.relayed(1, "w1", {2}, {Value::string("the value itself")});
  routes.retryWaiting();
  ASSERT_EQ(target.sent.size(), 1u);
  const FakeTarget::Sent &sent = target.sent[0];
  EXPECT_EQ(target.replicas[sent.replica].worker, 0u);
  EXPECT_EQ(sent.batch.inputs[0], Value::string("the value itself")) << "inline now";
  EXPECT_TRUE(sent.peers.empty()) << "nothing left to fetch from worker 1";
  EXPECT_EQ(routes.valuesRelayed(), 1u);
}

TEST_F(KeptValueRoutesTest, ARelayItsOwnerWillNeverAnswerIsGivenUpWhenTheOwnerIsLost) {
  Value far = keptBy(routes, 1, "w1", 2, 100 << 10);
  Value near = keptBy(routes, 0, "w0", 3, 900 << 10);
  routes.markUnreachable(0, 1);
  routes.route(consumerBatch(10, {far, near}));
  ASSERT_EQ(target.asked.size(), 1u);
  target.replicas = {{kProducer, 0}, {kConsumer, 0}};
  const std::vector<KeptValueLedger::Key> lost = routes.workerLost(1);
  routes.retryWaiting();
  EXPECT_TRUE(target.sent.empty()) << "its input is being computed again now";
  routes.recompute(lost);
  ASSERT_EQ(target.sent.size(), 1u);
  EXPECT_TRUE(target.sent[0].recomputes) << "no longer waiting for the relay";
  EXPECT_TRUE(routes.markUnreachable(0, 1)) << "pairs with the lost worker were forgotten";
}

TEST_F(KeptValueRoutesTest, OnlyResultsThatOnlyCallsReadMayStayOnWorkers) {
  std::string error;
  std::optional<plan::Plan> plan = testing::compileText(R"(
pipeline kept;
source rows = jsonl("in.jsonl") as Doc;
a = test.identity(rows.id);
b = test.identity(a);
c = test.identity(b);
sink jsonl(path: "out.jsonl", record: { id: rows.id, c: c, a: a });
)",
                                                        &error);
  ASSERT_TRUE(plan) << error;
  routes.start(*plan, 64 << 10);
  std::map<std::string, uint64_t> keepOver;
  for (uint32_t c = 0; c < plan->calls.size(); ++c)
    keepOver[plan->calls[c].name] = routes.keepOver(c);
  EXPECT_EQ(keepOver["a"], 0u) << "a sink reads it";
  EXPECT_EQ(keepOver["b"], uint64_t(64 << 10)) << "only Call c reads it";
  EXPECT_EQ(keepOver["c"], 0u) << "a sink reads it";
  routes.start(*plan, 0);
  EXPECT_EQ(routes.keepOver(1), 0u) << "off";
}

} // namespace
} // namespace orch::runtime
