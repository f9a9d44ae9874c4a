// Which declared operators' programs (`exec(...)`, `python(...)`: a plan that names a program
// is code) a worker may start for its coordinator: every one for a coordinator it authenticated
// (CURVE with a pinned key, or the private socket of the `orch run` that started it), none for
// one it did not (`orch worker --insecure`); and with an allow-list (`--allow-operators FILE`)
// only the programs listed, whoever asks (docs/cluster.md, "Security").
#pragma once

#include "orch/plan/Plan.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>

namespace orch::runtime {

struct ProgramPermissions {
  /// Whether the worker knows who its coordinator is.
  bool coordinatorAuthenticated = false;
  /// With a list, only these (runner, absolute path) pairs run: ("exec", "/usr/bin/convert"),
  /// ("python", "/opt/ops/ocr.py").
  std::optional<std::set<std::pair<std::string, std::string>>> allowed;
  /// Where the list was read from, for messages.
  std::string allowedFrom;

  /// Why `op`'s program may not start here, or nullopt.
  std::optional<std::string> refusal(const plan::PlanExternalOperator &op) const;
};

/// The allow-list file of `orch worker --allow-operators FILE`: lines `exec PATH` or `python
/// PATH` (absolute paths; blank lines and `#` comments allowed). Refused, like key files, when
/// someone else could have written it (TrustedFiles.h); a bad line is named by path:line.
std::variant<std::set<std::pair<std::string, std::string>>, std::string>
readAllowedOperators(const std::string &path);

} // namespace orch::runtime
