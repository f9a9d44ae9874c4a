// The errors journal of `orch run` (tools/orch/ErrorsJournal.h): one line per duplicate a
// dedup dropped, written with the coordinator kept alive while a row's many lines go out.
#include "ErrorsJournal.h"
#include "EngineTestPlans.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace orch {
namespace {

TEST(ErrorsJournalTest, ARowsManyLinesKeepTheCoordinatorAlive) {
  // A root with 1.5 million duplicates was written in one step: both workers lost their
  // coordinator (silent for 2.5 s) meanwhile.
  const plan::Plan plan = testing::compileRunnable(R"(
pipeline p;
source rows = jsonl("in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
sink jsonl(path: "out.jsonl", record: { id: rows.id, pages: reduce(pages) });
)");
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("orch-errors-test-" + std::to_string(::getpid()) + ".jsonl");
  ErrorsJournal journal(plan, path.string());
  std::string error;
  ASSERT_TRUE(journal.open(0, false, error)) << error;
  runtime::RootResult root;
  root.status = runtime::RootStatus::Written;
  for (uint32_t i = 0; i < 10000; ++i)
    root.duplicates.push_back(runtime::DuplicateRow{"pages", 0, {i + 1}, 0, {0}, 1.0});
  size_t calls = 0;
  journal.record(root, [&calls] { ++calls; });
  EXPECT_EQ(calls, 10000u / 4096u) << "every 4,096 lines";
  journal.record(root); // no keep-alive: nothing to call
  EXPECT_EQ(journal.recorded(), 20000u);
  std::ifstream lines(path);
  size_t count = 0;
  for (std::string line; std::getline(lines, line);)
    count += line.find("\"duplicate\"") != std::string::npos;
  EXPECT_EQ(count, 20000u);
  std::filesystem::remove(path);
}

/// A program with one source and one sink, for journals that need a plan.
const plan::Plan &onePlan() {
  static const plan::Plan plan =
      testing::compileRunnable("pipeline p;\nsource rows = jsonl(\"in.jsonl\") as Doc;\n"
                               "sink jsonl(path: \"out.jsonl\", record: rows);\n");
  return plan;
}

/// A named pipe in the temporary directory (empty when it cannot be made).
std::filesystem::path temporaryPipe(const std::string &prefix) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  return ::mkfifo(path.c_str(), 0600) == 0 ? path : std::filesystem::path();
}

runtime::RootResult failedRoot(uint64_t row) {
  runtime::RootResult root;
  root.status = runtime::RootStatus::Failed;
  root.sourceRow = row;
  root.failures.push_back(
      runtime::Failure{runtime::FailureKind::OperatorError, "test.fail", {0}, "failed on purpose"});
  return root;
}

TEST(ErrorsJournalTest, DiscardsItsLinesInDevNull) {
  // `--errors /dev/null` stopped the run: "cannot write the errors journal: Invalid argument"
  // (a device cannot be cut to length).
  const plan::Plan &plan = onePlan();
  for (const bool retry : {false, true}) {
    ErrorsJournal journal(plan, "/dev/null");
    std::string error;
    ASSERT_TRUE(journal.open(retry ? 0 : 128, retry, error)) << error;
    journal.record(failedRoot(3));
    EXPECT_EQ(journal.recorded(), 1u);
  }
}

TEST(ErrorsJournalTest, WritesWholeLinesToAPipeItNeverReads) {
  // A named pipe is written as it is: not cut, and never read for the lines a retry keeps
  // (opening it to read would wait for a writer that is this process).
  const plan::Plan &plan = onePlan();
  const std::filesystem::path fifo = temporaryPipe("orch-errors-fifo-");
  ASSERT_FALSE(fifo.empty());
  // Its reader is there first (a pipe that no process reads is refused).
  const int readEnd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(readEnd, 0);
  std::string read;
  std::thread reader([&] {
    (void)::fcntl(readEnd, F_SETFL, 0);
    char chunk[4096];
    for (ssize_t got; (got = ::read(readEnd, chunk, sizeof chunk)) > 0;)
      read.append(chunk, size_t(got));
    ::close(readEnd);
  });
  {
    ErrorsJournal journal(plan, fifo.string());
    std::string error;
    EXPECT_TRUE(journal.open(0, true, error)) << error;
    journal.record(failedRoot(5));
    journal.record(failedRoot(6));
  }
  reader.join();
  std::filesystem::remove(fifo);
  EXPECT_EQ(std::count(read.begin(), read.end(), '\n'), 2) << read;
  EXPECT_NE(read.find("\"row\": 5"), std::string::npos) << read;
}

TEST(ErrorsJournalTest, RefusesAPipeThatNoProcessReads) {
  // Opening it waited for a reader, silently, before the first row.
  const plan::Plan &plan = onePlan();
  const std::filesystem::path fifo = temporaryPipe("orch-errors-unread-");
  ASSERT_FALSE(fifo.empty());
  ErrorsJournal journal(plan, fifo.string());
  std::string error;
  EXPECT_FALSE(journal.open(0, false, error));
  EXPECT_NE(error.find("named pipe that no process reads"), std::string::npos) << error;
  std::filesystem::remove(fifo);
}

TEST(ErrorsJournalTest, APipeWhoseReaderLeftFailsTheWriteNotTheProcess) {
  // The run died of SIGPIPE (exit 141, no summary) when `head -n 2` stopped reading.
  const plan::Plan &plan = onePlan();
  const std::filesystem::path fifo = temporaryPipe("orch-errors-gone-");
  ASSERT_FALSE(fifo.empty());
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ErrorsJournal journal(plan, fifo.string());
  std::string error;
  ASSERT_TRUE(journal.open(0, false, error)) << error;
  ::close(reader);
  journal.record(failedRoot(1));
  journal.record(failedRoot(2));
  EXPECT_EQ(journal.writeError(), std::strerror(EPIPE));
  EXPECT_EQ(journal.recorded(), 2u);
  EXPECT_EQ(journal.size(), 0u) << "a pipe keeps nothing for a resumed run";
  std::filesystem::remove(fifo);
}

TEST(ErrorsJournalTest, AResumeKeepsWholeLinesTheFileHoldsNeverPadding) {
  // The run journal counted 5,530 bytes written to /dev/null: a resume to a file padded it with
  // 5,530 NUL bytes, or cut an older file's line in half.
  const plan::Plan &plan = onePlan();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("orch-errors-keep-" + std::to_string(::getpid()));
  for (const std::string &before : {std::string(), std::string("{\"a\": 1}\n{\"b\": 2}\n{\"c\"")}) {
    std::filesystem::remove(path);
    if (!before.empty())
      std::ofstream(path) << before;
    ErrorsJournal journal(plan, path.string());
    std::string error;
    ASSERT_TRUE(journal.open(5530, false, error)) << error;
    std::ifstream in(path);
    const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(kept, before.empty() ? "" : "{\"a\": 1}\n{\"b\": 2}\n");
    EXPECT_EQ(journal.size(), kept.size());
  }
  std::filesystem::remove(path);
}

} // namespace
} // namespace orch
