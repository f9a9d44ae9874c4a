// orch: runs Orch pipelines. Parses flags and hands over to the subcommand.
#include "InspectCommand.h"
#include "KeygenCommand.h"
#include "LogLevelFlag.h"
#include "OperatorsCommand.h"
#include "ProcessControl.h"
#include "ReportCommand.h"
#include "RunCommand.h"

#include "orch/runtime/execution/MemorySize.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace cl = llvm::cl;
using orch::runtime::BatchingScope;
using orch::runtime::GatherMode;
using orch::runtime::ReadyOrder;

static cl::OptionCategory orchCategory("orch options");

static cl::SubCommand inspect("inspect", "Validate a compiled plan and print it");
static cl::opt<std::string> inspectPath(cl::Positional, cl::Required, cl::desc("<file.plan>"),
                                        cl::sub(inspect), cl::cat(orchCategory));

static cl::SubCommand operators("operators", "Print the operator reference (Markdown)");

static cl::SubCommand run("run", "Run a pipeline (.orch or .plan) in this process");
static cl::opt<std::string> runPath(cl::Positional, cl::Required, cl::desc("<file.orch|file.plan>"),
                                    cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> inProcess("in-process",
                               cl::desc("Run operator batches on threads of this process"),
                               cl::sub(run), cl::cat(orchCategory));
static cl::opt<int> workers("workers",
                            cl::desc("Local worker processes (default: from the cores and the "
                                     "Calls' replicas; none with --listen)"),
                            cl::init(-1), cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string> listen("listen",
                                   cl::desc("Cluster mode: accept workers on this endpoint "
                                            "(tcp://HOST:PORT)"),
                                   cl::value_desc("endpoint"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string> keyPath("key",
                                    cl::desc("With --listen: the coordinator's CURVE key pair "
                                             "(orch keygen NAME writes NAME.key)"),
                                    cl::value_desc("NAME.key"), cl::sub(run),
                                    cl::cat(orchCategory));
static cl::opt<std::string>
    authorizedKeysPath("authorized-keys",
                       cl::desc("With --listen and --key: the worker keys admitted (their .pub "
                                "lines)"),
                       cl::value_desc("file"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> insecure("insecure",
                              cl::desc("Listen on a network address without keys (any peer "
                                       "may join as a worker)"),
                              cl::sub(run), cl::cat(orchCategory));
static cl::opt<unsigned> waitWorkers("wait-workers",
                                     cl::desc("With --listen: admit no row until this many "
                                              "workers joined (or --wait-timeout passed)"),
                                     cl::value_desc("N"), cl::init(0), cl::sub(run),
                                     cl::cat(orchCategory));
static cl::opt<std::string>
    waitTimeout("wait-timeout",
                cl::desc("With --wait-workers: start with the workers there after this long, "
                         "e.g. 30s (default 2m)"),
                cl::value_desc("duration"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<unsigned> heartbeatMs("heartbeat-ms", cl::desc("Heartbeat interval"),
                                     cl::init(orch::runtime::kDefaultHeartbeatMs), cl::sub(run),
                                     cl::cat(orchCategory));
static cl::opt<unsigned> liveness("liveness",
                                  cl::desc("Heartbeats a worker may miss before it is lost"),
                                  cl::init(orch::runtime::kDefaultLiveness), cl::sub(run),
                                  cl::cat(orchCategory));
static cl::opt<unsigned> depth("depth", cl::desc("Batches sent ahead to each replica"),
                               cl::init(orch::runtime::kDefaultDepth), cl::sub(run),
                               cl::cat(orchCategory));
static cl::opt<unsigned> threads("threads",
                                 cl::desc("With --in-process: threads running operator batches"),
                                 cl::init(std::max(1u, std::thread::hardware_concurrency())),
                                 cl::sub(run), cl::cat(orchCategory));
static cl::list<std::string> setParams("set", cl::desc("Override a param: --set NAME=VALUE"),
                                       cl::value_desc("NAME=VALUE"), cl::sub(run),
                                       cl::cat(orchCategory));
static cl::opt<unsigned> maxLiveRoots("max-live-roots",
                                      cl::desc("Source rows admitted but unfinished at most"),
                                      cl::init(4096), cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string>
    valueBudget("value-budget",
                cl::desc("Bytes of values the run holds at most, e.g. 2GiB, 0 for no budget "
                         "(default: half the machine's memory; docs/runtime.md)"),
                cl::value_desc("size"), cl::sub(run), cl::cat(orchCategory));
// Its name before "memory" meant one thing only (what replicas need and workers offer).
static cl::opt<std::string> memoryLimitAlias("memory-limit", cl::desc("Old name of --value-budget"),
                                             cl::value_desc("size"), cl::sub(run), cl::Hidden,
                                             cl::cat(orchCategory));
static cl::opt<std::string> keepValuesOver(
    "keep-values-over",
    cl::desc("Values of at least this size that only Calls read stay on the worker that made "
             "them, e.g. 1MiB; off: every value goes through the coordinator (default 64KiB; "
             "docs/runtime.md)"),
    cl::value_desc("size"), cl::sub(run), cl::cat(orchCategory));
/// A flag's duration: a number and ms, s, m or h ("30s", "1.5m").
static std::optional<std::chrono::nanoseconds> parseDuration(const std::string &text) {
  double number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  const std::string unit(end, text.data() + text.size());
  const double scale = unit == "ms"  ? 1e6
                       : unit == "s" ? 1e9
                       : unit == "m" ? 60e9
                       : unit == "h" ? 3600e9
                                     : 0;
  if (error != std::errc() || scale == 0 || !(number >= 0) || number * scale > 1e18)
    return std::nullopt;
  return std::chrono::nanoseconds(int64_t(number * scale));
}

static cl::opt<std::string> hangGuard(
    "hang-guard",
    cl::desc("Calls without a timeout: a batch may run 10 times its Call's slowest item so far, "
             "and at least this long, e.g. 30s or 10m; off: no guard (default 5m; "
             "docs/runtime.md)"),
    cl::value_desc("duration"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string> logLevel(
    "log-level",
    cl::desc("What the run shows besides progress, summary and errors: error, warning, info "
             "(default: libraries' and operators' own output, with their Call, replica and "
             "row) or debug"),
    cl::value_desc("level"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<ReadyOrder>
    readyOrder("ready-order", cl::desc("Order of each Call's ready queue"),
               cl::init(ReadyOrder::Fifo),
               cl::values(clEnumValN(ReadyOrder::Fifo, "fifo", "in the order grains became ready"),
                          clEnumValN(ReadyOrder::Unordered, "unordered", "random (ablation)")),
               cl::sub(run), cl::cat(orchCategory));
static cl::opt<BatchingScope>
    batching("batching", cl::desc("Which grains one batch may mix"),
             cl::init(BatchingScope::CrossParent),
             cl::values(clEnumValN(BatchingScope::CrossParent, "cross-parent", "any parents"),
                        clEnumValN(BatchingScope::ParentBound, "parent-bound",
                                   "one parent per batch (baseline)")),
             cl::sub(run), cl::cat(orchCategory));
static cl::opt<GatherMode>
    gather("gather", cl::desc("When a reduce fires"), cl::init(GatherMode::Lineage),
           cl::values(clEnumValN(GatherMode::Lineage, "lineage",
                                 "as soon as its parent's children are done"),
                      clEnumValN(GatherMode::GlobalBarrier, "barrier",
                                 "after every grain of the child domain (flat-record baseline)")),
           cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> probeFirst("probe-first",
                                cl::desc("Run each parent's first child ahead of its siblings"),
                                cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string>
    errorsPath("errors",
               cl::desc("Where failed source rows are journaled (default <pipeline>.errors.jsonl)"),
               cl::value_desc("path"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string>
    journalDir("journal",
               cl::desc("The run journal, from which a killed run resumes (default "
                        "<pipeline>.run; docs/outputs.md)"),
               cl::value_desc("dir"), cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> noJournal("no-journal",
                               cl::desc("Keep no run journal: a killed run cannot be resumed"),
                               cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> restart("restart",
                             cl::desc("Start afresh even if an unfinished run could be resumed"),
                             cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> retryFailed("retry-failed",
                                 cl::desc("Run the source rows that failed in the journaled run "
                                          "again (and only those, after a finished run)"),
                                 cl::sub(run), cl::cat(orchCategory));
static cl::opt<bool> quiet("quiet", cl::desc("No live progress; print only the one-line summary"),
                           cl::sub(run), cl::cat(orchCategory));
static cl::opt<std::string> metricsPath("metrics",
                                        cl::desc("Write a machine-readable account of the run"),
                                        cl::value_desc("file.json"), cl::sub(run),
                                        cl::cat(orchCategory));
static cl::opt<std::string> tracePath("trace",
                                      cl::desc("Write a Chrome trace of the run (Perfetto)"),
                                      cl::value_desc("file.json"), cl::sub(run),
                                      cl::cat(orchCategory));

static cl::SubCommand keygen("keygen", "Write a CURVE key pair for a coordinator or a worker "
                                       "(NAME.key, secret; NAME.pub)");
static cl::opt<std::string> keygenName(cl::Positional, cl::Required, cl::desc("<name>"),
                                       cl::sub(keygen), cl::cat(orchCategory));
static cl::opt<std::string> keygenDirectory("output-dir",
                                            cl::desc("Where to write the files (default: here)"),
                                            cl::value_desc("dir"), cl::sub(keygen),
                                            cl::cat(orchCategory));
static cl::opt<bool> keygenForce("force", cl::desc("Replace existing key files"), cl::sub(keygen),
                                 cl::cat(orchCategory));

static cl::SubCommand report("report", "Render a run's metrics as an HTML report");
static cl::opt<std::string> reportInput(cl::Positional, cl::Required, cl::desc("<metrics.json>"),
                                        cl::sub(report), cl::cat(orchCategory));
static cl::opt<std::string> reportOutput("o", cl::desc("The HTML file to write"),
                                         cl::value_desc("report.html"), cl::init("report.html"),
                                         cl::sub(report), cl::cat(orchCategory));

/// Listed in the help; `orch worker ARGS` runs orch-worker ARGS (see main).
static cl::SubCommand worker("worker", "Serve a coordinator (orch run) as a worker: runs "
                                       "orch-worker, which carries no compiler");

/// `orch worker ARGS`: replaces this process with the orch-worker beside it, so that a worker
/// machine's processes never carry the compiler. Returns only if that fails.
static int execWorkerProgram(int argc, char **argv) {
  const std::string program = orch::tools::siblingProgram("orch-worker");
  std::vector<char *> arguments{const_cast<char *>(program.c_str())};
  for (int i = 2; i < argc; ++i)
    arguments.push_back(argv[i]);
  arguments.push_back(nullptr);
  ::execv(program.c_str(), arguments.data());
  llvm::errs() << "orch worker: error: cannot run " << program << ": " << std::strerror(errno)
               << " (orch-worker is installed beside orch)\n";
  return 2;
}

/// The first of `run`'s numeric flags that is 0 where only a positive value makes sense.
static const char *zeroRunFlag() {
  if (maxLiveRoots == 0)
    return "--max-live-roots";
  if (threads == 0)
    return "--threads";
  if (heartbeatMs == 0)
    return "--heartbeat-ms";
  if (liveness == 0)
    return "--liveness";
  if (depth == 0)
    return "--depth";
  if (workers == 0 && listen.empty() && !inProcess)
    return "--workers";
  return nullptr;
}

static int runCommand() {
  if (const char *flag = zeroRunFlag()) {
    llvm::errs() << "orch: error: " << flag << " must be at least 1\n";
    return orch::kRunCannotRun;
  }
  orch::RunCommandOptions options;
  options.inputPath = runPath;
  for (const std::string &assignment : setParams) {
    std::optional<orch::frontend::ParamOverride> override =
        orch::frontend::parseParamOverride(assignment);
    if (!override) {
      llvm::errs() << "orch: error: --set expects NAME=VALUE, got '" << assignment << "'\n";
      return orch::kRunCannotRun;
    }
    options.overrides.push_back(*override);
  }
  orch::runtime::RunSettings &settings = options.settings;
  orch::runtime::EngineOptions &engine = settings.run.engine;
  settings.inProcess = inProcess;
  settings.threads = threads;
  settings.localWorkers = workers;
  settings.coordinator.endpoint = listen;
  options.security.keyPath = keyPath;
  options.security.authorizedKeysPath = authorizedKeysPath;
  options.security.insecure = insecure;
  settings.coordinator.heartbeatMs = heartbeatMs;
  settings.coordinator.liveness = liveness;
  settings.coordinator.depth = depth;
  settings.coordinator.waitWorkers = waitWorkers;
  if (waitTimeout.getNumOccurrences() > 0) {
    std::optional<std::chrono::nanoseconds> limit = parseDuration(waitTimeout);
    if (!limit) {
      llvm::errs() << "orch: error: --wait-timeout expects a duration such as 30s or 2m, got '"
                   << waitTimeout << "'\n";
      return orch::kRunCannotRun;
    }
    settings.coordinator.waitWorkersTimeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(*limit);
  }
  if (waitWorkers > 0 && listen.empty()) {
    llvm::errs() << "orch: error: --wait-workers waits for workers that join --listen; local "
                    "workers (--workers) are always waited for\n";
    return orch::kRunCannotRun;
  }
  engine.maxLiveRoots = maxLiveRoots;
  // Without the flag: RunSettings' default, half the machine's memory.
  if (memoryLimitAlias.getNumOccurrences() > 0) {
    if (valueBudget.getNumOccurrences() > 0) {
      llvm::errs() << "orch: error: give --value-budget only (--memory-limit is its old name)\n";
      return orch::kRunCannotRun;
    }
    llvm::errs() << "orch: note: --memory-limit is now --value-budget: it bounds the bytes of "
                    "values the run holds, not its processes' memory\n";
    valueBudget = std::string(memoryLimitAlias);
  }
  if (memoryLimitAlias.getNumOccurrences() > 0 || valueBudget.getNumOccurrences() > 0) {
    std::optional<uint64_t> bytes = orch::runtime::parseMemorySize(valueBudget);
    if (!bytes) {
      llvm::errs() << "orch: error: --value-budget expects a size such as 2GiB, 512MiB or 0, "
                      "got '"
                   << valueBudget << "'\n";
      return orch::kRunCannotRun;
    }
    engine.valueBudgetBytes = *bytes;
  }
  if (keepValuesOver.getNumOccurrences() > 0) {
    std::optional<uint64_t> bytes = keepValuesOver == "off"
                                        ? std::optional<uint64_t>(0)
                                        : orch::runtime::parseMemorySize(keepValuesOver);
    if (!bytes || (*bytes == 0 && keepValuesOver != "off")) {
      llvm::errs() << "orch: error: --keep-values-over expects a size such as 64KiB or 'off', "
                      "got '"
                   << keepValuesOver << "'\n";
      return orch::kRunCannotRun;
    }
    settings.coordinator.keepValuesOver = *bytes;
  }
  if (logLevel.getNumOccurrences() > 0 && !orch::tools::applyLogLevelFlag(logLevel, "orch"))
    return orch::kRunCannotRun;
  if (hangGuard.getNumOccurrences() > 0) {
    // `none` as in the language's `timeout: none`.
    const bool off = hangGuard == "off" || hangGuard == "none";
    std::optional<std::chrono::nanoseconds> floor =
        off ? std::optional<std::chrono::nanoseconds>(0) : parseDuration(hangGuard);
    if (!floor || (floor->count() == 0 && !off)) {
      llvm::errs() << "orch: error: --hang-guard expects a duration such as 30s, 10m or 'off', "
                      "got '"
                   << hangGuard << "'\n";
      return orch::kRunCannotRun;
    }
    settings.run.hangGuardFloor = *floor;
  }
  engine.readyOrder = readyOrder;
  engine.batching = batching;
  engine.gather = gather;
  engine.probeFirst = probeFirst;
  // `-`, as in most tools: standard output (a file named "-" is ./-).
  options.errorsPath = errorsPath == "-" ? std::string("/dev/stdout") : std::string(errorsPath);
  settings.journal = !noJournal;
  settings.run.journal.dir = journalDir;
  settings.run.journal.restart = restart;
  settings.run.journal.retryFailed = retryFailed;
  options.quiet = quiet;
  options.metricsPath = metricsPath;
  options.tracePath = tracePath;
  return orch::runPipeline(std::move(options));
}

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0)
    return execWorkerProgram(argc, argv);
  // No llvm::InitLLVM: its crash handler allocates inside the signal handler and can hang a
  // crashed coordinator for ever instead of letting it die (and be resumed).
  cl::HideUnrelatedOptions(orchCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orch " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "orch: runs Orch pipelines with lineage-aware batching\n");
  if (inspect)
    return orch::runInspect(inspectPath);
  if (run)
    return runCommand();
  if (operators)
    return orch::runOperators();
  if (report)
    return orch::runReport(reportInput, reportOutput);
  if (keygen)
    return orch::runKeygen(keygenName, keygenDirectory, keygenForce);
  cl::PrintHelpMessage();
  return 1;
}
