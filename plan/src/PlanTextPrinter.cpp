// The text view of a plan: domains, Calls, sources, nodes with their trigger indexes, sinks.
#include "orch/plan/PlanPrinters.h"

namespace orch::plan {
namespace {

std::string constantsText(const std::vector<NamedConstant> &constants) {
  std::string out;
  for (const NamedConstant &constant : constants)
    out += (out.empty() ? "" : ", ") + constant.name + ": " + formatStaticValue(constant.value);
  return out;
}

std::string indexesText(const std::vector<uint32_t> &indexes) {
  std::string out;
  for (uint32_t index : indexes)
    out += (out.empty() ? "" : " ") + std::to_string(index);
  return out;
}

std::string domainText(const Plan &plan, uint32_t domain) {
  return domain < plan.domains.size() ? plan.domains[domain].name : "-";
}

/// "batch 8, replicas 2, cpus 1, retries 0, recovery isolate, timeout 30s": the options
/// always shown, then the others that differ from their defaults.
std::string optionsText(const CallOptions &options) {
  const CallOptions defaults;
  std::string out;
  for (const CallOptionSpec &spec : callOptionSpecs()) {
    const std::string text = callOptionText(spec, options);
    if (!spec.alwaysShown && text == callOptionText(spec, defaults))
      continue;
    out += out.empty() ? "" : ", ";
    out += spec.name;
    // A flag that is set is its name alone ("require_gpu").
    const bool setFlag = std::holds_alternative<bool>(spec.get(options)) &&
                         !(spec.isUnset && spec.isUnset(options)) && text == "true";
    if (!setFlag)
      out += " " + text;
  }
  return out;
}

} // namespace

void printPlanText(const Plan &plan, std::ostream &out) {
  out << "plan " << plan.pipelineName << " (format " << plan.format.major << "."
      << plan.format.minor << ") from " << plan.sourcePath << "\n";
  out << "domains:\n";
  for (size_t i = 0; i < plan.domains.size(); ++i) {
    out << "  " << i << " " << plan.domains[i].name;
    if (plan.domains[i].parent != kNone)
      out << " in " << domainText(plan, plan.domains[i].parent);
    out << "\n";
  }
  if (!plan.operators.empty())
    out << "operators:\n";
  for (const PlanExternalOperator &op : plan.operators) {
    out << "  " << op.name << "(";
    for (size_t k = 0; k < op.params.size(); ++k)
      out << (k ? ", " : "") << (op.params[k].constant ? "const " : "") << op.params[k].name << ": "
          << op.params[k].type.str();
    out << ") -> " << op.result.str() << " = " << op.runner << " " << op.path;
    if (!op.className.empty())
      out << " class " << op.className;
    for (const std::string &arg : op.args)
      out << " " << quoteString(arg);
    out << " sha256 " << op.sha256.substr(0, 12);
    if (op.line > 0)
      out << " at " << op.line << ":" << op.column;
    out << "\n";
  }
  out << "calls:\n";
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    out << "  " << i << " " << call.name << " = " << call.op << "(" << constantsText(call.constants)
        << ") [" << optionsText(call.options) << "]" << (call.gpu ? " gpu-capable" : "") << "\n";
  }
  out << "sources:\n";
  for (size_t i = 0; i < plan.sources.size(); ++i) {
    const PlanSource &source = plan.sources[i];
    out << "  " << i << " " << source.op << "(" << constantsText(source.constants) << ") -> node "
        << source.node << " in " << domainText(plan, source.domain) << "\n";
  }
  out << "nodes:\n";
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode &node = plan.nodes[i];
    out << "  " << i << " " << nodeKindName(node.kind);
    if (node.kind == NodeKind::Invoke && node.index < plan.calls.size())
      out << " " << plan.calls[node.index].name;
    if (node.kind == NodeKind::Expand)
      out << " as " << domainText(plan, node.index);
    if (node.kind == NodeKind::Project)
      out << " ." << node.field;
    if (node.kind == NodeKind::Compute || node.kind == NodeKind::Dedup)
      out << " " << node.field;
    if (!node.constants.empty())
      out << "(" << constantsText(node.constants) << ")";
    if (node.constant)
      out << " " << formatStaticValue(*node.constant);
    if (!node.inputs.empty()) {
      out << " (";
      for (size_t k = 0; k < node.inputs.size(); ++k)
        out << (k ? ", " : "") << (k < node.labels.size() ? node.labels[k] + ": " : "")
            << node.inputs[k];
      out << ")";
    }
    out << " : " << domainText(plan, node.domain) << "<" << node.type.str() << ">";
    if (!node.name.empty())
      out << " '" << node.name << "'";
    if (!node.consumers.empty())
      out << " -> nodes " << indexesText(node.consumers);
    if (!node.sinks.empty())
      out << " -> sinks " << indexesText(node.sinks);
    out << "\n";
  }
  out << "sinks:\n";
  for (size_t i = 0; i < plan.sinks.size(); ++i) {
    const PlanSink &sink = plan.sinks[i];
    out << "  " << i << " " << sink.op << "(" << constantsText(sink.constants) << ") (";
    for (size_t k = 0; k < sink.inputs.size(); ++k)
      out << (k ? ", " : "") << sink.labels[k] << ": " << sink.inputs[k];
    out << ") in " << domainText(plan, sink.domain) << "\n";
  }
}

} // namespace orch::plan
