// The coordinator's choice between CURVE and no authentication (ListenSecurity.h).
#include "ListenSecurity.h"

#include "orch/runtime/cluster/Coordinator.h"

#include "llvm/Support/raw_ostream.h"

namespace orch {

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
    } else {
      // Decided from the address a socket binds (a name is not enough), now and again by the
      // coordinator when it binds.
      if (std::optional<std::string> problem = runtime::keylessEndpointProblem(flags.listen))
        return fail(*problem);
      security.loopbackOnly = true;
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
