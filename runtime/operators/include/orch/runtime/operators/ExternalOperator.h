// Operators a program declares (`operator ... = python(...)` / `exec(...)`): each replica is a
// child process of whoever hosts it (a worker thread in-process, a worker process), started
// once, fed batches over the protocol of docs/protocol.md ("Operator processes"), restarted when
// it crashes or hangs. docs/python.md is the user's guide.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/operators/ProgramPermissions.h"

#include <memory>
#include <string>
#include <vector>

namespace orch::runtime {

/// The interpreter of python(...) operators: $ORCH_PYTHON, else /usr/bin/python3 when it
/// exists, else `python3` on PATH.
std::string pythonInterpreter();

/// The factory of replicas of `op` (declared in `plan`, which must outlive it): each instance
/// starts its process at once and is ready after Operator::awaitStarted.
OperatorFactory externalOperatorFactory(const plan::Plan &plan,
                                        const plan::PlanExternalOperator &op);

/// The factories of a plan's Calls: the registry's implementations, and for declared operators
/// one that starts their processes (owned here), or, where `permissions` refuse the program,
/// one whose replicas fail to start with the reason.
class CallFactories {
public:
  CallFactories(const plan::Plan &plan, const OperatorRegistry &registry,
                const ProgramPermissions *permissions = nullptr);
  /// Null when nothing implements the Call's operator.
  const OperatorFactory *forCall(uint32_t call) const;
  /// Whether the Call runs a declared operator: its replicas start (and fail to start) before
  /// any row is admitted.
  bool startsEagerly(uint32_t call) const { return eager_[call]; }

private:
  std::vector<const OperatorFactory *> factories_;
  std::vector<bool> eager_;
  std::vector<std::unique_ptr<OperatorFactory>> owned_;
};

} // namespace orch::runtime
