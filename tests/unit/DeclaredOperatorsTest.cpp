// Operators a program declares (docs/python.md): their plan records, the fingerprint of their
// files, the values that cross to their processes, and runs in-process with real Python and
// exec processes that break the protocol in every way the worker must survive.
// tests/e2e/python_operators.sh covers the same features through `orch run` with workers.
#include "RuntimeFixture.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"
#include "orch/plan/PlanPrinters.h"
#include "orch/plan/Sha256.h"
#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/execution/ThreadExecutor.h"
#include "orch/runtime/operators/ChildProcess.h"
#include "orch/runtime/operators/ExternalOperator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <thread>

namespace orch::runtime {
namespace {

class DeclaredOperatorsTest : public orch::testing::RuntimeFixture {
protected:
  static bool pythonHasMsgpack() {
    return std::system("/usr/bin/python3 -c 'import msgpack' 2>/dev/null") == 0;
  }

  void writeExecutable(const std::string &name, const std::string &text) {
    writeFile(name, text);
    ::chmod(path(name).c_str(), 0755);
  }

  RunSummary run(const plan::Plan &plan) {
    RunOptions options;
    options.engine.infrastructureRetries = 1;
    options.onRootFinished = [this](const RootResult &root, auto &) {
      for (const Failure &failure : root.failures)
        failures_.push_back(failure.message);
    };
    return runOnThreads(plan, registry_, options, 2);
  }

  std::vector<std::string> failures_;
};

constexpr const char *kScorer = R"(
import os
class Scorer:
    def __init__(self, scale=1.0, tag=""):
        self.scale = scale
        with open(os.path.join(os.path.dirname(__file__), "constructed.log"), "a") as log:
            log.write("%r %r\n" % (scale, tag))
    def __call__(self, texts):
        return [len(t) * self.scale for t in texts]
)";

TEST_F(DeclaredOperatorsTest, TheirPlanRecordNamesTheFileByAbsolutePathAndHash) {
  writeFile("score.py", kScorer);
  plan::Plan plan = compile(R"(
pipeline p;
operator my.score(text: String, const scale: Float = 1.0, const tag: String = "") -> Float
    = python("score.py", class: "Scorer");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: my.score(rows, scale: 2) });
)",
                            path("test.orch"));
  ASSERT_EQ(plan.operators.size(), 1u);
  const plan::PlanExternalOperator &op = plan.operators[0];
  EXPECT_EQ(op.name, "my.score");
  EXPECT_EQ(op.runner, "python");
  EXPECT_EQ(op.className, "Scorer");
  EXPECT_EQ(op.path, path("score.py")) << "relative to the .orch file, absolute in the plan";
  EXPECT_EQ(op.sha256, plan::sha256Hex(kScorer));
  ASSERT_EQ(op.params.size(), 3u);
  EXPECT_FALSE(op.params[0].constant);
  EXPECT_TRUE(op.params[1].constant);
  EXPECT_EQ(op.result.str(), "Float");
  EXPECT_EQ(op.line, 3u);
  ASSERT_EQ(plan.calls.size(), 1u);
  EXPECT_EQ(plan.calls[0].op, "my.score");
  EXPECT_EQ(plan.calls[0].options.batch, 32) << "declared operators batch by default";
  const std::string bytes = plan::encodePlan(plan);
  auto decoded = plan::decodePlan(bytes);
  ASSERT_TRUE(std::holds_alternative<plan::Plan>(decoded));
  // The declaration's line lives beside the plan's bytes (x.plan.positions), not in them.
  EXPECT_EQ(std::get<plan::Plan>(decoded).operators[0].line, 0u);
  EXPECT_TRUE(plan::applyPlanPositions(std::get<plan::Plan>(decoded), bytes,
                                       plan::encodePlanPositions(plan, bytes)));
  EXPECT_EQ(std::get<plan::Plan>(decoded), plan);
  std::ostringstream text;
  plan::printPlanText(plan, text);
  EXPECT_NE(text.str().find("my.score(text: String, const scale: Float, const tag: String) -> "
                            "Float = python " +
                            path("score.py") + " class Scorer"),
            std::string::npos)
      << text.str();
}

TEST_F(DeclaredOperatorsTest, UsesAreTypeCheckedAgainstTheDeclaration) {
  writeFile("score.py", kScorer);
  const std::string declaration = "pipeline p;\noperator my.score(text: String, const scale: "
                                  "Float = 1.0) -> Float = python(\"" +
                                  path("score.py") + "\", class: \"Scorer\");\n";
  std::string error;
  EXPECT_FALSE(testing::compileText(declaration + R"(
source rows = jsonl("in.jsonl");
sink jsonl(path: "o.jsonl", record: { s: my.score(rows.id as Int) });
)",
                                    &error));
  EXPECT_EQ(error, "argument 'text' of 'my.score' must be String, not Int");
  EXPECT_FALSE(testing::compileText(declaration + R"(
source rows = lines("in.txt");
sink jsonl(path: "o.jsonl", record: { s: my.score(rows, scale: "big") });
)",
                                    &error));
  EXPECT_EQ(error, "argument 'scale' of 'my.score' must be Float, not String");
  EXPECT_FALSE(testing::compileText(declaration + R"(
source rows = lines("in.txt");
sink jsonl(path: "o.jsonl", record: { s: my.score(rows) { gpus: 1, batchh: 2 } });
)",
                                    &error));
  EXPECT_EQ(error, "unknown option 'batchh'; did you mean 'batch'?");
}

TEST_F(DeclaredOperatorsTest, ConstructorsRunOncePerReplicaWithTheConstants) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  writeFile("score.py", kScorer);
  std::string input;
  for (int i = 0; i < 50; ++i)
    input += std::string(size_t(i % 7), 'x') + "\n";
  writeFile("in.txt", input);
  plan::Plan plan = compile(R"(
pipeline p;
operator my.score(text: String, const scale: Float = 1.0, const tag: String = "") -> Float
    = python("score.py", class: "Scorer");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: my.score(rows, scale: 2, tag: "t") { batch: 8, replicas: 3 } });
)",
                            path("test.orch"));
  RunSummary summary = run(plan);
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 50u);
  std::vector<std::string> constructed = lines("constructed.log");
  EXPECT_EQ(constructed, std::vector<std::string>(3, "2.0 't'"))
      << "three replicas, each constructed once, with the Float constant as a float";
  std::multiset<std::string> written;
  for (const std::string &line : lines("out.jsonl"))
    written.insert(line);
  std::multiset<std::string> expected;
  for (int i = 0; i < 50; ++i)
    expected.insert("{\"s\":" + std::to_string(2 * (i % 7)) + ".0}");
  EXPECT_EQ(written, expected);
  EXPECT_GT(summary.startupSeconds, 0);
}

TEST_F(DeclaredOperatorsTest, AGroupedInputBatchesOnlyEqualValuesTogether) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // The class refuses a batch of mixed tags: every row written means none was mixed.
  writeFile("tag.py", R"(
class Tagger:
    def __call__(self, texts, tags):
        if len(set(tags)) != 1:
            raise ValueError("a batch of mixed tags: %r" % sorted(set(tags)))
        return [tag + ":" + text for text, tag in zip(texts, tags)]
)");
  std::string input;
  for (int i = 0; i < 40; ++i)
    input += std::string(size_t(i % 5 + 1), 'x') + "\n";
  writeFile("in.txt", input);
  plan::Plan plan = compile(R"(
pipeline p;
operator my.tag(text: String, grouped tag: String) -> String = python("tag.py", class: "Tagger");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: my.tag(rows, if len(rows) % 2 == 0 then "even" else "odd") { batch: 8 } });
)",
                            path("test.orch"));
  ASSERT_EQ(plan.calls.back().batchKeys, std::vector<std::string>{"tag"});
  RunSummary summary = run(plan);
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 40u);
  EXPECT_EQ(summary.engine.batchErrors, 0u) << "no batch mixed the tags";
  std::multiset<std::string> written;
  for (const std::string &line : lines("out.jsonl"))
    written.insert(line);
  std::multiset<std::string> expected;
  for (int i = 0; i < 40; ++i) {
    const size_t length = size_t(i % 5 + 1);
    expected.insert(std::string("{\"s\":\"") + (length % 2 == 0 ? "even" : "odd") + ":" +
                    std::string(length, 'x') + "\"}");
  }
  EXPECT_EQ(written, expected);
}

TEST_F(DeclaredOperatorsTest, AProcessKilledAsALeftoverOfAStoppedRunIsNotCalledACrash) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // At a stop, an in-process run abandons the thread of a batch still running and kills the
  // operator processes left behind: the batch's thread then finds its process dead, which is
  // no crash and restarts nothing (it said "was killed by signal 9 ... it is restarted").
  writeFile("slow.py", "import time\nclass Slow:\n    def __call__(self, texts):\n"
                       "        time.sleep(30)\n        return texts\n");
  writeFile("in.txt", "a\n");
  plan::Plan plan = compile(R"(
pipeline p;
operator slow(text: String) -> String = python("slow.py", class: "Slow");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: slow(rows) });
)",
                            path("test.orch"));
  ASSERT_EQ(plan.operators.size(), 1u);
  std::mutex mutex;
  std::vector<std::string> logged;
  OperatorConfig config(plan.calls[0].name, plan.calls[0].op, plan.calls[0].constants, {"text"});
  config.withLog([&](const std::string &line) {
    std::lock_guard lock(mutex);
    logged.push_back(line);
  });
  const OperatorFactory factory = externalOperatorFactory(plan, plan.operators[0]);
  std::unique_ptr<Operator> instance = factory(config);
  const std::vector<Value> inputs{Value::string("a")};
  const std::vector<OperatorRow> rows{OperatorRow{inputs, {}}};
  std::optional<BatchLoss> loss;
  std::thread batch([&] {
    std::vector<RowResult> results;
    try {
      instance->process(rows, results);
    } catch (const OperatorLost &lost) {
      loss = lost.loss();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500)); // the batch runs
  killLeftoversOfChildProcesses();
  batch.join();
  EXPECT_EQ(loss, BatchLoss::Crash) << "the batch still ends without an answer";
  std::lock_guard lock(mutex);
  for (const std::string &line : logged)
    EXPECT_EQ(line.find("it is restarted"), std::string::npos) << line;
}

TEST_F(DeclaredOperatorsTest, AProcessThatDiesBeforeItsHelloStopsTheRun) {
  writeExecutable("dies.sh", "#!/bin/sh\necho 'no model here' >&2\nexit 3\n");
  writeFile("in.txt", "a\n");
  plan::Plan plan = compile(R"(
pipeline p;
operator dies(text: String) -> String = exec("dies.sh");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: dies(rows) });
)",
                            path("test.orch"));
  RunSummary summary = run(plan);
  EXPECT_FALSE(summary.started);
  const std::string error = summary.error.value_or("");
  EXPECT_EQ(error.rfind(path("test.orch") + ":3:1: operator 'dies' (call 'dies@sink0'", 0), 0u)
      << error;
  EXPECT_NE(error.find("): could not start: its process exited with status 3 before its hello"),
            std::string::npos)
      << error;
}

TEST_F(DeclaredOperatorsTest, WrongAnswersAreCrashesNarrowedDownAndTheRunEnds) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // Answers every batch with the wrong batch id: a crash of its process (it is restarted), and
  // the batch is narrowed down like an operator error until each row failed alone.
  writeExecutable("liar.py", R"(#!/usr/bin/python3
import os, socket, struct, msgpack
channel = socket.socket(fileno=int(os.environ["ORCH_OPERATOR_FD"]))
def send(message):
    body = msgpack.packb(message, use_bin_type=True)
    channel.sendall(struct.pack(">I", len(body)) + body)
def receive():
    size = struct.unpack(">I", channel.recv(4, socket.MSG_WAITALL))[0]
    return msgpack.unpackb(channel.recv(size, socket.MSG_WAITALL), raw=False)
send({"type": "hello", "version": 1, "pid": os.getpid()})
receive()
send({"type": "ready", "seconds": 0.0})
while True:
    message = receive()
    send({"type": "result", "batch": 99, "values": message["columns"][0]})
)");
  writeFile("in.txt", "a\nb\n");
  plan::Plan plan = compile(R"(
pipeline p;
operator liar(text: String) -> String = exec("liar.py");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: liar(rows) { batch: 2 } });
)",
                            path("test.orch"));
  RunSummary summary = run(plan);
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.engine.batchCrashes, 4u) << "the batch of 2, its retry, each half alone";
  ASSERT_FALSE(failures_.empty());
  EXPECT_NE(failures_[0].find("its process sent the answer to batch 99 where"), std::string::npos)
      << failures_[0];
  EXPECT_NE(failures_[0].find("; it is restarted (after 1 retries)"), std::string::npos)
      << failures_[0];
}

TEST_F(DeclaredOperatorsTest, AClassThatAnswersTooFewItemsFailsTheBatch) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  writeFile("short.py",
            "class Short:\n    def __call__(self, texts):\n        return texts[:-1]\n");
  writeFile("in.txt", "a\nb\n");
  plan::Plan plan = compile(R"(
pipeline p;
operator short(text: String) -> String = python("short.py", class: "Short");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { s: short(rows) { batch: 1 } });
)",
                            path("test.orch"));
  RunSummary summary = run(plan);
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.failed, 2u);
  ASSERT_FALSE(failures_.empty());
  EXPECT_NE(failures_[0].find("broke its contract: it gave 0 result(s) for a batch of 1 item(s)"),
            std::string::npos)
      << failures_[0];
}

} // namespace
} // namespace orch::runtime
