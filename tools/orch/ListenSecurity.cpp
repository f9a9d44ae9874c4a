// The coordinator's choice between CURVE and no authentication (ListenSecurity.h).
#include "ListenSecurity.h"

#include "llvm/Support/raw_ostream.h"

namespace orch {

bool isNetworkEndpoint(const std::string &endpoint) {
  const std::string scheme = "tcp://";
  if (endpoint.compare(0, scheme.size(), scheme) != 0)
    return false;
  std::string host = endpoint.substr(scheme.size());
  // tcp://HOST:PORT, tcp://[IPV6]:PORT; a source address (SRC;HOST:PORT) is irrelevant here.
  if (size_t semicolon = host.find(';'); semicolon != std::string::npos)
    host = host.substr(semicolon + 1);
  if (size_t colon = host.rfind(':'); colon != std::string::npos)
    host = host.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return !(host == "localhost" || host == "lo" || host == "::1" || host.rfind("127.", 0) == 0);
}

std::optional<ListenSecurity> chooseListenSecurity(const ListenSecurityFlags &flags) {
  auto fail = [](const std::string &message) -> std::optional<ListenSecurity> {
    llvm::errs() << "orch: error: " << message << "\n";
    return std::nullopt;
  };
  const bool keys = !flags.keyPath.empty() || !flags.authorizedKeysPath.empty();
  if (keys && flags.listen.empty())
    return fail("--key and --authorized-keys secure a --listen endpoint; there is none (local "
                "workers use a private socket)");
  if (keys && flags.insecure)
    return fail("--insecure turns keys off; give either keys or --insecure");
  if (keys && (flags.keyPath.empty() || flags.authorizedKeysPath.empty()))
    return fail(std::string("CURVE needs both --key (the coordinator's .key file) and "
                            "--authorized-keys (the workers' .pub lines); ") +
                (flags.keyPath.empty() ? "--key" : "--authorized-keys") + " is missing");
  ListenSecurity security;
  if (!keys) {
    if (flags.insecure) {
      llvm::errs() << "orch: warning: --insecure: " << flags.listen
                   << " admits any peer that can reach it as a worker, unauthenticated and "
                      "unencrypted; it receives the plan and input values and can forge "
                      "results\n";
    } else if (isNetworkEndpoint(flags.listen)) {
      return fail(
          "refusing to listen on " + flags.listen +
          " without keys: anyone who can reach it could join as a worker, read the inputs and "
          "forge results. Make keys with `orch keygen coordinator` and `orch keygen "
          "WORKER` and run with --key coordinator.key --authorized-keys workers.pub (the "
          "workers' .pub files, one per line); workers get --key WORKER.key --server-key "
          "coordinator.pub. On a trusted network, --insecure listens without keys");
    } else if (flags.listen.rfind("tcp://", 0) == 0) {
      llvm::errs() << "orch: note: " << flags.listen
                   << " admits any process on this machine as a worker; where other users log "
                      "in, use keys (orch keygen; docs/cluster.md)\n";
    }
    return security;
  }
  auto pair = runtime::readKeyPairFile(flags.keyPath);
  if (auto *problem = std::get_if<std::string>(&pair))
    return fail(*problem);
  auto workers = runtime::readAuthorizedKeys(flags.authorizedKeysPath);
  if (auto *problem = std::get_if<std::string>(&workers))
    return fail(*problem);
  security.key = std::get<runtime::CurveKeyPair>(std::move(pair));
  security.workers = std::get<runtime::AuthorizedKeys>(std::move(workers));
  return security;
}

} // namespace orch
