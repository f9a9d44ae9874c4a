// orch-worker: serves Orch coordinators (`orch run`) by running operator batches. Parses flags
// and hands over to WorkerCommand.cpp. `orch worker ARGS` runs this program with ARGS.
#include "LogLevelFlag.h"
#include "WorkerCommand.h"

#include "orch/runtime/execution/MemorySize.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory workerCategory("orch-worker options");

static cl::opt<std::string> connect("connect", cl::Required,
                                    cl::desc("The coordinator's endpoint (tcp://HOST:PORT)"),
                                    cl::value_desc("endpoint"), cl::cat(workerCategory));
static cl::opt<std::string> keyPath("key",
                                    cl::desc("This worker's CURVE key pair, for a coordinator "
                                             "with keys (orch keygen NAME writes NAME.key)"),
                                    cl::value_desc("NAME.key"), cl::cat(workerCategory));
static cl::opt<std::string> serverKeyPath("server-key",
                                          cl::desc("The coordinator's public key (its .pub "
                                                   "file): only that coordinator is served"),
                                          cl::value_desc("file.pub"), cl::cat(workerCategory));
static cl::opt<bool>
    insecure("insecure",
             cl::desc("Serve a coordinator this worker cannot authenticate (no --server-key): "
                      "whoever listens at --connect gets to use it, so it runs no programs "
                      "(exec/python operators) unless --allow-operators lists them"),
             cl::cat(workerCategory));
static cl::opt<std::string>
    allowOperators("allow-operators",
                   cl::desc("Run only the programs of exec/python operators listed in FILE "
                            "('exec /path' or 'python /path/script.py' lines), whoever asks"),
                   cl::value_desc("FILE"), cl::cat(workerCategory));
static cl::opt<std::string> workerName("name", cl::desc("This worker's name (default host:pid)"),
                                       cl::cat(workerCategory));
static cl::opt<double> cpus("cpus", cl::desc("CPUs this worker offers"), cl::init(1.0),
                            cl::cat(workerCategory));
static cl::opt<std::string>
    memory("memory",
           cl::desc("Memory this worker offers replicas, e.g. 16GiB, against the Calls' `memory` "
                    "hints (default: the machine's, or its cgroup's limit)"),
           cl::value_desc("size"), cl::cat(workerCategory));
static cl::opt<std::string>
    peerEndpoint("peer-endpoint",
                 cl::desc("Where other workers fetch the values this one keeps, e.g. "
                          "tcp://10.0.0.7:7801 (default: a free port on this host; "
                          "docs/cluster.md)"),
                 cl::value_desc("endpoint"), cl::cat(workerCategory));
static cl::opt<std::string>
    peerAnnounce("peer-announce",
                 cl::desc("The endpoint other workers are told to fetch from, when it is not "
                          "--peer-endpoint's (behind NAT: the address they reach)"),
                 cl::value_desc("endpoint"), cl::cat(workerCategory));
static cl::opt<std::string> gpus("gpus",
                                 cl::desc("CUDA devices this worker offers: auto (every usable "
                                          "one), none, or indexes (0,1)"),
                                 cl::init("auto"), cl::cat(workerCategory));
static cl::opt<unsigned> connectTimeout("connect-timeout",
                                        cl::desc("Seconds to wait for the coordinator (60)"),
                                        cl::init(60), cl::cat(workerCategory));
static cl::opt<bool> quiet("quiet", cl::desc("Log problems only"), cl::cat(workerCategory));
static cl::opt<std::string>
    logLevel("log-level",
             cl::desc("What the worker shows of the libraries' and operators' own output: "
                      "error, warning, info (default) or debug"),
             cl::value_desc("level"), cl::cat(workerCategory));
static cl::opt<bool> once("once",
                          cl::desc("Serve one run, then exit (default: serve run after run, "
                                   "reconnecting with back-off, until stopped)"),
                          cl::cat(workerCategory));

int main(int argc, char **argv) {
  // No llvm::InitLLVM: its crash handler allocates inside the signal handler and can hang a
  // crashed worker instead of letting the coordinator see it die.
  cl::HideUnrelatedOptions(workerCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orch-worker " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "orch-worker: runs operator batches for Orch coordinators\n");
  if (cpus <= 0 || connectTimeout == 0) {
    llvm::errs() << "orch worker: error: " << (cpus <= 0 ? "--cpus" : "--connect-timeout")
                 << " must be greater than 0\n";
    return 2;
  }
  if (logLevel.getNumOccurrences() > 0 && !orch::tools::applyLogLevelFlag(logLevel, "orch worker"))
    return 2;
  std::optional<uint64_t> memoryBytes = orch::runtime::machineMemory();
  if (memory.getNumOccurrences() > 0)
    memoryBytes = orch::runtime::parseMemorySize(memory);
  if (!memoryBytes || *memoryBytes == 0) {
    llvm::errs() << "orch worker: error: --memory expects a size such as 16GiB or 512MiB, got '"
                 << memory << "'\n";
    return 2;
  }
  orch::tools::WorkerCommandOptions options;
  options.memoryBytes = *memoryBytes;
  options.connect = connect;
  options.keyPath = keyPath;
  options.serverKeyPath = serverKeyPath;
  options.insecure = insecure;
  options.allowOperatorsPath = allowOperators;
  options.name = workerName;
  options.cpus = cpus;
  options.peerEndpoint = peerEndpoint;
  options.peerAnnounce = peerAnnounce;
  options.gpus = gpus;
  options.quiet = quiet;
  options.connectTimeoutSeconds = connectTimeout;
  options.once = once;
  return orch::tools::runWorkerCommand(options);
}
