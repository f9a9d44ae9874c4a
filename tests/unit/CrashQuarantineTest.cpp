// The crash quarantine (docs/outputs.md): a process that dies of a fatal signal while a thread
// works on one source row writes that row down, and dies of the signal as before; a thread on
// no one row writes nothing; a stack overflow is caught too. Each case crashes a forked child.
#include "orch/runtime/outputs/CrashQuarantine.h"
#include "orch/runtime/engine/RowInProgress.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

std::string scratchFile(const std::string &name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-crash-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::filesystem::remove(path);
  return path;
}

/// Runs `crash` in a child that watches with a witness writing to `path`; the child's status.
int crashInChild(const std::string &path, const std::function<void()> &crash) {
  const pid_t child = ::fork();
  if (child == 0) {
    CrashWitness witness(path);
    if (!witness.watching())
      ::_exit(3);
    crash();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

std::string contents(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Deeper than any stack: the recursion ends in a stack overflow.
volatile int deepest = 1 << 30;

[[gnu::noinline]] int overflow(int depth) {
  volatile char frame[4096];
  frame[0] = char(depth);
  if (depth == deepest)
    return 0;
  return overflow(depth + 1) + frame[0];
}

TEST(CrashQuarantineTest, ACrashOnARowWritesItDownAndStillKillsTheProcess) {
  const std::string path = scratchFile("crashed");
  const int status = crashInChild(path, [] {
    const RowInProgressScope reading(RowActivity::Reading, 1, 7);
    ::raise(SIGSEGV);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(contents(path), "source 1 row 7 signal 11 while reading\n");
  std::vector<CrashedRow> rows = readCrashedRows(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].source, 1u);
  EXPECT_EQ(rows[0].row, 7u);
  EXPECT_EQ(crashedRowMessage(rows[0]),
            "crashed an earlier run (signal 11, SIGSEGV, while reading it); it is not run again: "
            "--retry-failed runs it");
}

TEST(CrashQuarantineTest, AnAbortAndAStackOverflowAreWrittenDownToo) {
  const std::string path = scratchFile("crashed");
  int status = crashInChild(path, [] {
    const RowInProgressScope writing(RowActivity::Writing, 0, 3);
    std::abort();
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  status = crashInChild(path, [] {
    const RowInProgressScope computing(RowActivity::Computing, 0, 12345678901234ull);
    std::exit(overflow(0));
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(contents(path), "source 0 row 3 signal 6 while writing\n"
                            "source 0 row 12345678901234 signal 11 while computing\n");
}

TEST(CrashQuarantineTest, ACrashOnNoOneRowWritesNothing) {
  const std::string path = scratchFile("crashed");
  const int status = crashInChild(path, [] {
    { const RowInProgressScope ended(RowActivity::Running, 0, 1); }
    ::raise(SIGBUS);
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
  EXPECT_EQ(contents(path), "");
  EXPECT_TRUE(readCrashedRows(path).empty());
}

TEST(CrashQuarantineTest, OneWitnessAtATimeAndTheHandlersGoWithIt) {
  const std::string path = scratchFile("crashed");
  {
    CrashWitness first(path);
    EXPECT_TRUE(first.watching());
    CrashWitness second(path);
    EXPECT_FALSE(second.watching());
  }
  struct sigaction now {};
  ::sigaction(SIGSEGV, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL) << "the witness put the handler back";
  CrashWitness again(path);
  EXPECT_TRUE(again.watching());
}

} // namespace
} // namespace orch::runtime
