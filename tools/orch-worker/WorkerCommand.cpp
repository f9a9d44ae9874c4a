// The worker process: choose the GPUs it offers, then serve coordinators until stopped,
// reconnecting with back-off between runs.
#include "WorkerCommand.h"

#include "ProcessControl.h"

#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/cluster/Worker.h"
#include "orch/runtime/operators/ProgramPermissions.h"
#include "orch/runtime/operators/TrustedFiles.h"
#include "orch/stdlib/CudaDevices.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace orch::tools {
namespace {

/// The devices `--gpus SPEC` offers, and (`memory`) each one's bytes as far as known;
/// nullopt (after a message) for a bad SPEC.
std::optional<std::vector<int64_t>> workerGpus(const std::string &spec,
                                               std::vector<uint64_t> &memory) {
  if (spec == "none")
    return std::vector<int64_t>{};
  const stdlib::CudaDeviceCount devices = stdlib::countCudaDevices();
  auto memoryOf = [&](const std::vector<int64_t> &chosen) {
    for (int64_t device : chosen)
      memory.push_back(
          size_t(device) < devices.memoryBytes.size() ? devices.memoryBytes[size_t(device)] : 0);
    return chosen;
  };
  if (devices.broken)
    llvm::errs() << "orch worker: " << devices.reason << ": GPU replicas run on the CPU\n";
  if (spec == "auto")
    return memoryOf(allDevices(devices.count));
  std::vector<int64_t> chosen;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(spec).split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t device = 0;
    if (part.trim().getAsInteger(10, device) || device < 0) {
      llvm::errs() << "orch worker: error: --gpus expects auto, none or device indexes such as "
                      "0,1; got '"
                   << spec << "'\n";
      return std::nullopt;
    }
    chosen.push_back(device);
  }
  for (int64_t device : chosen)
    if (device >= devices.count)
      llvm::errs() << "orch worker: GPU " << device << " is not usable here ("
                   << (devices.count ? std::to_string(devices.count) + " devices" : devices.reason)
                   << "): its GPU replicas will run on the CPU\n";
  return memoryOf(chosen);
}

/// Why the coordinator at `endpoint` (no keys) is not authenticated, or nullopt: an ipc://
/// socket in the file system is, when it and its directory could only have been made by this
/// user (or root); an abstract one ("ipc://@name") or any network endpoint is not. Checked again
/// before every connection: the directory may have changed hands between runs.
std::optional<std::string> unauthenticatedEndpoint(const std::string &endpoint) {
  if (endpoint.rfind("ipc://", 0) != 0 || endpoint.rfind("ipc://@", 0) == 0)
    return endpoint + " is not authenticated: whoever listens there would send this worker its "
                      "plans";
  const std::string socket = endpoint.substr(6);
  const size_t slash = socket.rfind('/');
  const std::string directory =
      slash == std::string::npos ? "." : socket.substr(0, std::max<size_t>(1, slash));
  std::optional<std::string> problem = runtime::privateDirectoryProblem(directory);
  struct stat info {};
  if (!problem && ::lstat(socket.c_str(), &info) == 0 && info.st_uid != ::geteuid() &&
      info.st_uid != 0)
    problem = "the socket " + socket + " belongs to another user";
  if (!problem)
    return std::nullopt;
  return endpoint + " is not private to this user (" + *problem +
         "): another user could have made it";
}

/// Sets how `worker` trusts its coordinator: CURVE keys from --key and --server-key, or from
/// the environment a local coordinator hands its workers (then removed, so that operators'
/// processes do not inherit it), or an ipc:// socket in a directory private to this user; else
/// only with --insecure, and then it runs no programs unless --allow-operators lists them. False
/// after a message.
bool chooseWorkerTrust(const WorkerCommandOptions &options, runtime::WorkerOptions &worker) {
  auto fail = [](const std::string &message) {
    llvm::errs() << "orch worker: error: " << message << "\n";
    return false;
  };
  if (options.keyPath.empty() != options.serverKeyPath.empty())
    return fail(std::string("CURVE needs both --key (this worker's .key file) and --server-key "
                            "(the coordinator's .pub file); ") +
                (options.keyPath.empty() ? "--key" : "--server-key") + " is missing");
  if (!options.keyPath.empty() && options.insecure)
    return fail("--insecure serves a coordinator without authenticating it; give either "
                "--key and --server-key or --insecure");
  runtime::ProgramPermissions &programs = worker.programs;
  if (!options.allowOperatorsPath.empty()) {
    auto allowed = runtime::readAllowedOperators(options.allowOperatorsPath);
    if (auto *problem = std::get_if<std::string>(&allowed))
      return fail(*problem);
    programs.allowed = std::get<0>(std::move(allowed));
    programs.allowedFrom = options.allowOperatorsPath;
  }
  if (!options.keyPath.empty()) {
    auto pair = runtime::readKeyPairFile(options.keyPath);
    if (auto *problem = std::get_if<std::string>(&pair))
      return fail(*problem);
    auto server = runtime::readPublicKeyFile(options.serverKeyPath);
    if (auto *problem = std::get_if<std::string>(&server))
      return fail(*problem);
    worker.curveKey = std::get<runtime::CurveKeyPair>(std::move(pair));
    worker.coordinatorKey = std::get<runtime::CurvePublicKey>(server).key;
    programs.coordinatorAuthenticated = true;
    return true;
  }
  if (const char *handed = ::getenv(runtime::kWorkerCurveEnvironment)) {
    std::istringstream words(handed);
    runtime::CurveKeyPair pair;
    pair.name = "local";
    words >> pair.publicKey >> pair.secretKey >> worker.coordinatorKey;
    ::unsetenv(runtime::kWorkerCurveEnvironment);
    if (!runtime::isCurveKey(pair.secretKey) || !runtime::isCurveKey(worker.coordinatorKey))
      return fail(std::string(runtime::kWorkerCurveEnvironment) + " does not hold CURVE keys");
    worker.curveKey = std::move(pair);
    programs.coordinatorAuthenticated = true;
    return true;
  }
  const std::string &endpoint = options.connect;
  std::optional<std::string> unauthenticated = unauthenticatedEndpoint(endpoint);
  if (!unauthenticated) {
    programs.coordinatorAuthenticated = true;
    return true;
  }
  if (!options.insecure)
    return fail("a worker serves only a coordinator it can authenticate, and " + *unauthenticated +
                ". Give it --key WORKER.key --server-key COORDINATOR.pub (orch keygen; "
                "docs/cluster.md), or --insecure to serve whoever listens there (it then runs "
                "no exec/python operators unless --allow-operators lists them)");
  llvm::errs() << "orch worker: warning: --insecure: this worker serves whatever coordinator "
                  "listens at "
               << endpoint
               << " without authenticating it: that coordinator receives this worker's results "
                  "and may send it any plan; "
               << (programs.allowed ? "it runs only the programs listed in " + programs.allowedFrom
                                    : std::string("it runs no exec/python operators (none is "
                                                  "allowed with --allow-operators)"))
               << "\n";
  return true;
}

} // namespace

int runWorkerCommand(const WorkerCommandOptions &options) {
  std::vector<uint64_t> gpuMemory;
  std::optional<std::vector<int64_t>> gpus = workerGpus(options.gpus, gpuMemory);
  if (!gpus)
    return 2;
  runtime::WorkerOptions worker;
  if (!chooseWorkerTrust(options, worker))
    return 2;
  const runtime::OperatorRegistry registry = standardRegistry();
  installStopHandlers(kExitInterrupted);
  worker.endpoint = options.connect;
  worker.name = options.name;
  worker.cpus = options.cpus;
  worker.memoryBytes = options.memoryBytes;
  worker.peerEndpoint = options.peerEndpoint;
  worker.peerAnnounce = options.peerAnnounce;
  worker.gpus = *gpus;
  worker.gpuMemory = std::move(gpuMemory);
  worker.stopRequested = &stopRequested;
  worker.verbose = !options.quiet;
  worker.connectTimeoutMs = options.connectTimeoutSeconds * 1000;
  worker.log = logLine;
  worker.restart = [&](const std::string &why) {
    if (!options.quiet)
      logLine("restarting: " + why);
    if (!options.once)
      restartThisProcess();
    ::_exit(runtime::kWorkerMustRestart);
  };
  // A cluster's workers outlive runs: after each one they connect again (backing off while no
  // coordinator answers) until they are stopped.
  std::chrono::milliseconds backOff(100);
  const bool checkSocket = !worker.curveKey && options.connect.rfind("ipc://", 0) == 0 &&
                           options.connect.rfind("ipc://@", 0) != 0;
  for (;;) {
    int exit = runtime::kWorkerLost;
    // Keyless ipc: checked before every connection (the session connects once, not again on
    // its own: Worker.cpp).
    const std::optional<std::string> unauthenticated =
        checkSocket ? unauthenticatedEndpoint(options.connect) : std::nullopt;
    if (checkSocket)
      worker.programs.coordinatorAuthenticated = !unauthenticated;
    if (unauthenticated && !options.insecure)
      logLine("not connecting: " + *unauthenticated);
    else
      exit = runtime::runWorker(worker, registry);
    if (unauthenticated && !options.insecure && options.once)
      return 2;
    if (stopRequested.load())
      return runtime::kWorkerDone;
    if (options.once)
      return exit;
    if (exit == runtime::kWorkerDone) {
      backOff = std::chrono::milliseconds(100);
    } else {
      backOff = std::min<std::chrono::milliseconds>(backOff * 2, std::chrono::seconds(5));
      if (!options.quiet)
        logLine("connecting again in " + std::to_string(backOff.count()) + " ms");
    }
    for (auto slept = std::chrono::milliseconds(0); slept < backOff && !stopRequested.load();
         slept += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stopRequested.load())
      return runtime::kWorkerDone;
  }
}

} // namespace orch::tools
