// `orch-worker --connect ENDPOINT`: a process that serves coordinators (`orch run`) by running
// operator batches. It carries the runtime and the standard library, not the compiler.
#pragma once

#include <cstdint>
#include <string>

namespace orch::tools {

struct WorkerCommandOptions {
  std::string connect;
  /// CURVE: this worker's key pair (NAME.key) and the coordinator's public key (NAME.pub).
  std::string keyPath;
  std::string serverKeyPath;
  /// Serve a coordinator it cannot authenticate (runs no programs unless allowed).
  bool insecure = false;
  /// The allow-list of programs declared operators may run ("" = none).
  std::string allowOperatorsPath;
  std::string name;
  double cpus = 1;
  /// Where other workers fetch kept values ("" = chosen by the worker).
  std::string peerEndpoint;
  /// The endpoint announced to other workers ("" = the bound one).
  std::string peerAnnounce;
  /// Bytes of memory offered to replicas.
  uint64_t memoryBytes = 0;
  /// "auto" (every usable CUDA device), "none", or device indexes "0,1".
  std::string gpus = "auto";
  unsigned connectTimeoutSeconds = 60;
  bool quiet = false;
  /// Serve one run and exit (otherwise connect again after each run until stopped).
  bool once = false;
};

/// Serves coordinators, one run after the other, until stopped (or, with `once`, until its
/// first coordinator says goodbye or is lost). Returns the process's exit code.
int runWorkerCommand(const WorkerCommandOptions &options);

} // namespace orch::tools
