// Names of the engine's states for messages, and the grain life cycle's legal transitions.
#include "orch/runtime/engine/EngineTypes.h"

namespace orch::runtime {

const char *itemOutcomeName(ItemOutcome outcome) {
  switch (outcome) {
  case ItemOutcome::Unresolved:
    return "unresolved";
  case ItemOutcome::Present:
    return "present";
  case ItemOutcome::Dropped:
    return "dropped";
  case ItemOutcome::Failed:
    return "failed";
  case ItemOutcome::Suppressed:
    return "suppressed";
  case ItemOutcome::NotNeeded:
    return "not needed";
  }
  return "?";
}

const char *grainPhaseName(GrainPhase phase) {
  switch (phase) {
  case GrainPhase::Waiting:
    return "waiting";
  case GrainPhase::Ready:
    return "ready";
  case GrainPhase::InFlight:
    return "in-flight";
  case GrainPhase::Sealed:
    return "sealed";
  }
  return "?";
}

bool isLegalGrainTransition(GrainPhase from, GrainPhase to) {
  switch (from) {
  case GrainPhase::Waiting:
    return to == GrainPhase::Ready || to == GrainPhase::Sealed;
  case GrainPhase::Ready:
    return to == GrainPhase::InFlight || to == GrainPhase::Sealed;
  case GrainPhase::InFlight:
    return to == GrainPhase::Sealed || to == GrainPhase::Ready;
  case GrainPhase::Sealed:
    return false;
  }
  return false;
}

const char *commitStatusName(CommitStatus status) {
  switch (status) {
  case CommitStatus::Committed:
    return "committed";
  case CommitStatus::Stale:
    return "stale";
  case CommitStatus::ContractViolation:
    return "contract-violation";
  case CommitStatus::BatchError:
    return "batch-error";
  }
  return "?";
}

const char *failureKindName(FailureKind kind) {
  switch (kind) {
  case FailureKind::RecordFailure:
    return "record-failure";
  case FailureKind::GroupFailure:
    return "group-failure";
  case FailureKind::OperatorError:
    return "operator-error";
  case FailureKind::ContractViolation:
    return "contract-violation";
  case FailureKind::Infrastructure:
    return "infrastructure";
  case FailureKind::Crash:
    return "crash";
  case FailureKind::Timeout:
    return "timeout";
  case FailureKind::SourceError:
    return "source-error";
  case FailureKind::Aborted:
    return "aborted";
  case FailureKind::Interrupted:
    return "interrupted";
  case FailureKind::OutputFailure:
    return "output-failure";
  }
  return "?";
}

const char *batchLossName(BatchLoss loss) {
  switch (loss) {
  case BatchLoss::None:
    return "none";
  case BatchLoss::Infrastructure:
    return "infrastructure";
  case BatchLoss::Crash:
    return "crash";
  case BatchLoss::Timeout:
    return "timeout";
  case BatchLoss::Bystander:
    return "bystander";
  }
  return "?";
}

const Failure *rootCause(const RootResult &root) {
  for (const SinkRow &row : root.rows)
    if (row.status == RowStatus::Failed && row.failure < root.failures.size())
      return &root.failures[row.failure];
  return root.failures.empty() ? nullptr : &root.failures.front();
}

bool stoppedByTheRun(const RootResult &root) {
  return root.status == RootStatus::Failed && !root.failures.empty() &&
         (root.failures.front().kind == FailureKind::Interrupted ||
          root.failures.front().kind == FailureKind::Aborted);
}

const char *rowStatusName(RowStatus status) {
  switch (status) {
  case RowStatus::Written:
    return "written";
  case RowStatus::Dropped:
    return "dropped";
  case RowStatus::Failed:
    return "failed";
  }
  return "?";
}

const char *rootStatusName(RootStatus status) {
  switch (status) {
  case RootStatus::Written:
    return "written";
  case RootStatus::Dropped:
    return "dropped";
  case RootStatus::Failed:
    return "failed";
  }
  return "?";
}

} // namespace orch::runtime

namespace orch::runtime {

void ServiceUsage::add(const ServiceUsage &other) {
  requests += other.requests;
  retries += other.retries;
  failedRequests += other.failedRequests;
  promptTokens += other.promptTokens;
  completionTokens += other.completionTokens;
  latencies.insert(latencies.end(), other.latencies.begin(), other.latencies.end());
}

} // namespace orch::runtime
