// Whether and how `orch run --listen ENDPOINT` authenticates workers: CURVE with --key and
// --authorized-keys, or nothing on a loopback or ipc endpoint, or with --insecure; listening on
// a network address without keys is refused (by the coordinator, from the address it binds)
// (docs/cluster.md, "Security").
#pragma once

#include "orch/runtime/cluster/CurveKeys.h"

#include <optional>
#include <string>

namespace orch {

struct ListenSecurityFlags {
  std::string listen;
  std::string keyPath;
  std::string authorizedKeysPath;
  bool insecure = false;
};

struct ListenSecurity {
  /// Unset: no authentication.
  std::optional<runtime::CurveKeyPair> key;
  runtime::AuthorizedKeys workers;
  /// No keys and no --insecure: the coordinator refuses unless it binds loopback addresses.
  bool loopbackOnly = false;
};

/// The security of the coordinator's socket, or nullopt after printing why the flags cannot be
/// used (a warning is printed for --insecure).
std::optional<ListenSecurity> chooseListenSecurity(const ListenSecurityFlags &flags);

} // namespace orch
