// Operators that wait on a model server (docs/models.md) without a server: `in_flight` from the
// compiler to the plan; a concurrent operator given up to `in_flight` batches at once by the
// thread executor on one thread, its answers coming back in any order; what it spent crossing
// the protocol; the JSON Schema subset llm.json checks answers against. tests/e2e/llm.sh runs the
// real operators against a real server.
#include "RuntimeFixture.h"

#include "llm/JsonSchemaCheck.h"
#include "orch/plan/PlanCodec.h"
#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/execution/ThreadExecutor.h"
#include "orch/runtime/values/Utf8.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace orch::runtime {
namespace {

using nlohmann::json;

class ModelServiceTest : public orch::testing::RuntimeFixture {};

TEST_F(ModelServiceTest, LlmCallsKeepSixteenBatchesOpenUnlessInFlightSaysOtherwise) {
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Row;
prompt = rows.prompt as String;
a = llm.chat(prompt, model: "m", endpoint: "http://127.0.0.1:1/v1");
b = llm.chat(prompt, model: "m", endpoint: "http://127.0.0.1:1/v1") { in_flight: 64 };
n = test.identity(prompt);
sink jsonl(path: "$DIR/out.jsonl", record: { a: a, b: b, n: n });
)");
  std::map<std::string, int64_t> inFlight;
  for (const plan::PlanCall &call : plan.calls)
    inFlight[call.op + (call.options.inFlight == 64 ? " (64)" : "")] = call.options.inFlight;
  EXPECT_EQ(inFlight["llm.chat"], 16);
  EXPECT_EQ(inFlight["llm.chat (64)"], 64);
  EXPECT_EQ(inFlight["test.identity"], 1);
  // The plan carries it; a plan of format 1.0 (no key) reads as 1.
  auto back = plan::decodePlan(plan::encodePlan(plan));
  ASSERT_TRUE(std::holds_alternative<plan::Plan>(back));
  for (size_t c = 0; c < plan.calls.size(); ++c)
    EXPECT_EQ(std::get<plan::Plan>(back).calls[c].options, plan.calls[c].options);
}

TEST_F(ModelServiceTest, InFlightIsRefusedWhereAReplicaRunsOneBatchAtATime) {
  std::string errors;
  EXPECT_FALSE(testing::compileText(R"(
pipeline p;
source rows = jsonl("in.jsonl") as Row;
n = text.len(rows.prompt as String) { in_flight: 4 };
sink jsonl(path: "out.jsonl", record: { n: n });
)",
                                    &errors, "test.orch"));
  EXPECT_NE(errors.find("'text.len' runs one batch at a time per replica; `in_flight` is for "
                        "operators that wait on a server"),
            std::string::npos)
      << errors;
}

TEST_F(ModelServiceTest, APlanWithInFlightOnAnOperatorThatComputesIsRefused) {
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Row;
n = test.identity(rows.prompt as String);
sink jsonl(path: "$DIR/out.jsonl", record: { n: n });
)");
  ASSERT_EQ(plan.calls.size(), 1u);
  plan.calls[0].options.inFlight = 4;
  const std::optional<std::string> problem = plan::validatePlan(plan);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("has in_flight 4, which only operators that wait on a server accept"),
            std::string::npos)
      << *problem;
  EXPECT_TRUE(
      std::holds_alternative<plan::PlanDecodeError>(plan::decodePlan(plan::encodePlan(plan))));
}

/// A stand-in for a model server client: answers batches from its own thread once eight are
/// open, the latest first, and records how many batches it had open at once.
class FakeServiceOperator : public Operator {
public:
  struct Record {
    std::mutex mutex;
    size_t open = 0;
    size_t mostOpen = 0;
  };

  explicit FakeServiceOperator(std::shared_ptr<Record> record)
      : record_(std::move(record)), answerer_([this] { answer(); }) {}
  ~FakeServiceOperator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    answerer_.join();
  }

  bool concurrent() const override { return true; }
  void process(std::span<const OperatorRow>, std::vector<RowResult> &) override {
    FAIL() << "a concurrent operator is started, not processed";
  }
  void start(std::span<const OperatorRow> rows, std::chrono::nanoseconds, RowsDone done) override {
    RowsAnswer answer;
    for (const OperatorRow &row : rows)
      answer.results.push_back(
          RowResult::ok(Value::string("answer to " + row.inputs[0].asString())));
    answer.usage.requests = rows.size();
    answer.usage.latencies.assign(rows.size(), 0.01f);
    {
      std::lock_guard<std::mutex> lock(record_->mutex);
      record_->mostOpen = std::max(record_->mostOpen, ++record_->open);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.emplace_back(std::move(answer), std::move(done));
    }
    wake_.notify_all();
  }

private:
  void answer() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      // Waits until eight batches are open (or nothing came for a while), then answers the
      // newest first.
      wake_.wait_for(lock, std::chrono::milliseconds(200),
                     [this] { return stopping_ || pending_.size() >= 8; });
      if (stopping_)
        return;
      while (!pending_.empty()) {
        auto [answer, done] = std::move(pending_.back());
        pending_.pop_back();
        {
          std::lock_guard<std::mutex> recorded(record_->mutex);
          --record_->open;
        }
        lock.unlock();
        done(std::move(answer));
        lock.lock();
      }
    }
  }

  std::shared_ptr<Record> record_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<RowsAnswer, RowsDone>> pending_;
  bool stopping_ = false;
  std::thread answerer_;
};

TEST_F(ModelServiceTest, OneThreadKeepsInFlightBatchesOpenAndEveryAnswerReachesItsRow) {
  auto record = std::make_shared<FakeServiceOperator::Record>();
  registry_.addTransform("llm.chat", [record](const OperatorConfig &) {
    return std::make_unique<FakeServiceOperator>(record);
  });
  std::string input;
  for (int i = 0; i < 64; ++i)
    input += "{\"prompt\": \"p" + std::to_string(i) + "\"}\n";
  writeFile("in.jsonl", input);
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Row;
prompt = rows.prompt as String;
answer = llm.chat(prompt, model: "m", endpoint: "http://127.0.0.1:1/v1") { in_flight: 8 };
sink jsonl(path: "$DIR/out.jsonl", record: { prompt: prompt, answer: answer });
)");
  RunOptions options;
  RunSummary summary = runOnThreads(plan, registry_, options, 1);
  ASSERT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(summary.written, 64u);
  EXPECT_EQ(record->mostOpen, 8u) << "one thread, eight batches open at once";
  for (const std::string &line : lines("out.jsonl")) {
    const json row = json::parse(line);
    EXPECT_EQ(row["answer"], "answer to " + row["prompt"].get<std::string>());
  }
  ASSERT_EQ(summary.calls.size(), 1u);
  EXPECT_EQ(summary.calls[0].service.requests, 64u);
  EXPECT_EQ(summary.calls[0].service.latencies.size(), 64u);
  EXPECT_EQ(summary.calls[0].inFlight, 8);
}

TEST(ModelServiceProtocolTest, AResultCarriesWhatItsRequestsSpent) {
  ResultMessage result;
  result.replica = 2;
  result.report.batchId = 9;
  result.report.usage.requests = 5;
  result.report.usage.retries = 2;
  result.report.usage.failedRequests = 1;
  result.report.usage.promptTokens = 120;
  result.report.usage.completionTokens = 48;
  result.report.usage.latencies = {0.25f, 0.5f};
  auto decoded = decodeMessage(encodeMessage(result));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<std::string>(decoded);
  const ServiceUsage &usage = std::get<ResultMessage>(std::get<Message>(decoded)).report.usage;
  EXPECT_EQ(usage.requests, 5u);
  EXPECT_EQ(usage.retries, 2u);
  EXPECT_EQ(usage.failedRequests, 1u);
  EXPECT_EQ(usage.promptTokens, 120u);
  EXPECT_EQ(usage.completionTokens, 48u);
  EXPECT_EQ(usage.latencies, (std::vector<float>{0.25f, 0.5f}));
  // Without requests the field is left out, and reads back empty.
  ResultMessage plain;
  plain.report.batchId = 3;
  const std::string bytes = encodeMessage(plain);
  EXPECT_EQ(bytes.find("usage"), std::string::npos);
  auto back = decodeMessage(bytes);
  ASSERT_TRUE(std::holds_alternative<Message>(back));
  EXPECT_TRUE(std::get<ResultMessage>(std::get<Message>(back)).report.usage.empty());
}

TEST(JsonSchemaCheckTest, TheSubsetStructuredOutputServersEnforce) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "title": {"type": "string", "minLength": 1},
      "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
      "score": {"type": "number"},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
      "kind": {"const": "paper"},
      "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
    },
    "required": ["title", "year"],
    "additionalProperties": false
  })");
  auto mismatch = [&](const char *value) {
    return stdlib::jsonSchemaMismatch(json::parse(value), schema).value_or("");
  };
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2001, "score": 3, "tags": ["a"], "kind": "paper",
                         "note": null})"),
            "");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2001.0})"), "") << "2001.0 is an integer";
  EXPECT_EQ(mismatch(R"([1])"), "at the top: expected object, got array");
  EXPECT_EQ(mismatch(R"({"year": 2001})"), "at the top: missing required field \"title\"");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": "2001"})"),
            "at .year: expected integer, got string");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 1800})"),
            "at .year: 1800 is below the minimum 1900");
  EXPECT_EQ(mismatch(R"({"title": "", "year": 2000})"), "at .title: shorter than minLength 1");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2000, "tags": ["c"]})"),
            "at .tags[0]: \"c\" is not one of [\"a\",\"b\"]");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2000, "tags": ["a", "b", "a"]})"),
            "at .tags: more than maxItems 2");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2000, "kind": "book"})"),
            "at .kind: expected \"paper\", got \"book\"");
  EXPECT_EQ(mismatch(R"({"title": "x", "year": 2000, "extra": 1})"),
            "at the top: unexpected field \"extra\"");
  EXPECT_NE(mismatch(R"({"title": "x", "year": 2000, "note": 5})").find("matches none of anyOf"),
            std::string::npos);
}

TEST(JsonSchemaCheckTest, ASchemaWithAnUnknownTypeIsNamed) {
  EXPECT_EQ(stdlib::jsonSchemaProblem(
                json::parse(R"({"type": "object", "properties": {"year": {"type": "integr"}}})"))
                .value_or(""),
            "at .properties.year: unknown type \"integr\" (null, boolean, integer, number, "
            "string, array or object)");
  // A property may be called "type" (its value is a schema then).
  EXPECT_FALSE(stdlib::jsonSchemaProblem(
      json::parse(R"({"type": "object", "properties": {"type": {"type": ["string", "null"]}}})")));
}

TEST(Utf8Test, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(validUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(validUtf8("caf\xff!"), "caf\xef\xbf\xbd!");
  EXPECT_EQ(validUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd") << "an overlong '/'";
  EXPECT_EQ(validUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") << "a surrogate";
  EXPECT_EQ(validUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd") << "cut short";
}

} // namespace
} // namespace orch::runtime
