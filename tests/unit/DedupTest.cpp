// Deduplication (docs/runtime.md, "Deduplication"): MinHash signatures against answers of the
// Python reference (bench/dedup/reference.py, NumPy and the xxhash module), similarity
// estimates against exact Jaccard similarity, the indexes, and Dedup nodes in the engine: the
// first in source order survives whatever order batches complete in, under every dispatch
// policy, and a run that starts from an earlier run's decisions decides the same.
#include "EngineDriver.h"
#include "EngineTestPlans.h"

#include "../../runtime/engine/src/DedupIndex.h"
#include "../../runtime/outputs/src/GrainCheckpoints.h"
#include "orch/runtime/values/MinHash.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <set>
#include <unistd.h>

namespace orch::runtime {
namespace {

TEST(MinHashTest, SignaturesEqualThePythonReference) {
  const MinHashPermutations permutations(MinHashShape{5, 128, 1});
  // reference.signature(...) of bench/dedup/reference.py.
  const std::vector<uint32_t> fox = minhashSignature(
      "The quick brown fox jumps over the lazy dog, twice: the quick brown fox!", 5, permutations);
  EXPECT_EQ(std::vector<uint32_t>(fox.begin(), fox.begin() + 6),
            (std::vector<uint32_t>{357037292, 457420700, 113551174, 73552668, 78249721, 60061348}));
  // Fewer words than a shingle: one shingle of them all.
  const std::vector<uint32_t> short_ = minhashSignature("Hi there", 5, permutations);
  EXPECT_EQ(std::vector<uint32_t>(short_.begin(), short_.begin() + 4),
            (std::vector<uint32_t>{236204916, 2600341245u, 1645102410, 2289465378u}));
  // No words: every minimum is the largest value.
  EXPECT_EQ(minhashSignature(" ,.; ", 5, permutations), std::vector<uint32_t>(128, 0xFFFFFFFFu));
  EXPECT_EQ(decodeSignature(encodeSignature(fox)), fox);
}

TEST(MinHashTest, ShinglesIgnoreCaseAndPunctuation) {
  EXPECT_EQ(shingleHashes("Hello, World! foo", 2), shingleHashes("hello world   FOO.", 2));
  EXPECT_EQ(shingleHashes("a b c a b", 2).size(), 3u); // "a b" counts once
  EXPECT_NE(shingleHashes("hello world", 2), shingleHashes("world hello", 2));
}

/// Exact Jaccard similarity of two word lists' 3-gram shingles.
double exactJaccard(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b) {
  std::set<uint32_t> sa(a.begin(), a.end()), sb(b.begin(), b.end()), both;
  std::set_union(sa.begin(), sa.end(), sb.begin(), sb.end(), std::inserter(both, both.end()));
  return double(sa.size() + sb.size() - both.size()) / double(both.size());
}

TEST(MinHashTest, EstimatesAreNearTheExactSimilarity) {
  const MinHashPermutations permutations(MinHashShape{3, 128, 7});
  std::mt19937 random(3);
  for (int trial = 0; trial < 40; ++trial) {
    std::string a, b;
    const int edits = trial % 20;
    for (int w = 0; w < 200; ++w) {
      const std::string word = "w" + std::to_string(random() % 5000);
      a += word + " ";
      b += (w % 20 < edits ? "x" + std::to_string(random()) : word) + " ";
    }
    const std::vector<uint8_t> sa = sketchOf(minhashSignature(a, 3, permutations));
    const std::vector<uint8_t> sb = sketchOf(minhashSignature(b, 3, permutations));
    const double exact = exactJaccard(shingleHashes(a, 3), shingleHashes(b, 3));
    EXPECT_NEAR(estimateSimilarity(sa.data(), sb.data(), 128), exact, 0.15) << "edits " << edits;
  }
}

TEST(DedupIndexTest, ExactFindsEqualKeysAcrossGrowth) {
  ExactIndex index;
  for (uint32_t i = 0; i < 10000; ++i)
    index.insert(hashKey("key " + std::to_string(i)), i);
  EXPECT_EQ(index.find(hashKey("key 0")), std::vector<uint32_t>{0});
  EXPECT_EQ(index.find(hashKey("key 9999")), std::vector<uint32_t>{9999});
  EXPECT_TRUE(index.find(hashKey("key 10000")).empty());
  index.insert(hashKey("key 5"), 10000); // a later survivor of a key whose first was retracted
  EXPECT_EQ(index.find(hashKey("key 5")), (std::vector<uint32_t>{5, 10000}));
}

TEST(DedupIndexTest, NearFindsTheSimilarSurvivorsOnly) {
  const MinHashPermutations permutations(MinHashShape{2, 128, 1});
  NearIndex index(128, 16, 0.8);
  std::string base;
  for (int w = 0; w < 100; ++w)
    base += "word" + std::to_string(w) + " ";
  index.insert(minhashSignature("nothing like the others at all here", 2, permutations), 0);
  index.insert(minhashSignature(base, 2, permutations), 1);
  index.insert(minhashSignature(base + "tail", 2, permutations), 2);
  const auto matches = index.find(minhashSignature(base + "other", 2, permutations));
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0].survivor, 1u);
  EXPECT_EQ(matches[1].survivor, 2u);
  EXPECT_GT(matches[0].similarity, 0.9);
  EXPECT_TRUE(index
                  .find(minhashSignature("an unrelated text about something else entirely", 2,
                                         permutations))
                  .empty());
}

TEST(DedupIndexTest, NearConfirmsByTheExactSimilarityWhenAsked) {
  const MinHashPermutations permutations(MinHashShape{1, 128, 1});
  // 10 words and 9 of them again: J = 9 / 10 exactly, whatever the estimate says.
  const std::string a = "a b c d e f g h i j", b = "a b c d e f g h i";
  NearIndex index(128, 32, 0.85, true);
  index.insert(minhashSignature(a, 1, permutations), 0, shingleHashes(a, 1));
  const auto matches = index.find(minhashSignature(b, 1, permutations), shingleHashes(b, 1));
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_DOUBLE_EQ(matches[0].similarity, 0.9);
  NearIndex stricter(128, 32, 0.95, true);
  stricter.insert(minhashSignature(a, 1, permutations), 0, shingleHashes(a, 1));
  EXPECT_TRUE(stricter.find(minhashSignature(b, 1, permutations), shingleHashes(b, 1)).empty());
}

TEST(DedupIndexTest, HammingFindsEveryHashWithinTheDistance) {
  HammingIndex index(6);
  std::mt19937_64 random(5);
  std::vector<uint64_t> stored;
  for (uint32_t i = 0; i < 2000; ++i) {
    stored.push_back(random());
    index.insert(stored.back(), i);
  }
  // A hash 6 bits from stored[7] (wherever the bits are) is found, one 7 bits away is not.
  for (int trial = 0; trial < 200; ++trial) {
    uint64_t near = stored[7], far = stored[7];
    for (int flipped = 0; flipped < 7;) {
      const uint64_t bit = uint64_t(1) << (random() % 64);
      if ((near ^ stored[7]) & bit)
        continue;
      if (flipped < 6)
        near ^= bit;
      far ^= bit;
      ++flipped;
    }
    bool found = false;
    for (const HammingIndex::Match &match : index.find(near))
      found |= match.survivor == 7 && match.distance == 6;
    EXPECT_TRUE(found) << "trial " << trial;
    for (const HammingIndex::Match &match : index.find(far))
      EXPECT_NE(match.survivor, 7u) << "trial " << trial;
  }
  EXPECT_EQ(parseHexHash("c3a1000000000001"), 0xc3a1000000000001ULL);
  EXPECT_EQ(parseHexHash("xyz"), std::nullopt);
  EXPECT_EQ(parseHexHash("00000000000000000"), std::nullopt); // 17 digits
}

// --- Dedup nodes in the engine --------------------------------------------------------------

const char *kPagesByNumber = R"(
pipeline pages;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
number = test.identity(ordinal(pages)) { batch: 3 };
first = dedup.exact(number);
sink jsonl(path: "out.jsonl", record: { id: broadcast(rows.id, pages), page: first });
)";

/// Which (row, page) each run kept, and its duplicates, in source order.
struct Decisions {
  std::vector<std::pair<uint64_t, int64_t>> kept;
  std::vector<DuplicateRow> duplicates;
  friend bool operator==(const Decisions &, const Decisions &) = default;
};

Decisions runPages(const plan::Plan &plan, EngineOptions options, testing::DriverOptions driver) {
  orch::testing::EngineTestOperators ops;
  testing::EngineDriver engine(plan, options, ops.registry, driver);
  std::vector<Value> docs;
  for (int64_t d = 0; d < 12; ++d)
    docs.push_back(Value::record({{"id", Value::integer(d)}, {"n", Value::integer(d % 5 + 1)}}));
  testing::DriverRun run = engine.run(docs);
  EXPECT_EQ(run.error, "ok");
  std::sort(run.roots.begin(), run.roots.end(),
            [](const RootResult &a, const RootResult &b) { return a.sourceRow < b.sourceRow; });
  Decisions decisions;
  for (const RootResult &root : run.roots) {
    for (const SinkRow &row : root.rows)
      if (row.status == RowStatus::Written)
        decisions.kept.emplace_back(root.sourceRow, row.values[0].field("page")->asInt());
    for (DuplicateRow duplicate : root.duplicates) {
      duplicate.path.insert(duplicate.path.begin(), uint32_t(root.sourceRow));
      decisions.duplicates.push_back(duplicate);
    }
  }
  return decisions;
}

TEST(DedupEngineTest, TheFirstInSourceOrderSurvivesWhateverTheOrderOfCompletion) {
  const plan::Plan plan = orch::testing::compileRunnable(kPagesByNumber);
  const Decisions reference = runPages(plan, {}, {1, 1, 0.0, true});
  // Docs have 1, 2, 3, 4, 5, 1, 2, ... pages (33 in all): page k survives in the first doc that has
  // it.
  ASSERT_EQ(reference.kept.size(), 5u);
  for (int64_t k = 0; k < 5; ++k)
    EXPECT_EQ(reference.kept[k], (std::pair<uint64_t, int64_t>(k, k)));
  ASSERT_EQ(reference.duplicates.size(), 33u - 5u);
  EXPECT_EQ(reference.duplicates[0].survivorRow, 0u); // doc 1's page 0 repeats doc 0's
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    EngineOptions options;
    options.readyOrder = seed % 2 ? ReadyOrder::Unordered : ReadyOrder::Fifo;
    options.batching = seed % 3 == 0 ? BatchingScope::ParentBound : BatchingScope::CrossParent;
    options.probeFirst = seed == 4;
    options.maxLiveRoots = seed == 5 ? 2 : 4096;
    options.gather = seed == 6 ? GatherMode::GlobalBarrier : GatherMode::Lineage;
    options.seed = seed;
    EXPECT_EQ(runPages(plan, options, {seed, 6, seed == 2 ? 0.2 : 0.0, false}), reference)
        << "seed " << seed;
  }
}

TEST(DedupEngineTest, AnEarlierRunsDecisionsAreKeptAndItsSurvivorsIndexed) {
  const plan::Plan plan = orch::testing::compileRunnable(kPagesByNumber);
  std::vector<DedupDecision> made;
  EngineOptions recording;
  recording.onDedupDecision = [&](const DedupDecision &decision) { made.push_back(decision); };
  const Decisions reference = runPages(plan, recording, {2, 4, 0.0, false});
  ASSERT_EQ(made.size(), 33u);
  // Only the first half of the decisions were kept (a run killed midway), and one of them is
  // changed: the resumed run must take it as it was, not decide it again.
  made.resize(18);
  ASSERT_TRUE(made[0].survivor);
  EngineOptions resumed;
  resumed.dedupHistory = made;
  EXPECT_EQ(runPages(plan, resumed, {5, 4, 0.0, false}), reference);
  resumed.dedupHistory[1].survivor = true; // doc 1's page 0 kept, as if an earlier run had
  resumed.dedupHistory[1].fingerprint = resumed.dedupHistory[0].fingerprint;
  const Decisions changed = runPages(plan, resumed, {5, 4, 0.0, false});
  EXPECT_EQ(changed.kept.size(), reference.kept.size() + 1);
}

// A failed row takes no part: a key whose first occurrence is in a row that fails survives in
// the next row that has it, whatever the order rows finish in (the later row waits for the
// failed one's end before it is decided).
const char *kFailedFirst = R"(
pipeline failed_first;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
number = test.identity(ordinal(pages)) { batch: 2 };
first = dedup.exact(number);
checked = test.fail({ page: first, bad: broadcast(rows.bad, pages) }, ordinals: "1", when: "bad") { batch: 2 };
sink jsonl(path: "out.jsonl", record: { id: broadcast(rows.id, pages), page: checked });
)";

TEST(DedupEngineTest, AFailedRowsKeysAreRetractedWhateverTheTiming) {
  const plan::Plan plan = orch::testing::compileRunnable(kFailedFirst);
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    orch::testing::EngineTestOperators ops;
    EngineOptions options;
    options.readyOrder = seed % 2 ? ReadyOrder::Unordered : ReadyOrder::Fifo;
    options.seed = seed;
    testing::EngineDriver engine(plan, options, ops.registry, {seed, 1 + seed % 5, 0.0, false});
    // Row 0 (2 pages) fails at its page 1, after deciding; rows 1 and 2 have 3 pages each:
    // row 1's pages survive (row 0's are retracted), and all of row 2's repeat row 1's.
    std::vector<Value> docs;
    for (int64_t d = 0; d < 3; ++d)
      docs.push_back(Value::record({{"id", Value::integer(d)},
                                    {"n", Value::integer(d == 0 ? 2 : 3)},
                                    {"bad", Value::boolean(d == 0)}}));
    testing::DriverRun run = engine.run(docs);
    ASSERT_EQ(run.error, "ok");
    std::sort(run.roots.begin(), run.roots.end(),
              [](const RootResult &a, const RootResult &b) { return a.sourceRow < b.sourceRow; });
    ASSERT_EQ(run.roots.size(), 3u);
    EXPECT_EQ(run.roots[0].status, RootStatus::Failed) << "seed " << seed;
    EXPECT_TRUE(run.roots[0].duplicates.empty());
    EXPECT_EQ(run.roots[1].status, RootStatus::Written) << "seed " << seed;
    EXPECT_TRUE(run.roots[1].duplicates.empty()) << "seed " << seed;
    ASSERT_EQ(run.roots[2].duplicates.size(), 3u) << "seed " << seed;
    for (uint32_t p = 0; p < 3; ++p) {
      EXPECT_EQ(run.roots[2].duplicates[p].survivorRow, 1u) << "seed " << seed;
      EXPECT_EQ(run.roots[2].duplicates[p].survivorPath, std::vector<uint32_t>{p});
    }
    EXPECT_EQ(engine.engine().stats().duplicates, 3u);
  }
}

// Under the global barrier no row finishes before every grain of the child domain is sealed,
// so a duplicate that waited for its survivor's row (behind a Call after the dedup) would never
// be decided: there it does not wait, and the run completes.
TEST(DedupEngineTest, TheGlobalBarrierDoesNotWaitForASurvivorsRow) {
  const plan::Plan plan = orch::testing::compileRunnable(R"(
pipeline barrier;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
v = test.identity(dedup.exact(test.identity(ordinal(pages)))) { batch: 2 };
sink jsonl(path: "out.jsonl", record: { id: rows.id, u: reduce(v) });
)");
  orch::testing::EngineTestOperators ops;
  EngineOptions options;
  options.gather = GatherMode::GlobalBarrier;
  testing::EngineDriver engine(plan, options, ops.registry, {3, 4, 0.0, false});
  std::vector<Value> docs;
  for (int64_t d = 0; d < 3; ++d)
    docs.push_back(Value::record(
        {{"id", Value::integer(d)}, {"n", Value::integer(3)}, {"bad", Value::boolean(false)}}));
  const testing::DriverRun run = engine.run(docs);
  EXPECT_EQ(run.error, "ok");
  ASSERT_EQ(run.roots.size(), 3u);
  EXPECT_EQ(engine.engine().stats().duplicates, 6u); // rows 1 and 2 repeat row 0
}

// The run journal keeps every decision, however big (confirm: "exact" keeps a whole text's
// shingle hashes), and tells the engine which rows are done (their decisions need no keeping).
TEST(DedupJournalTest, DecisionsBiggerThanAValueComeBackWithTheirRowsState) {
  const plan::Plan plan = orch::testing::compileRunnable(kPagesByNumber);
  uint32_t dedupNode = 0;
  while (plan.nodes[dedupNode].kind != plan::NodeKind::Dedup)
    ++dedupNode;
  char path[] = "/tmp/orch-dedup-journal-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  DedupDecision big;
  big.node = dedupNode;
  big.key = 42;
  big.sourceRow = 3;
  big.path = {1};
  big.fingerprint = std::string(200 * 1024, 'x'); // over GrainCheckpoints::kValueLimit
  DedupDecision small = big;
  small.key = 43;
  small.sourceRow = 4;
  small.fingerprint = "abc";
  {
    GrainCheckpoints writer(plan);
    writer.attach(fd);
    writer.keepDecision(big);
    writer.keepDecision(small);
  } // flushed and closed
  GrainCheckpoints reader(plan);
  reader.load(
      path, [](uint32_t, uint64_t row) { return row != 3; }, // row 3 is done
      [](uint32_t, uint64_t) { return false; });
  ::unlink(path);
  const std::vector<DedupDecision> loaded = reader.takeDecisions();
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].fingerprint, big.fingerprint);
  EXPECT_TRUE(loaded[0].rowDone);
  EXPECT_EQ(loaded[1].fingerprint, "abc");
  EXPECT_FALSE(loaded[1].rowDone);
}

} // namespace
} // namespace orch::runtime
