// The plan codec on real plans: exact round trips, deterministic bytes, forward compatibility,
// and clear rejection of anything that is not a plan this reader understands or trusts.
#include "CompileExample.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanFingerprint.h"
#include "orch/plan/PlanPositions.h"
#include "orch/plan/Sha256.h"
#include "orch/runtime/outputs/RunJournal.h"

#include <msgpack.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/stat.h>

namespace orch::plan {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

std::string errorOf(const std::variant<Plan, PlanDecodeError> &result) {
  return std::holds_alternative<PlanDecodeError>(result) ? std::get<PlanDecodeError>(result).message
                                                         : std::string();
}

Plan examplePlan(const std::string &name) {
  std::optional<Plan> plan = orch::testing::compileExample(name);
  EXPECT_TRUE(plan) << name;
  return plan.value_or(Plan{});
}

/// Re-packs a decoded MessagePack value, adding an unknown key to every map (as a newer
/// writer might) and optionally replacing the format version.
void repackWithExtras(const msgpack::object &object, Packer &out,
                      const std::optional<std::pair<uint32_t, uint32_t>> &format) {
  if (object.type == msgpack::type::MAP) {
    out.pack_map(object.via.map.size + 1);
    for (uint32_t i = 0; i < object.via.map.size; ++i) {
      const msgpack::object_kv &entry = object.via.map.ptr[i];
      out.pack(entry.key);
      if (format && entry.key.type == msgpack::type::STR &&
          std::string_view(entry.key.via.str.ptr, entry.key.via.str.size) == "format") {
        out.pack_array(2);
        out.pack(format->first);
        out.pack(format->second);
      } else {
        repackWithExtras(entry.val, out, format);
      }
    }
    out.pack(std::string_view("added_by_a_newer_writer"));
    out.pack_map(1);
    out.pack(std::string_view("nested"));
    out.pack_array(2);
    out.pack(1);
    out.pack(std::string_view("two"));
    return;
  }
  if (object.type == msgpack::type::ARRAY) {
    out.pack_array(object.via.array.size);
    for (uint32_t i = 0; i < object.via.array.size; ++i)
      repackWithExtras(object.via.array.ptr[i], out, format);
    return;
  }
  out.pack(object);
}

std::string withExtras(const std::string &bytes,
                       std::optional<std::pair<uint32_t, uint32_t>> format = std::nullopt) {
  msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
  msgpack::sbuffer buffer;
  Packer out(buffer);
  repackWithExtras(handle.get(), out, format);
  return std::string(buffer.data(), buffer.size());
}

class PlanCodecExamples : public ::testing::TestWithParam<std::string> {};

/// The plan with its source positions unknown, as its bytes alone give it.
Plan withoutPositions(Plan plan) {
  for (PlanNode &node : plan.nodes)
    node.line = node.column = 0;
  for (PlanExternalOperator &op : plan.operators)
    op.line = op.column = 0;
  return plan;
}

TEST_P(PlanCodecExamples, RoundTripsExactlyAndReencodesByteIdentically) {
  Plan plan = examplePlan(GetParam());
  ASSERT_FALSE(plan.nodes.empty());
  std::string bytes = encodePlan(plan);
  auto decoded = decodePlan(bytes);
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  EXPECT_EQ(std::get<Plan>(decoded), withoutPositions(plan));
  EXPECT_EQ(encodePlan(std::get<Plan>(decoded)), bytes);
  EXPECT_EQ(encodePlan(plan), bytes) << "encoding must be deterministic";
  // The positions beside the bytes give the whole plan back.
  EXPECT_TRUE(applyPlanPositions(std::get<Plan>(decoded), bytes, encodePlanPositions(plan, bytes)));
  EXPECT_EQ(std::get<Plan>(decoded), plan);
}

TEST_P(PlanCodecExamples, LoadsPlansWithUnknownKeysFromANewerMinorVersion) {
  Plan plan = examplePlan(GetParam());
  auto decoded = decodePlan(withExtras(encodePlan(plan), std::make_pair(2u, 9u)));
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  Plan expected = withoutPositions(plan);
  expected.format = FormatVersion{2, 9};
  EXPECT_EQ(std::get<Plan>(decoded), expected);
}

TEST_P(PlanCodecExamples, RejectsAnUnknownMajorVersionWithAClearMessage) {
  std::string bytes = withExtras(encodePlan(examplePlan(GetParam())), std::make_pair(3u, 0u));
  EXPECT_EQ(errorOf(decodePlan(bytes)), "plan format 3.0 is not supported (this orch reads 1.x "
                                        "and 2.x); recompile it with orchc");
}

TEST_P(PlanCodecExamples, EveryTruncationIsRejectedAsCorrupt) {
  std::string bytes = encodePlan(examplePlan(GetParam()));
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string error = errorOf(decodePlan(bytes.substr(0, length)));
    ASSERT_EQ(error.rfind("corrupt plan: ", 0), 0u) << "length " << length << ": " << error;
  }
}

TEST_P(PlanCodecExamples, RandomCorruptionNeverCrashesAndWhatLoadsIsValid) {
  std::string bytes = encodePlan(examplePlan(GetParam()));
  std::mt19937 random(11);
  int rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string corrupted = bytes;
    for (int flips = 1 + int(random() % 3); flips > 0; --flips)
      corrupted[random() % corrupted.size()] = char(random() % 256);
    auto decoded = decodePlan(corrupted);
    if (auto *error = std::get_if<PlanDecodeError>(&decoded)) {
      ++rejected;
      ASSERT_FALSE(error->message.empty());
    } else {
      ASSERT_EQ(validatePlan(std::get<Plan>(decoded)), std::nullopt);
    }
  }
  EXPECT_GT(rejected, 1500);
}

INSTANTIATE_TEST_SUITE_P(Examples, PlanCodecExamples,
                         ::testing::Values("pdf_to_markdown.orch", "clip_quality.orch"),
                         [](const ::testing::TestParamInfo<std::string> &example) {
                           return example.param.substr(0, example.param.find('.'));
                         });

// Found by the fuzzer: values computed from constants alone have no domain, and the plan the
// compiler writes for them must pass the reader's validation.
TEST(PlanCodecTest, ValuesComputedFromConstantsAloneSurviveTheCodec) {
  std::string error;
  std::optional<Plan> plan = orch::testing::compileText(R"(pipeline constants;
source docs = files("in/*.pdf") as Doc;
meta = { version: 2, tool: "orch" };
version = meta.version;
always = filter(meta, true);
sink jsonl(path: "out.jsonl", record: { path: docs.path, meta: always, version: version });
)",
                                                        &error);
  ASSERT_TRUE(plan) << error;
  for (const PlanNode &node : plan->nodes) {
    if (node.name == "meta" || node.name == "version" || node.name == "always") {
      EXPECT_EQ(node.domain, kNone) << node.name;
    }
  }
  auto decoded = decodePlan(encodePlan(*plan));
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  EXPECT_EQ(std::get<Plan>(decoded), withoutPositions(*plan));
}

// Found while hunting the same class of bug: nested expands in one expression must number the
// inner domain (the parent) first.
TEST(PlanCodecTest, NestedExpandsInOneExpressionGiveAValidDomainOrder) {
  std::string error;
  std::optional<Plan> plan = orch::testing::compileText(R"(pipeline nested;
source videos = files("in/*.mp4") as Video;
frames = expand(video.frames(expand(video.clips(videos)) as Clip)) as Frame;
flagged = filter(1, math.gt(image.sharpness(video.decode(frames)), 3.0));
sink jsonl(path: "o.jsonl", record: { n: list.len(reduce(frames)), flagged: list.len(reduce(flagged)) });
)",
                                                        &error);
  ASSERT_TRUE(plan) << error;
  ASSERT_EQ(plan->domains.size(), 3u);
  EXPECT_EQ(plan->domains[1].name, "Clip");
  EXPECT_EQ(plan->domains[2].name, "Frame");
  EXPECT_EQ(plan->domains[2].parent, 1u);
  for (const PlanNode &node : plan->nodes) {
    if (node.name == "flagged") {
      EXPECT_EQ(node.domain, 2u) << "a constant filtered by a Frame mask is per Frame";
    }
  }
  auto decoded = decodePlan(encodePlan(*plan));
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  EXPECT_EQ(std::get<Plan>(decoded), withoutPositions(*plan));
}

TEST(PlanCodecTest, AComputedNodeWithoutDomainNeedsConstantInputs) {
  std::optional<Plan> plan = orch::testing::compileExample("pdf_to_markdown.orch");
  ASSERT_TRUE(plan);
  for (PlanNode &node : plan->nodes)
    if (node.kind == NodeKind::Project)
      node.domain = kNone;
  EXPECT_EQ(validatePlan(*plan), "node 9 (project) has no domain");
}

TEST(PlanCodecTest, RejectsThingsThatAreNotPlans) {
  EXPECT_EQ(errorOf(decodePlan("")), "corrupt plan: the file is truncated");
  EXPECT_EQ(errorOf(decodePlan("\x93\x01\x02\x03")),
            "corrupt plan: not an Orch plan (the file is not a MessagePack map)");
  EXPECT_EQ(errorOf(decodePlan("\x81\xa1k\x01")),
            "corrupt plan: not an Orch plan (missing magic \"orch.plan\")");
  std::string bytes = encodePlan(examplePlan("clip_quality.orch"));
  EXPECT_EQ(errorOf(decodePlan(bytes + "x")), "corrupt plan: 1 unexpected bytes after the plan");
}

/// `bytes` (format 2) as a writer of format 1.1 wrote them: options the runtime decides as
/// `replicas` 0 and `checkpoint` true (not nil), and a line and column in every node.
void repackAsFormat1(const msgpack::object &object, Packer &out, bool inNodes = false) {
  if (object.type == msgpack::type::MAP) {
    const bool node = inNodes && findKey(object, "consumers");
    out.pack_map(object.via.map.size + (node ? 2 : 0));
    for (uint32_t i = 0; i < object.via.map.size; ++i) {
      const msgpack::object_kv &entry = object.via.map.ptr[i];
      const std::string_view key(entry.key.via.str.ptr, entry.key.via.str.size);
      out.pack(entry.key);
      if (key == "format") {
        out.pack_array(2), out.pack(1), out.pack(1);
      } else if (entry.val.type == msgpack::type::NIL && key == "replicas") {
        out.pack(0);
      } else if (entry.val.type == msgpack::type::NIL && key == "checkpoint") {
        out.pack(true);
      } else {
        repackAsFormat1(entry.val, out, key == "nodes");
      }
    }
    if (node)
      out.pack(std::string_view("line")), out.pack(7), out.pack(std::string_view("column")),
          out.pack(3);
    return;
  }
  if (object.type == msgpack::type::ARRAY) {
    out.pack_array(object.via.array.size);
    for (uint32_t i = 0; i < object.via.array.size; ++i)
      repackAsFormat1(object.via.array.ptr[i], out, inNodes);
    return;
  }
  out.pack(object);
}

TEST(PlanCodecTest, ReadsPlansOfFormat1AsTheyWereMeant) {
  std::optional<Plan> plan = orch::testing::compileText(R"(pipeline old;
source rows = jsonl("in.jsonl") as Doc;
a = test.identity(rows.id) { checkpoint: false };
b = test.identity(a) { replicas: 2 };
c = test.identity(b) { checkpoint: true };
sink jsonl(path: "out.jsonl", record: { id: test.identity(c) });
)");
  ASSERT_TRUE(plan);
  const std::string bytes = encodePlan(*plan);
  msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
  msgpack::sbuffer buffer;
  Packer out(buffer);
  repackAsFormat1(handle.get(), out);
  auto decoded = decodePlan(std::string_view(buffer.data(), buffer.size()));
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  const Plan &old = std::get<Plan>(decoded);
  EXPECT_EQ(old.format, (FormatVersion{1, 1}));
  ASSERT_EQ(old.calls.size(), 4u);
  // A 1.x `checkpoint` true was the default (small results); an explicit true did not exist.
  const CheckpointPolicy expected[] = {CheckpointPolicy::Never, CheckpointPolicy::SmallResults,
                                       CheckpointPolicy::SmallResults,
                                       CheckpointPolicy::SmallResults};
  for (size_t c = 0; c < old.calls.size(); ++c)
    EXPECT_EQ(old.calls[c].options.checkpoint, expected[c]) << old.calls[c].name;
  EXPECT_EQ(old.calls[0].options.replicas, CallOptions::kAutomaticReplicas);
  EXPECT_EQ(old.calls[1].options.replicas, 2);
  // Its positions are left unknown, and it is written again in the current format.
  EXPECT_EQ(old.nodes[0].line, 0u);
  EXPECT_EQ(decodePlan(encodePlan(old)).index(), 0u);
  Plan current = old;
  current.format = kCurrentFormat;
  EXPECT_EQ(std::get<Plan>(decodePlan(encodePlan(old))), current);
}

TEST(PlanCodecTest, AnUnfinishedRunJournaledWithItsFormat1PlanResumes) {
  // A run killed under the orch that wrote format 1.1 keeps its plan in the journal as 1.1
  // bytes, fingerprinted as such: this orch resumes it when that plan, read now, is this one.
  const char *program = R"(pipeline upgraded;
source rows = jsonl("in.jsonl") as Doc;
sink jsonl(path: "out.jsonl", record: { id: test.identity(rows.id) { batch: 4 } });
)";
  std::optional<Plan> plan = orch::testing::compileText(program);
  std::optional<Plan> other = orch::testing::compileText(
      std::string(program).replace(std::string(program).find("4"), 1, "8"));
  ASSERT_TRUE(plan && other);
  auto journalOf = [](const Plan &kept) {
    const std::string dir = ::testing::TempDir() + "/format1-journal";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string bytes = planMeaning(kept);
    msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
    msgpack::sbuffer buffer;
    Packer out(buffer);
    repackAsFormat1(handle.get(), out);
    const std::string old(buffer.data(), buffer.size());
    std::ofstream(dir + "/plan", std::ios::binary) << old;
    std::ofstream(dir + "/run") << "orch-run-journal 1\nplan " << sha256Hex(old) << "\ninputs "
                                << sha256Hex("the inputs") << "\nstate running\n";
    std::ofstream(dir + "/commits") << "a record\n";
    return dir;
  };
  std::string error;
  runtime::JournalOptions options;
  options.dir = journalOf(*plan);
  std::unique_ptr<runtime::RunJournal> journal =
      runtime::RunJournal::open(options, *plan, "the inputs", error);
  ASSERT_TRUE(journal) << error;
  EXPECT_TRUE(journal->resuming());
  journal.reset();
  // A journal of another program is still refused, saying what changed.
  options.dir = journalOf(*other);
  journal = runtime::RunJournal::open(options, *plan, "the inputs", error);
  EXPECT_FALSE(journal);
  EXPECT_NE(error.find("batch 8 → 4"), std::string::npos) << error;
}

TEST(PlanCodecTest, PositionsOfOtherBytesOrAnotherShapeAreIgnored) {
  const Plan plan = examplePlan("pdf_to_markdown.orch");
  const Plan other = examplePlan("pdf_text.orch");
  const std::string bytes = encodePlan(plan), otherBytes = encodePlan(other);
  Plan loaded = withoutPositions(plan);
  EXPECT_FALSE(applyPlanPositions(loaded, bytes, encodePlanPositions(other, otherBytes)));
  EXPECT_FALSE(applyPlanPositions(loaded, bytes, "not positions"));
  EXPECT_FALSE(applyPlanPositions(loaded, bytes, ""));
  // Tied to these bytes but for a plan of another shape (a damaged or forged file).
  EXPECT_FALSE(applyPlanPositions(loaded, bytes, encodePlanPositions(other, bytes)));
  EXPECT_EQ(loaded, withoutPositions(plan));
  EXPECT_TRUE(applyPlanPositions(loaded, bytes, encodePlanPositions(plan, bytes)));
  EXPECT_EQ(loaded, plan);
  EXPECT_EQ(sourceLocation(loaded, 12, 5), plan.sourcePath + ":12:5");
  EXPECT_EQ(sourceLocation(loaded, 0, 0), plan.sourcePath);
}

TEST(PlanCodecTest, LoadPlanFileReadsThePositionsBesideIt) {
  const Plan plan = examplePlan("pdf_to_markdown.orch");
  const std::string path = ::testing::TempDir() + "/positions-test.plan";
  const std::string bytes = encodePlan(plan);
  std::remove(positionsPathFor(path).c_str());
  std::ofstream(path, std::ios::binary) << bytes;
  auto alone = loadPlanFile(path);
  ASSERT_TRUE(std::holds_alternative<Plan>(alone)) << errorOf(alone);
  EXPECT_EQ(std::get<Plan>(alone), withoutPositions(plan));
  std::ofstream(positionsPathFor(path), std::ios::binary) << encodePlanPositions(plan, bytes);
  auto placed = loadPlanFile(path);
  ASSERT_TRUE(std::holds_alternative<Plan>(placed)) << errorOf(placed);
  EXPECT_EQ(std::get<Plan>(placed), plan);
  EXPECT_GT(std::get<Plan>(placed).nodes.back().line, 0u);
}

TEST(PlanCodecTest, LoadPlanFileUsesOnlyPositionsThatCanBeTheirs) {
  const std::string dir = ::testing::TempDir() + "/positions-guard";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // The program beside the plan, where the plan says its source is.
  const std::string text = orch::testing::readExample("pdf_to_markdown.orch");
  ASSERT_FALSE(text.empty());
  std::ofstream(dir + "/p.orch", std::ios::binary) << text;
  Plan plan = examplePlan("pdf_to_markdown.orch");
  plan.sourcePath = dir + "/p.orch";
  const std::string path = dir + "/p.plan", positions = positionsPathFor(path);
  const std::string bytes = encodePlan(plan);
  std::ofstream(path, std::ios::binary) << bytes;
  auto loadedLine = [&] {
    auto loaded = loadPlanFile(path);
    EXPECT_TRUE(std::holds_alternative<Plan>(loaded)) << errorOf(loaded);
    return std::holds_alternative<Plan>(loaded) ? std::get<Plan>(loaded).nodes.back().line : 0u;
  };
  // Written for the program as it is: used.
  std::ofstream(positions, std::ios::binary) << encodePlanPositions(plan, bytes, text);
  EXPECT_GT(loadedLine(), 0u);
  // ... and through a link to the plan, from beside its target.
  const std::string link = dir + "/link.plan";
  std::filesystem::create_symlink(path, link);
  auto linked = loadPlanFile(link);
  ASSERT_TRUE(std::holds_alternative<Plan>(linked));
  EXPECT_EQ(std::get<Plan>(linked), plan);
  // Written for another text of the program (it was formatted since): not used.
  std::ofstream(positions, std::ios::binary | std::ios::trunc)
      << encodePlanPositions(plan, bytes, text + "// a comment added since\n");
  EXPECT_EQ(loadedLine(), 0u);
  // Too big to be positions, a FIFO (reading it would wait for ever), a device: not read.
  std::ofstream(positions, std::ios::binary | std::ios::trunc)
      << encodePlanPositions(plan, bytes) << std::string(1 << 20, '\0');
  EXPECT_EQ(loadedLine(), 0u);
  std::filesystem::remove(positions);
  ASSERT_EQ(::mkfifo(positions.c_str(), 0600), 0);
  EXPECT_EQ(loadedLine(), 0u);
  std::filesystem::remove(positions);
  std::filesystem::create_symlink("/dev/zero", positions);
  EXPECT_EQ(loadedLine(), 0u);
}

TEST(PlanCodecTest, LoadPlanFileNamesTheFileInErrors) {
  EXPECT_EQ(errorOf(loadPlanFile("/nonexistent/x.plan")),
            "cannot read '/nonexistent/x.plan': No such file or directory");
  std::string path = ::testing::TempDir() + "/codec-test.plan";
  {
    std::ofstream out(path, std::ios::binary);
    out << encodePlan(examplePlan("pdf_to_markdown.orch")).substr(0, 40);
  }
  EXPECT_EQ(errorOf(loadPlanFile(path)), path + ": corrupt plan: the file is truncated");
}

/// A plan that decodes fine except for one field, to check what validation catches.
class PlanValidationTest : public ::testing::Test {
protected:
  void SetUp() override { plan = examplePlan("pdf_to_markdown.orch"); }

  std::string rejection() {
    std::optional<std::string> problem = validatePlan(plan);
    std::string viaCodec = errorOf(decodePlan(encodePlan(plan)));
    EXPECT_EQ(viaCodec, problem ? "invalid plan: " + *problem : "");
    return problem.value_or("");
  }

  Plan plan;
};

TEST_F(PlanValidationTest, TheCompiledPlanIsValid) { EXPECT_EQ(rejection(), ""); }

TEST_F(PlanValidationTest, RejectsAnInputThatDoesNotComeFirst) {
  plan.nodes[1].inputs[0] = 5;
  computeTriggerIndexes(plan);
  EXPECT_EQ(rejection(), "node 1 (invoke) reads node 5, which does not come before it");
}

TEST_F(PlanValidationTest, RejectsATriggerIndexThatDoesNotMatch) {
  plan.nodes[0].consumers.pop_back();
  EXPECT_EQ(rejection(), "the trigger index of node 0 does not match the nodes that read it");
}

TEST_F(PlanValidationTest, RejectsAReduceThatDoesNotGoToTheParent) {
  for (PlanNode &node : plan.nodes)
    if (node.kind == NodeKind::Reduce)
      node.domain = 1;
  EXPECT_EQ(rejection(), "node 7 (reduce) does not gather into the parent of its input's domain");
}

TEST_F(PlanValidationTest, RejectsADomainWhoseParentComesLater) {
  plan.domains[0].parent = 1;
  EXPECT_EQ(rejection().rfind("domain 0 has parent 1", 0), 0u);
}

TEST_F(PlanValidationTest, RejectsOutOfRangeReferencesAndOptions) {
  plan.nodes[1].index = 99;
  EXPECT_EQ(rejection(), "node 1 (invoke) invokes call 99, which does not exist");
  plan = examplePlan("pdf_to_markdown.orch");
  plan.calls[1].options.batch = 0;
  EXPECT_EQ(rejection(), "call 1 has out-of-range options");
  plan = examplePlan("pdf_to_markdown.orch");
  plan.sinks[0].inputs[0] = 2; // a Page value into a Doc sink
  computeTriggerIndexes(plan);
  EXPECT_EQ(rejection(), "sink 0 reads node 2, which is not in the sink's domain");
  plan = examplePlan("pdf_to_markdown.orch");
  plan.sources[0].domain = 1;
  EXPECT_EQ(rejection(), "source 0 does not feed a node of its root domain");
  plan = examplePlan("pdf_to_markdown.orch");
  plan.sinks[0].inputs[0] = 1000;
  computeTriggerIndexes(plan);
  EXPECT_EQ(rejection(), "sink 0 reads node 1000, which does not exist");
}

} // namespace
} // namespace orch::plan
