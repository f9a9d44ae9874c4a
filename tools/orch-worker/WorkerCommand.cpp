// The worker process: choose the GPUs it offers, then serve coordinators until stopped,
// reconnecting with back-off between runs.
#include "WorkerCommand.h"

#include "ProcessControl.h"

#include "orch/runtime/Protocol.h"
#include "orch/runtime/Worker.h"
#include "orch/stdlib/CudaDevices.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace orch::tools {
namespace {

/// The devices `--gpus SPEC` offers; nullopt (after a message) for a bad SPEC.
std::optional<std::vector<int64_t>> workerGpus(const std::string &spec) {
  if (spec == "none")
    return std::vector<int64_t>{};
  const stdlib::CudaDeviceCount devices = stdlib::countCudaDevices();
  if (devices.broken)
    llvm::errs() << "orch worker: " << devices.reason << ": GPU replicas run on the CPU\n";
  if (spec == "auto")
    return allDevices(devices.count);
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
  return chosen;
}

/// Sets `worker`'s CURVE keys from --key and --server-key, or from the environment a local
/// coordinator hands its workers (then removed, so that operators' processes do not inherit
/// it). False after a message.
bool chooseWorkerKeys(const WorkerCommandOptions &options, runtime::WorkerOptions &worker) {
  auto fail = [](const std::string &message) {
    llvm::errs() << "orch worker: error: " << message << "\n";
    return false;
  };
  if (options.keyPath.empty() != options.serverKeyPath.empty())
    return fail(std::string("CURVE needs both --key (this worker's .key file) and --server-key "
                            "(the coordinator's .pub file); ") +
                (options.keyPath.empty() ? "--key" : "--server-key") + " is missing");
  if (!options.keyPath.empty()) {
    auto pair = runtime::readKeyPairFile(options.keyPath);
    if (auto *problem = std::get_if<std::string>(&pair))
      return fail(*problem);
    auto server = runtime::readPublicKeyFile(options.serverKeyPath);
    if (auto *problem = std::get_if<std::string>(&server))
      return fail(*problem);
    worker.curveKey = std::get<runtime::CurveKeyPair>(std::move(pair));
    worker.coordinatorKey = std::get<runtime::CurvePublicKey>(server).key;
    return true;
  }
  const char *handed = ::getenv(runtime::kWorkerCurveEnvironment);
  if (!handed)
    return true;
  std::istringstream words(handed);
  runtime::CurveKeyPair pair;
  pair.name = "local";
  words >> pair.publicKey >> pair.secretKey >> worker.coordinatorKey;
  ::unsetenv(runtime::kWorkerCurveEnvironment);
  if (!runtime::isCurveKey(pair.secretKey) || !runtime::isCurveKey(worker.coordinatorKey))
    return fail(std::string(runtime::kWorkerCurveEnvironment) + " does not hold CURVE keys");
  worker.curveKey = std::move(pair);
  return true;
}

} // namespace

int runWorkerCommand(const WorkerCommandOptions &options) {
  std::optional<std::vector<int64_t>> gpus = workerGpus(options.gpus);
  if (!gpus)
    return 2;
  runtime::WorkerOptions worker;
  if (!chooseWorkerKeys(options, worker))
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
  for (;;) {
    const int exit = runtime::runWorker(worker, registry);
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
