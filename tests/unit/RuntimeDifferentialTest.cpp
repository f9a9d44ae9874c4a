// The runtime's differential tester: random programs (the property test's generator, with
// filters, record and batch failures, and hangs stopped by timeouts) run through the real
// `orch run` with random executors (threads, worker processes) and policies, stopped at random
// moments (SIGKILL, or Ctrl-C and SIGTERM) and resumed (some after a comment was added to the
// program), some then run again with --retry-failed, must write exactly the rows the
// sequential reference interpreter computes, each once (in source order where a sink says
// `order: "source"`), and fail exactly its failed source rows.
//
// It runs for ORCH_DIFFERENTIAL_SECONDS (default 60; `make fuzz-runtime` runs it longer) and
// prints the trials it ran. A divergence prints the seed, the program, the command and both
// answers; ORCH_DIFFERENTIAL_SEED=N runs that one trial again.
#include "CompileExample.h"
#include "RandomPrograms.h"
#include "ReferenceInterpreter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;
using orch::testing::chance;
using orch::testing::pick;
using orch::testing::Random;
using Clock = std::chrono::steady_clock;

nlohmann::json toJson(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Bool:
    return value.asBool();
  case Value::Kind::Int:
    return value.asInt();
  case Value::Kind::Float:
    return value.asFloat();
  case Value::Kind::String:
    return value.asString();
  case Value::Kind::List: {
    nlohmann::json array = nlohmann::json::array();
    for (const Value &element : value.asList())
      array.push_back(toJson(element));
    return array;
  }
  case Value::Kind::Record: {
    nlohmann::json object = nlohmann::json::object();
    for (const auto &[name, field] : value.asRecord())
      object[name] = toJson(field);
    return object;
  }
  default:
    return nullptr;
  }
}

/// One trial: a program, its rows and how it is run.
struct Trial {
  uint64_t seed = 0;
  std::string program;
  std::vector<Value> rows;
  std::vector<std::string> flags;
  /// Moments (ms after a start) at which the coordinator is stopped, one run each, and with
  /// which signal (SIGKILL, SIGINT, SIGTERM); then a run to the end.
  std::vector<int> kills;
  std::vector<int> signals;
  /// The first sink writes in source order (so every sink does).
  bool sourceOrder = false;
  /// Then once more with --retry-failed: the failed rows run again and fail again.
  bool retryFailed = false;
  /// After each kill, a comment and blank lines are added to the program: the resume must
  /// take the run up all the same (the journal's fingerprint ignores source positions).
  bool editAfterKills = false;
};

class RuntimeDifferentialTest : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("orch-differential-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  Trial makeTrial(uint64_t seed, const fs::path &dir) {
    Random random(seed * 104729);
    Trial trial;
    trial.seed = seed;
    orch::testing::ProgramShape shape;
    // GroupFailures' siblings and retried failures depend on timing and attempt counts kept in
    // one process: the engine property test covers them.
    shape.groupFailures = false;
    shape.retriedFailures = false;
    shape.sinkDirectory = dir.string() + "/";
    trial.program = orch::testing::ProgramGenerator(random, shape).generate();
    trial.program.replace(trial.program.find("\"in.jsonl\""), 10,
                          "\"" + (dir / "in.jsonl").string() + "\"");
    // Some injected batch failures become hangs, stopped by a timeout and narrowed down.
    for (size_t at = 0; (at = trial.program.find("kind: \"batch\"", at)) != std::string::npos;) {
      if (chance(random, 0.25)) {
        trial.program.replace(at, 13, "kind: \"hang\"");
        // This Call's options block (a statement may hold two Calls: an if's branches).
        const size_t options = trial.program.find(" }", at);
        trial.program.insert(options, ", timeout: 250ms");
        const size_t retries = trial.program.find("retries: ", at);
        if (retries < options)
          trial.program[retries + 9] = '0';
      }
      at = trial.program.find(" }", at);
    }
    const int rows = pick(random, 0, 6);
    for (int i = 0; i < rows; ++i)
      trial.rows.push_back(
          Value::record({{"id", Value::integer(i)}, {"n", Value::integer(pick(random, 0, 5))}}));
    if (chance(random, 0.4)) {
      trial.flags = {"--in-process", "--threads", std::to_string(pick(random, 1, 4))};
    } else {
      trial.flags = {"--workers", std::to_string(pick(random, 1, 3)), "--heartbeat-ms", "100"};
    }
    if (chance(random, 0.3))
      trial.flags.insert(trial.flags.end(), {"--ready-order", "unordered"});
    if (chance(random, 0.3))
      trial.flags.insert(trial.flags.end(), {"--batching", "parent-bound"});
    if (chance(random, 0.2))
      trial.flags.insert(trial.flags.end(), {"--gather", "barrier"});
    if (chance(random, 0.3))
      trial.flags.push_back("--probe-first");
    if (chance(random, 0.3))
      trial.flags.insert(trial.flags.end(),
                         {"--max-live-roots", std::to_string(pick(random, 1, 4))});
    if (chance(random, 0.3))
      trial.flags.insert(trial.flags.end(),
                         {"--value-budget", std::to_string(pick(random, 1, 4096))});
    const int kills = chance(random, 0.45) ? pick(random, 1, 2) : 0;
    for (int k = 0; k < kills; ++k)
      trial.kills.push_back(pick(random, 20, 600));
    trial.retryFailed = retryFailed_ && chance(random, 0.3);
    trial.editAfterKills = !trial.kills.empty() && chance(random, 0.5);
    // Drawn last, so that the trials above stay what they were for their seeds.
    for (size_t k = 0; k < trial.kills.size(); ++k)
      trial.signals.push_back(chance(random, 0.3) ? (chance(random, 0.7) ? SIGINT : SIGTERM)
                                                  : SIGKILL);
    if (chance(random, 0.25)) {
      const size_t sink = trial.program.find("sink jsonl(");
      const size_t end = sink == std::string::npos ? sink : trial.program.find(" });\n", sink);
      if (end != std::string::npos) {
        trial.program.insert(end + 2, ", order: \"source\"");
        trial.sourceOrder = true;
      }
    }
    return trial;
  }

  /// Runs `orch run` in `dir`; sends it `signal` after `killAfterMs` (when >= 0), and SIGKILL
  /// if it has not stopped 30 s later. Its exit status, or minus the signal that ended it.
  static int runOrch(const fs::path &dir, const std::vector<std::string> &flags, int killAfterMs,
                     int signal = SIGKILL) {
    std::vector<std::string> argv = {ORCH_BINARY, "run", "prog.orch", "--quiet"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::chdir(dir.c_str()) != 0)
        ::_exit(126);
      const int log = ::open("run.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
      std::vector<char *> pointers;
      for (std::string &arg : argv)
        pointers.push_back(arg.data());
      pointers.push_back(nullptr);
      ::execv(pointers[0], pointers.data());
      ::_exit(127);
    }
    const Clock::time_point killAt = Clock::now() + std::chrono::milliseconds(killAfterMs);
    Clock::time_point giveUp = Clock::now() + std::chrono::seconds(120);
    bool signalled = false;
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      const Clock::time_point now = Clock::now();
      if (killAfterMs >= 0 && now >= killAt && !signalled) {
        ::kill(pid, signal);
        signalled = true;
        giveUp = std::min(giveUp, now + std::chrono::seconds(30));
      }
      if (now >= giveUp)
        ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  /// Runs `trial` and compares; an empty string when it agrees, else what differs.
  std::string check(const Trial &trial, const fs::path &dir) {
    std::string error;
    std::optional<plan::Plan> plan = orch::testing::compileText(trial.program, &error, "prog.orch");
    if (!plan)
      return "the program does not compile: " + error;
    std::ofstream(dir / "prog.orch") << trial.program;
    {
      std::ofstream in(dir / "in.jsonl");
      for (const Value &row : trial.rows)
        in << toJson(row).dump() << "\n";
    }
    std::string program = trial.program;
    for (size_t k = 0; k < trial.kills.size(); ++k) {
      // SIGKILLed, stopped by Ctrl-C or SIGTERM (exit 130 for both), or finished first.
      const int status = runOrch(dir, trial.flags, trial.kills[k], trial.signals[k]);
      if (status != -SIGKILL && status > 2 && !(status == 130 && trial.signals[k] != SIGKILL))
        return "a run before a kill ended with status " + std::to_string(status);
      if (trial.editAfterKills) {
        program = "// edited before resuming\n\n" + program;
        std::ofstream(dir / "prog.orch") << program;
      }
    }
    int status = runOrch(dir, trial.flags, -1);
    // --retry-failed writes the rows it runs again after the others (docs/outputs.md, "Order").
    const bool retried = status == 2 && trial.retryFailed;
    if (retried) {
      std::vector<std::string> again = trial.flags;
      again.push_back("--retry-failed");
      status = runOrch(dir, again, -1);
    }
    if (status != 0 && status != 2)
      return "the run ended with status " + std::to_string(status);

    // The reference: each sink's lines (a multiset: rows of different source rows interleave
    // as they finish; in source order, each source row's lines after the row before's) and
    // the failed source rows.
    orch::testing::ReferenceInterpreter reference(*plan);
    std::vector<std::multiset<std::string>> expected(plan->sinks.size());
    std::vector<std::vector<std::multiset<std::string>>> expectedByRow(plan->sinks.size());
    std::set<uint64_t> expectedFailed;
    for (uint64_t r = 0; r < trial.rows.size(); ++r) {
      RootResult root = reference.run(r, trial.rows[r]);
      if (root.status == RootStatus::Failed)
        expectedFailed.insert(r);
      for (auto &byRow : expectedByRow)
        byRow.emplace_back();
      for (const SinkRow &row : root.rows)
        if (row.status == RowStatus::Written) {
          expected[row.sink].insert(toJson(row.values[0]).dump());
          expectedByRow[row.sink].back().insert(toJson(row.values[0]).dump());
        }
    }
    std::string differences;
    for (size_t s = 0; s < plan->sinks.size(); ++s) {
      std::string path;
      for (const plan::NamedConstant &constant : plan->sinks[s].constants)
        if (constant.name == "path")
          path = std::get<std::string>(constant.value);
      std::multiset<std::string> got;
      std::vector<std::string> lines;
      std::ifstream file(path);
      for (std::string line; std::getline(file, line);) {
        lines.push_back(nlohmann::json::parse(line, nullptr, false).dump());
        got.insert(lines.back());
      }
      if (trial.sourceOrder && !retried && got == expected[s]) {
        size_t at = 0;
        for (uint64_t r = 0; r < expectedByRow[s].size(); ++r) {
          const size_t count = expectedByRow[s][r].size();
          if (std::multiset<std::string>(lines.begin() + at, lines.begin() + at + count) !=
              expectedByRow[s][r])
            differences += "sink " + std::to_string(s) + " (" + path + "): source row " +
                           std::to_string(r) + "'s lines are not lines " + std::to_string(at) +
                           " to " + std::to_string(at + count) + " (order: \"source\")\n";
          at += count;
        }
      }
      if (got != expected[s]) {
        differences += "sink " + std::to_string(s) + " (" + path +
                       "): " + std::to_string(got.size()) + " lines, expected " +
                       std::to_string(expected[s].size()) + "\n";
        for (const std::string &line : got)
          if (got.count(line) != expected[s].count(line))
            differences += "  got " + std::to_string(got.count(line)) + "x, expected " +
                           std::to_string(expected[s].count(line)) + "x: " + line + "\n";
        for (const std::string &line : expected[s])
          if (!got.count(line))
            differences += "  missing: " + line + "\n";
      }
    }
    std::set<uint64_t> failed;
    std::ifstream journal(dir / "prop.errors.jsonl");
    for (std::string line; std::getline(journal, line);) {
      nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
      if (entry.is_object() && entry.contains("row"))
        if (!failed.insert(entry["row"].get<uint64_t>()).second)
          differences += "source row " + entry["row"].dump() + " is in the errors journal twice\n";
    }
    if (failed != expectedFailed) {
      differences += "failed source rows:";
      for (uint64_t r : failed)
        differences += " " + std::to_string(r);
      differences += "; expected:";
      for (uint64_t r : expectedFailed)
        differences += " " + std::to_string(r);
      differences += "\n";
    }
    return differences;
  }

  fs::path root_;
  /// Some trials end with a --retry-failed run (ORCH_DIFFERENTIAL_NO_RETRY_FAILED=1: none).
  bool retryFailed_ = std::getenv("ORCH_DIFFERENTIAL_NO_RETRY_FAILED") == nullptr;
};

TEST_F(RuntimeDifferentialTest,
       RandomProgramsUnderRandomExecutorsPoliciesAndKillsMatchTheReference) {
  const char *seconds = std::getenv("ORCH_DIFFERENTIAL_SECONDS");
  const char *only = std::getenv("ORCH_DIFFERENTIAL_SEED");
  // Where a time-bounded run starts: a second run from another seed tries other trials.
  const char *first = std::getenv("ORCH_DIFFERENTIAL_FIRST_SEED");
  const auto budget = std::chrono::seconds(seconds ? std::atoi(seconds) : 60);
  const Clock::time_point start = Clock::now();
  int trials = 0, killed = 0, edited = 0, retried = 0, withWorkers = 0, withHangs = 0,
      interrupted = 0, inSourceOrder = 0, divergences = 0;
  for (uint64_t seed = std::strtoull(only ? only : first ? first : "1", nullptr, 10);; ++seed) {
    if (only ? trials == 1 : Clock::now() - start >= budget)
      break;
    const fs::path dir = root_ / std::to_string(seed);
    fs::create_directories(dir);
    const Trial trial = makeTrial(seed, dir);
    const std::string differences = check(trial, dir);
    ++trials;
    killed += !trial.kills.empty();
    interrupted += std::any_of(trial.signals.begin(), trial.signals.end(),
                               [](int signal) { return signal != SIGKILL; });
    inSourceOrder += trial.sourceOrder;
    edited += trial.editAfterKills;
    retried += trial.retryFailed;
    withHangs += trial.program.find("\"hang\"") != std::string::npos;
    withWorkers += trial.flags.front() == "--workers";
    if (!differences.empty()) {
      ++divergences;
      std::string command = "orch run prog.orch";
      for (const std::string &flag : trial.flags)
        command += " " + flag;
      if (trial.editAfterKills)
        command += " (a comment added to the program after each kill)";
      for (int signal : trial.signals)
        command += signal == SIGKILL ? ", SIGKILL" : signal == SIGINT ? ", SIGINT" : ", SIGTERM";
      if (trial.retryFailed)
        command += ", then again with --retry-failed";
      std::string log;
      std::ifstream logFile(dir / "run.log");
      for (std::string line; std::getline(logFile, line);)
        log += "  | " + line + "\n";
      ADD_FAILURE() << "seed " << seed << " (ORCH_DIFFERENTIAL_SEED=" << seed << ")\n"
                    << command << " (" << trial.kills.size() << " kills first)\n"
                    << trial.program << differences << log;
    }
    fs::remove_all(dir);
  }
  std::printf("differential: %d trials (%d stopped and resumed, %d of them by Ctrl-C or SIGTERM "
              "and %d edited before resuming, %d ending with --retry-failed, %d with worker "
              "processes, %d with hangs, %d in source order), %d divergences\n",
              trials, killed, interrupted, edited, retried, withWorkers, withHangs, inSourceOrder,
              divergences);
  if (!only) {
    EXPECT_GT(trials, 10) << "the tester must run";
  }
}

} // namespace
} // namespace orch::runtime
