// The run journal keeps each sink's resume record as the sink wrote it (any bytes), hands the
// records back in commit order with each row's fate, lets the sinks say what their records
// become under --retry-failed, and reads a format-1 journal (extents) as extent records. The
// extent records the standard sinks keep: their text, folding and cutting, known answers.
#include "CompileExample.h"

#include "orch/runtime/outputs/RunJournal.h"
#include "orch/runtime/outputs/SinkExtents.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

const char *kTwoSinks = R"(pipeline journaled;
source rows = jsonl("in.jsonl") as Doc;
sink jsonl(path: "a.jsonl", record: { id: rows.id });
sink jsonl(path: "b.jsonl", record: { id: rows.id });
)";

struct Journaled {
  plan::Plan plan;
  std::string dir;
};

Journaled freshDirectory(const std::string &name) {
  std::optional<plan::Plan> plan = testing::compileText(kTwoSinks);
  EXPECT_TRUE(plan);
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  return {plan ? *plan : plan::Plan{}, dir};
}

std::unique_ptr<RunJournal> openJournal(const Journaled &at, bool retryFailed = false) {
  JournalOptions options;
  options.dir = at.dir;
  options.retryFailed = retryFailed;
  std::string error;
  std::unique_ptr<RunJournal> journal = RunJournal::open(options, at.plan, "inputs", error);
  EXPECT_TRUE(journal) << error;
  return journal;
}

RootResult root(uint64_t row, RootStatus status = RootStatus::Written) {
  RootResult result;
  result.sourceRow = row;
  result.status = status;
  return result;
}

/// Each record of `history`, with its fate as a letter: k(ept), a(gain), r(etired).
std::vector<std::pair<std::string, char>> recordsOf(const SinkHistory *history) {
  std::vector<std::pair<std::string, char>> records;
  if (!history)
    return records;
  history->forEach([&](const SinkRecord &record) {
    records.emplace_back(std::string(record.bytes), record.fate == RecordFate::Kept        ? 'k'
                                                    : record.fate == RecordFate::RunsAgain ? 'a'
                                                                                           : 'r');
  });
  return records;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Committed {
  uint64_t row;
  std::vector<std::string> records;
  uint64_t errorsSize = 0;
};

/// A run that committed `rows` and was killed.
void killedAfterCommitting(const Journaled &at, const std::vector<Committed> &rows) {
  std::unique_ptr<RunJournal> journal = openJournal(at);
  ASSERT_TRUE(journal);
  std::string error;
  ASSERT_TRUE(journal->start(error)) << error;
  for (const Committed &row : rows)
    ASSERT_TRUE(journal->commit(root(row.row), row.records, row.errorsSize, error)) << error;
}

/// The journal's header says format 1 (what orch before opaque records wrote).
void headerSaysFormat1(const Journaled &at) {
  const fs::path run = fs::path(at.dir) / "run";
  std::string header = readFile(run);
  ASSERT_EQ(header.rfind("orch-run-journal 2\n", 0), 0u) << header;
  header.replace(0, 18, "orch-run-journal 1");
  std::ofstream(run, std::ios::trunc) << header;
}

/// A sink that rewrites records as the test says (recordAfterRetry), and writes nothing.
class RewritingSink : public RowSink {
public:
  explicit RewritingSink(std::function<std::string(const SinkRecord &)> rewrite)
      : rewrite_(std::move(rewrite)) {}
  void write(std::span<const Value>) override {}
  std::string recordAfterRetry(const SinkRecord &record) const override { return rewrite_(record); }

private:
  std::function<std::string(const SinkRecord &)> rewrite_;
};

TEST(RunJournalTest, SinksRecordsComeBackByteForByteInCommitOrder) {
  const Journaled at = freshDirectory("journal-opaque");
  // Bytes a line-based journal must not take apart: spaces, line breaks, NUL, '%', '=', "".
  const std::string odd("a b\nc\0%=\r\t\x7f\xff", 13);
  std::string every;
  for (int c = 0; c < 256; ++c)
    every += char(c);
  {
    std::unique_ptr<RunJournal> journal = openJournal(at);
    ASSERT_TRUE(journal);
    EXPECT_FALSE(journal->resuming());
    EXPECT_EQ(journal->sinkHistory(0), nullptr); // afresh
    std::string error;
    ASSERT_TRUE(journal->start(error)) << error;
    ASSERT_TRUE(journal->commit(root(0), {odd, ""}, 0, error)) << error;
    ASSERT_TRUE(journal->commit(root(1, RootStatus::Failed), {"", every}, 0, error)) << error;
    ASSERT_TRUE(journal->commit(root(2, RootStatus::Dropped), {"=", "%41"}, 0, error)) << error;
  } // killed: never completed
  std::unique_ptr<RunJournal> journal = openJournal(at);
  ASSERT_TRUE(journal);
  EXPECT_TRUE(journal->resuming());
  EXPECT_EQ(journal->done(), 3u);
  using Records = std::vector<std::pair<std::string, char>>;
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)), (Records{{odd, 'k'}, {"", 'k'}, {"=", 'k'}}));
  EXPECT_EQ(recordsOf(journal->sinkHistory(1)), (Records{{"", 'k'}, {every, 'k'}, {"%41", 'k'}}));
  EXPECT_EQ(journal->sinkHistory(2), nullptr);
}

TEST(RunJournalTest, ARetryAsksEachSinkWhatItsRecordsBecome) {
  const Journaled at = freshDirectory("journal-retry");
  {
    std::unique_ptr<RunJournal> journal = openJournal(at);
    ASSERT_TRUE(journal);
    std::string error;
    ASSERT_TRUE(journal->start(error)) << error;
    ASSERT_TRUE(journal->commit(root(0), {"w0", "W0"}, 10, error));
    // Failed, but published something in sink b (a shard it ended): it stays, retired.
    ASSERT_TRUE(journal->commit(root(1, RootStatus::Failed), {"f1", "F1"}, 20, error));
    // Failed and published nothing anywhere: its record goes.
    ASSERT_TRUE(journal->commit(root(2, RootStatus::Failed), {"f2", "F2"}, 30, error));
    ASSERT_TRUE(journal->commit(root(3), {"w3", "W3"}, 40, error));
    journal->complete();
  }
  using Records = std::vector<std::pair<std::string, char>>;
  std::unique_ptr<RunJournal> journal = openJournal(at, /*retryFailed=*/true);
  ASSERT_TRUE(journal);
  ASSERT_TRUE(journal->resuming());
  EXPECT_EQ(journal->done(), 2u);
  EXPECT_EQ(journal->errorsJournalKeep(), 0u);
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)),
            (Records{{"w0", 'k'}, {"f1", 'a'}, {"f2", 'a'}, {"w3", 'k'}}));
  std::vector<std::unique_ptr<RowSink>> sinks;
  // Sink a leaves nothing of a retried row; sink b keeps row 1's "shard".
  sinks.push_back(std::make_unique<RewritingSink>([](const SinkRecord &record) {
    return record.fate == RecordFate::RunsAgain ? std::string() : "a:" + std::string(record.bytes);
  }));
  sinks.push_back(std::make_unique<RewritingSink>([](const SinkRecord &record) {
    return record.bytes == "F2" ? std::string() : "b:" + std::string(record.bytes);
  }));
  std::string error;
  ASSERT_TRUE(journal->beginTakeUp(sinks, error)) << error;
  EXPECT_TRUE(fs::exists(fs::path(at.dir) / "retry")); // the intent, before any sink cuts
  ASSERT_TRUE(journal->start(error)) << error;
  EXPECT_FALSE(fs::exists(fs::path(at.dir) / "retry"));
  ASSERT_TRUE(journal->commit(root(1), {"a1", "b1"}, 0, error));
  journal.reset(); // killed again

  journal = openJournal(at);
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->done(), 3u); // 0, 3 and 1; 2 runs again
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)),
            (Records{{"a:w0", 'k'}, {"", 'r'}, {"a:w3", 'k'}, {"a1", 'k'}}));
  EXPECT_EQ(recordsOf(journal->sinkHistory(1)),
            (Records{{"b:W0", 'k'}, {"b:F1", 'r'}, {"b:W3", 'k'}, {"b1", 'k'}}));
}

TEST(RunJournalTest, AFormat1JournalResumesWithItsExtentsAsRecords) {
  const Journaled at = freshDirectory("journal-format1");
  // Written by today's orch, to have its plan and fingerprints; then turned into format 1.
  killedAfterCommitting(at, {{0, {"x", "y"}}});
  headerSaysFormat1(at);
  const fs::path run = fs::path(at.dir) / "run", commits = fs::path(at.dir) / "commits";
  // Format 1: per sink "BEGIN END COUNT NAME..." (names %-escaped); a last line cut short.
  std::ofstream(commits, std::ios::trunc) << "0 0 w 7 2 0 12 0 0 0 2 a%20b.txt c%25d.txt\n"
                                          << "0 1 f 9 2 12 30 0 0 0 0\n"
                                          << "0 2 w 11 2 30 4";
  std::unique_ptr<RunJournal> journal = openJournal(at);
  ASSERT_TRUE(journal);
  ASSERT_TRUE(journal->resuming());
  EXPECT_EQ(journal->done(), 2u);
  EXPECT_EQ(journal->errorsJournalKeep(), 9u);
  using Records = std::vector<std::pair<std::string, char>>;
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)), (Records{{"0 12", 'k'}, {"12 30", 'k'}}));
  EXPECT_EQ(recordsOf(journal->sinkHistory(1)),
            (Records{{"0 0 a%20b.txt c%25d.txt", 'k'}, {"0 0", 'k'}}));
  EXPECT_EQ(decodeExtent(recordsOf(journal->sinkHistory(1))[0].first)->names,
            (std::vector<std::string>{"a b.txt", "c%d.txt"}));
  // Resumed, the journal is format 2 throughout: the kept records rewritten, new ones appended.
  std::string error;
  ASSERT_TRUE(journal->start(error)) << error;
  ASSERT_TRUE(journal->commit(root(2), {"30 40", "0 0"}, 13, error));
  journal.reset();
  EXPECT_EQ(readFile(run).rfind("orch-run-journal 2\n", 0), 0u);
  journal = openJournal(at);
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->done(), 3u);
  EXPECT_EQ(journal->errorsJournalKeep(), 13u);
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)),
            (Records{{"0 12", 'k'}, {"12 30", 'k'}, {"30 40", 'k'}}));
}

TEST(RunJournalTest, AFormat1ResumeKilledAfterRewritingItsRecordsResumesThemAll) {
  // Resuming a format-1 journal rewrites `commits` in format 2 before it writes `run`'s new
  // header: a kill in between leaves a format-1 header over format-2 records. Each record
  // says its format: every committed row is still done (it was "0 rows done", all run again).
  const Journaled at = freshDirectory("journal-format1-killed");
  killedAfterCommitting(at, {{0, {"0 12", "0 0 a.txt"}, 3}, {1, {"12 30", "0 0"}, 5}});
  headerSaysFormat1(at);
  std::unique_ptr<RunJournal> journal = openJournal(at);
  ASSERT_TRUE(journal);
  ASSERT_TRUE(journal->resuming());
  EXPECT_EQ(journal->done(), 2u);
  EXPECT_EQ(journal->errorsJournalKeep(), 5u);
  using Records = std::vector<std::pair<std::string, char>>;
  EXPECT_EQ(recordsOf(journal->sinkHistory(1)), (Records{{"0 0 a.txt", 'k'}, {"0 0", 'k'}}));
  std::string error;
  ASSERT_TRUE(journal->start(error)) << error;
  journal.reset();
  journal = openJournal(at);
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->done(), 2u);
}

TEST(RunJournalTest, ADamagedLineBeforeTheLastIsNotSilentlyTakenForACrash) {
  // A crash cuts only the commits file's last line short: that one goes without a word. A
  // damaged line with lines after it (changed by hand, or on disk) used to end the resume there
  // just as silently: the rows after it ran again and nobody was told why.
  const Journaled at = freshDirectory("journal-damaged");
  killedAfterCommitting(
      at, {{0, {"0 3", "0 3"}}, {1, {"3 6", "3 6"}}, {2, {"6 9", "6 9"}}, {3, {"9 12", "9 12"}}});
  const fs::path commits = fs::path(at.dir) / "commits";
  const std::string whole = readFile(commits);
  {
    // A torn last line: what a crash leaves.
    std::ofstream(commits, std::ios::trunc) << whole << "w 0 4 0 =9%20";
    std::unique_ptr<RunJournal> journal = openJournal(at);
    ASSERT_TRUE(journal);
    EXPECT_EQ(journal->done(), 4u);
    EXPECT_EQ(journal->notice(), "");
  }
  std::vector<std::string> lines;
  std::istringstream split(whole);
  for (std::string line; std::getline(split, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  lines[1] = "w 0 1 0 not a record";
  std::ofstream out(commits, std::ios::trunc);
  for (const std::string &line : lines)
    out << line << "\n";
  out.close();
  std::unique_ptr<RunJournal> journal = openJournal(at);
  ASSERT_TRUE(journal);
  EXPECT_EQ(journal->done(), 1u) << "the rows from the damaged line on run again";
  EXPECT_NE(journal->notice().find("damaged at line 2"), std::string::npos) << journal->notice();
  EXPECT_NE(journal->notice().find("it and the 2 lines after it"), std::string::npos)
      << journal->notice();
  EXPECT_EQ(recordsOf(journal->sinkHistory(0)).size(), 1u);
}

TEST(RunJournalTest, AFailedRowsKeptValuesOutliveAPlainResumeForTheRetry) {
  // A run keeps the values of a failed row's finished grains and is killed; a plain resume skips
  // the failed row (it stays failed) and finishes; a later --retry-failed still reuses them.
  std::optional<plan::Plan> plan = testing::compileText(R"(pipeline kept;
source rows = jsonl("in.jsonl") as Doc;
sink jsonl(path: "a.jsonl", record: { v: test.identity(rows.id) });
)");
  ASSERT_TRUE(plan);
  uint32_t node = 0;
  while (plan->nodes[node].kind != plan::NodeKind::Invoke)
    ++node;
  const Journaled at{*plan, ::testing::TempDir() + "/journal-failed-values"};
  fs::remove_all(at.dir);
  std::string error;
  {
    std::unique_ptr<RunJournal> journal = openJournal(at);
    ASSERT_TRUE(journal && journal->start(error)) << error;
    journal->keep(node, 70, 0, 0, Value::integer(7)); // row 0's grain, then row 0 fails
    journal->keep(node, 80, 0, 1, Value::integer(8)); // row 1 is still running when killed
    ASSERT_TRUE(journal->commit(root(0, RootStatus::Failed), {"x"}, 0, error)) << error;
  } // killed (the values were written when the journal closed)
  {
    std::unique_ptr<RunJournal> resumed = openJournal(at);
    ASSERT_TRUE(resumed && resumed->start(error)) << error;
    EXPECT_TRUE(resumed->isDone(0, 0)) << "a plain resume does not run the failed row";
    ASSERT_TRUE(resumed->recall(node, 80)) << "row 1's grain is reused";
    ASSERT_TRUE(resumed->commit(root(1), {"z"}, 0, error)) << error;
    resumed->complete(); // finished, with row 0 still failed
  }
  std::unique_ptr<RunJournal> retry = openJournal(at, /*retryFailed=*/true);
  ASSERT_TRUE(retry && retry->start(error)) << error;
  EXPECT_FALSE(retry->isDone(0, 0));
  const Value *kept = retry->recall(node, 70);
  ASSERT_TRUE(kept) << "the failed row's finished grain is reused by the retry";
  EXPECT_EQ(*kept, Value::integer(7));
}

/// A process that holds `lockPath`'s lock for `holdMs` and writes `holderPid` into it as its
/// holder (as a run's process that forked a child before it was killed leaves it: the child
/// holds the lock until it execs or exits); its pid.
pid_t holdLock(const fs::path &lockPath, pid_t holderPid, int holdMs) {
  int ready[2];
  EXPECT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0)
      ::_exit(1);
    const std::string pid = std::to_string(holderPid ? holderPid : ::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::write(fd, pid.data(), pid.size()) != ssize_t(pid.size()))
      ::_exit(1);
    (void)!::write(ready[1], "x", 1);
    ::usleep(useconds_t(holdMs) * 1000);
    ::_exit(0);
  }
  char byte;
  EXPECT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  return child;
}

pid_t deadPid() {
  const pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

TEST(RunJournalTest, ALockLeftToAKilledRunsChildrenIsWaitedForAndALiveRunsRefused) {
  Journaled at = freshDirectory("lock_of_a_killed_run");
  fs::create_directories(at.dir);
  const fs::path lockPath = fs::path(at.dir) / "lock";
  // The run that wrote its pid is gone; what it forked still holds the lock for a moment.
  pid_t holder = holdLock(lockPath, deadPid(), 300);
  {
    std::unique_ptr<RunJournal> journal = openJournal(at);
    EXPECT_TRUE(journal) << "the killed run's children exit: the lock is waited for";
  }
  ::waitpid(holder, nullptr, 0);
  // Killed and not reaped yet (a zombie: a harness that did not wait for it) is gone too.
  const pid_t zombie = ::fork();
  if (zombie == 0)
    ::_exit(0);
  ::usleep(100000);
  holder = holdLock(lockPath, zombie, 300);
  {
    std::unique_ptr<RunJournal> journal = openJournal(at);
    EXPECT_TRUE(journal) << "the run that wrote its pid exited, unreaped";
  }
  ::waitpid(holder, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
  // What a gone run started holds it longer than two seconds: the message says so, not
  // "another orch run" that could be stopped.
  const pid_t gone = deadPid();
  holder = holdLock(lockPath, gone, 4000);
  {
    JournalOptions options;
    options.dir = at.dir;
    std::string error;
    EXPECT_FALSE(RunJournal::open(options, at.plan, "inputs", error));
    EXPECT_NE(error.find("is locked by a process that a run now gone (pid " + std::to_string(gone) +
                         ") started"),
              std::string::npos)
        << error;
  }
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  // A run that is alive holds it: refused at once, naming it.
  holder = holdLock(lockPath, 0, 3000);
  JournalOptions options;
  options.dir = at.dir;
  std::string error;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(RunJournal::open(options, at.plan, "inputs", error));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_NE(error.find("another orch run (pid " + std::to_string(holder) + ")"), std::string::npos)
      << error;
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

TEST(SinkExtentsTest, RecordsAreTextThatDecodesToWhatWasEncoded) {
  const ExtentRecord record{5, 1029, {"a b.txt", "100%", "tab\there", "\xc3\xa9.tar"}};
  const std::string text = encodeExtent(record);
  EXPECT_EQ(text.find_first_of(" \n", text.find("a")), text.find(" 100"));
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(decodeExtent(text), record);
  EXPECT_EQ(decodeExtent(""), ExtentRecord{});
  EXPECT_EQ(decodeExtent("7 7"), (ExtentRecord{7, 7, {}}));
  for (const char *bad : {"7", "x 9", "9 7", "1 2 %4", "1 2 %zz", "1  2", "-1 2", "1 2 "})
    EXPECT_FALSE(decodeExtent(bad)) << bad;
}

/// A history given as records and fates.
class ListedHistory : public SinkHistory {
public:
  explicit ListedHistory(std::vector<std::pair<std::string, RecordFate>> records)
      : records_(std::move(records)) {}
  void forEach(const std::function<void(const SinkRecord &)> &visit) const override {
    for (const auto &[bytes, fate] : records_)
      visit(SinkRecord{bytes, fate});
  }

private:
  std::vector<std::pair<std::string, RecordFate>> records_;
};

TEST(SinkExtentsTest, FoldingKnowsWhatToCutBackToAndWhatToCutOut) {
  const ListedHistory history({{"0 10 s0", RecordFate::Kept},
                               {"10 25", RecordFate::RunsAgain},
                               {"25 25 s1", RecordFate::Retired},
                               {"25 40 s2 s1", RecordFate::RunsAgain},
                               {"40 52", RecordFate::Kept},
                               {"", RecordFate::Kept}});
  const SinkExtents extents = foldExtents(history, "sink");
  EXPECT_EQ(extents.size, 52u);
  EXPECT_EQ(extents.names, (std::vector<std::string>{"s0", "s1", "s2", "s1"}));
  EXPECT_EQ(extents.nameEnds, (std::vector<uint64_t>{10, 25, 40, 40}));
  // s1 was retired, then published again by a row that runs again now.
  EXPECT_EQ(extents.retiredNames, std::vector<std::string>{});
  EXPECT_EQ(extents.dropRanges, (std::vector<std::pair<uint64_t, uint64_t>>{{10, 25}, {25, 40}}));
  EXPECT_EQ(extents.dropNames, (std::vector<std::string>{"s2", "s1"}));
  // After the cut: kept ranges move back by what went before them; the retried rows keep the
  // names they published, with no bytes, or leave nothing.
  std::vector<std::string> after;
  history.forEach([&](const SinkRecord &record) {
    after.push_back(extentAfterRetry(record, extents, "sink"));
  });
  EXPECT_EQ(after,
            (std::vector<std::string>{"0 10 s0", "", "10 10 s1", "10 10 s2 s1", "10 22", ""}));
}

TEST(SinkExtentsTest, ARecordThatIsNotAnExtentRefusesTheResume) {
  const ListedHistory history({{"0 10", RecordFate::Kept}, {"opaque bytes", RecordFate::Kept}});
  try {
    foldExtents(history, "sink 1 (jsonl)");
    FAIL() << "folded a record that is not an extent";
  } catch (const OperatorError &error) {
    EXPECT_NE(std::string(error.what()).find("sink 1 (jsonl): cannot resume"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("--restart"), std::string::npos) << error.what();
  }
}

} // namespace
} // namespace orch::runtime
