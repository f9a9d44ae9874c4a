// Trigger indexes and consistency checks of plans.
#include "orch/plan/Plan.h"

#include "orch/plan/OperatorCatalog.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace orch::plan {
namespace {

std::string nodeText(size_t index) { return "node " + std::to_string(index); }

/// Constants, and records, projections and filters computed from constants only, belong to no
/// domain: they are the same for every entity, and the runtime computes them once.
bool isDomainFree(const Plan &plan, const PlanNode &node) {
  if (node.kind == NodeKind::Constant)
    return true;
  if (node.kind != NodeKind::Record && node.kind != NodeKind::Project &&
      node.kind != NodeKind::Filter && node.kind != NodeKind::Compute)
    return false;
  for (uint32_t input : node.inputs)
    if (plan.nodes[input].domain != kNone)
      return false;
  return true;
}

std::optional<std::string> validateNode(const Plan &plan, size_t index) {
  const PlanNode &node = plan.nodes[index];
  std::string what = nodeText(index) + " (" + nodeKindName(node.kind) + ")";
  size_t expected = expectedInputCount(node.kind, node.labels.size());
  if (node.kind == NodeKind::Compute) {
    std::optional<size_t> operands = expectedComputeOperands(node.field, node.inputs.size());
    if (!operands)
      return what + " names no operation ('" + node.field + "')";
    expected = *operands;
  }
  if (node.kind == NodeKind::Dedup)
    expected = node.field == kDedupNear ? 2 : 1;
  if (node.inputs.size() != expected)
    return what + " has " + std::to_string(node.inputs.size()) + " inputs, expected " +
           std::to_string(expected);
  for (uint32_t input : node.inputs)
    if (input >= index)
      return what + " reads " + nodeText(input) + ", which does not come before it";
  if (node.domain != kNone && node.domain >= plan.domains.size())
    return what + " is in domain " + std::to_string(node.domain) + ", which does not exist";
  if (node.domain == kNone && !isDomainFree(plan, node))
    return what + " has no domain";
  switch (node.kind) {
  case NodeKind::Source:
    if (node.index >= plan.sources.size() || plan.sources[node.index].node != index)
      return what + " does not match its source";
    break;
  case NodeKind::Invoke:
    if (node.index >= plan.calls.size())
      return what + " invokes call " + std::to_string(node.index) + ", which does not exist";
    break;
  case NodeKind::Expand:
    if (node.index >= plan.domains.size() || node.index != node.domain ||
        plan.domains[node.index].parent != plan.nodes[node.inputs[0]].domain)
      return what + " does not open a child of its input's domain";
    break;
  case NodeKind::Reduce: {
    uint32_t from = plan.nodes[node.inputs[0]].domain;
    if (from >= plan.domains.size() || plan.domains[from].parent != node.domain)
      return what + " does not gather into the parent of its input's domain";
    if (!node.field.empty() && node.field != kReduceSkipsFailed)
      return what + " has an unknown way with failed members ('" + node.field + "')";
    break;
  }
  case NodeKind::Constant:
    if (!node.constant)
      return what + " has no value";
    break;
  case NodeKind::Dedup:
    if (node.field != kDedupExact && node.field != kDedupNear && node.field != kDedupHamming)
      return what + " has an unknown comparison ('" + node.field + "')";
    break;
  default:
    break;
  }
  return std::nullopt;
}

} // namespace

const char *nodeKindName(NodeKind kind) {
  switch (kind) {
  case NodeKind::Source:
    return "source";
  case NodeKind::Constant:
    return "constant";
  case NodeKind::Invoke:
    return "invoke";
  case NodeKind::Expand:
    return "expand";
  case NodeKind::Reduce:
    return "reduce";
  case NodeKind::Filter:
    return "filter";
  case NodeKind::Broadcast:
    return "broadcast";
  case NodeKind::Project:
    return "project";
  case NodeKind::Record:
    return "record";
  case NodeKind::Compute:
    return "compute";
  case NodeKind::Dedup:
    return "dedup";
  }
  return "?";
}

size_t expectedInputCount(NodeKind kind, size_t labelCount) {
  switch (kind) {
  case NodeKind::Source:
  case NodeKind::Constant:
    return 0;
  case NodeKind::Expand:
  case NodeKind::Reduce:
  case NodeKind::Project:
    return 1;
  case NodeKind::Filter:
  case NodeKind::Broadcast:
    return 2;
  case NodeKind::Invoke:
  case NodeKind::Record:
    return labelCount;
  case NodeKind::Compute:
  case NodeKind::Dedup:
    return SIZE_MAX;
  }
  return 0;
}

void computeTriggerIndexes(Plan &plan) {
  for (PlanNode &node : plan.nodes) {
    node.consumers.clear();
    node.sinks.clear();
  }
  for (uint32_t index = 0; index < plan.nodes.size(); ++index)
    for (uint32_t input : plan.nodes[index].inputs)
      if (input < plan.nodes.size()) {
        std::vector<uint32_t> &consumers = plan.nodes[input].consumers;
        if (consumers.empty() || consumers.back() != index)
          consumers.push_back(index);
      }
  for (uint32_t sink = 0; sink < plan.sinks.size(); ++sink)
    for (uint32_t input : plan.sinks[sink].inputs)
      if (input < plan.nodes.size()) {
        std::vector<uint32_t> &sinks = plan.nodes[input].sinks;
        if (sinks.empty() || sinks.back() != sink)
          sinks.push_back(sink);
      }
}

const PlanExternalOperator *Plan::externalOperator(std::string_view name) const {
  for (const PlanExternalOperator &op : operators)
    if (op.name == name)
      return &op;
  return nullptr;
}

namespace {

std::optional<std::string> validateExternalOperator(const Plan &plan, size_t index) {
  const PlanExternalOperator &op = plan.operators[index];
  const std::string what = "declared operator '" + op.name + "'";
  if (op.name.empty())
    return "declared operator " + std::to_string(index) + " has no name";
  for (size_t earlier = 0; earlier < index; ++earlier)
    if (plan.operators[earlier].name == op.name)
      return what + " is declared twice";
  if (op.runner != "python" && op.runner != "exec")
    return what + " has an unknown runner '" + op.runner + "'";
  if (op.path.empty() || op.path.front() != '/')
    return what + " has no absolute path";
  if (op.runner == "python" && op.className.empty())
    return what + " names no class";
  for (size_t p = 0; p < op.params.size(); ++p)
    for (size_t q = 0; q < p; ++q)
      if (op.params[p].name == op.params[q].name)
        return what + " has two parameters named '" + op.params[p].name + "'";
  return std::nullopt;
}

} // namespace

std::optional<std::string> validatePlan(const Plan &plan) {
  for (size_t index = 0; index < plan.operators.size(); ++index)
    if (std::optional<std::string> problem = validateExternalOperator(plan, index))
      return problem;
  for (size_t index = 0; index < plan.domains.size(); ++index) {
    uint32_t parent = plan.domains[index].parent;
    if (parent != kNone && parent >= index)
      return "domain " + std::to_string(index) + " has parent " + std::to_string(parent) +
             ", which does not come before it";
  }
  for (size_t index = 0; index < plan.calls.size(); ++index) {
    const CallOptions &options = plan.calls[index].options;
    if (options.batch < 1 || options.replicas < 0 || options.retries < 0 || options.gpus < 0 ||
        !(options.cpus > 0))
      return "call " + std::to_string(index) + " has out-of-range options";
    // Only operators that wait on a service take several batches at once (a replica of any
    // other would run them one after another on the run loop's thread).
    const OperatorSignature *signature =
        standardCatalog().find(OperatorKind::Transform, plan.calls[index].op);
    if (options.inFlight < 1 ||
        (options.inFlight > 1 && (!signature || signature->defaultInFlight == 0)))
      return "call " + std::to_string(index) + " (" + plan.calls[index].op + ") has in_flight " +
             std::to_string(options.inFlight) +
             ", which only operators that wait on a server accept";
  }
  for (size_t index = 0; index < plan.sources.size(); ++index) {
    const PlanSource &source = plan.sources[index];
    if (source.node >= plan.nodes.size() || source.domain >= plan.domains.size() ||
        plan.domains[source.domain].parent != kNone ||
        plan.nodes[source.node].domain != source.domain)
      return "source " + std::to_string(index) + " does not feed a node of its root domain";
  }
  for (size_t index = 0; index < plan.nodes.size(); ++index)
    if (std::optional<std::string> problem = validateNode(plan, index))
      return problem;
  for (size_t index = 0; index < plan.sinks.size(); ++index) {
    const PlanSink &sink = plan.sinks[index];
    if (sink.labels.size() != sink.inputs.size())
      return "sink " + std::to_string(index) + " has mismatched inputs and labels";
    if (sink.domain >= plan.domains.size())
      return "sink " + std::to_string(index) + " is in no domain";
    for (uint32_t input : sink.inputs) {
      if (input >= plan.nodes.size())
        return "sink " + std::to_string(index) + " reads " + nodeText(input) +
               ", which does not exist";
      if (plan.nodes[input].domain != kNone && plan.nodes[input].domain != sink.domain)
        return "sink " + std::to_string(index) + " reads " + nodeText(input) +
               ", which is not in the sink's domain";
    }
  }
  Plan recomputed = plan;
  computeTriggerIndexes(recomputed);
  for (size_t index = 0; index < plan.nodes.size(); ++index)
    if (recomputed.nodes[index].consumers != plan.nodes[index].consumers ||
        recomputed.nodes[index].sinks != plan.nodes[index].sinks)
      return "the trigger index of " + nodeText(index) + " does not match the nodes that read it";
  return std::nullopt;
}

} // namespace orch::plan
