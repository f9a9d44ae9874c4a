// The Graphviz view of a plan: nodes and sinks inside one cluster per domain, child domains'
// clusters nested inside their parents', constants outside any cluster.
#include "orch/plan/PlanPrinters.h"

#include <functional>

namespace orch::plan {
namespace {

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string nodeLabel(const Plan &plan, const PlanNode &node) {
  std::string label;
  switch (node.kind) {
  case NodeKind::Invoke:
    if (node.index >= plan.calls.size())
      label = "invoke";
    else if (plan.calls[node.index].name == node.name) // an inline call named after its value
      label = plan.calls[node.index].op;
    else
      label = plan.calls[node.index].name + "\n" + plan.calls[node.index].op;
    break;
  case NodeKind::Source:
    label = "source " + (node.index < plan.sources.size() ? plan.sources[node.index].op : "");
    break;
  case NodeKind::Constant:
    label = node.constant ? formatStaticValue(*node.constant) : "constant";
    break;
  case NodeKind::Project:
    label = "." + node.field;
    break;
  case NodeKind::Compute:
    if (std::optional<ComputeOp> op = computeOpNamed(node.field))
      label = computeOpSpelling(*op);
    else
      label = node.field;
    break;
  case NodeKind::Dedup:
    label = std::string("dedup.") + node.field;
    break;
  default:
    label = nodeKindName(node.kind);
  }
  if (!node.name.empty())
    label = node.name + " = " + label;
  return label + "\n" + node.type.str();
}

} // namespace

void printPlanDot(const Plan &plan, std::ostream &out) {
  out << "digraph \"" << escape(plan.pipelineName) << "\" {\n"
      << "  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n";
  std::function<void(uint32_t, int)> cluster = [&](uint32_t domain, int depth) {
    std::string indent(size_t(2 * depth), ' ');
    out << indent << "subgraph cluster_" << domain << " {\n"
        << indent << "  label=\"" << escape(plan.domains[domain].name) << "\";\n";
    for (size_t i = 0; i < plan.nodes.size(); ++i)
      if (plan.nodes[i].domain == domain)
        out << indent << "  n" << i << " [label=\"" << escape(nodeLabel(plan, plan.nodes[i]))
            << "\"];\n";
    for (size_t i = 0; i < plan.sinks.size(); ++i)
      if (plan.sinks[i].domain == domain)
        out << indent << "  s" << i << " [shape=cylinder, label=\"sink " << escape(plan.sinks[i].op)
            << "\"];\n";
    for (uint32_t child = 0; child < plan.domains.size(); ++child)
      if (plan.domains[child].parent == domain)
        cluster(child, depth + 1);
    out << indent << "}\n";
  };
  for (uint32_t domain = 0; domain < plan.domains.size(); ++domain)
    if (plan.domains[domain].parent == kNone)
      cluster(domain, 1);
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    if (plan.nodes[i].domain == kNone)
      out << "  n" << i << " [shape=plaintext, label=\"" << escape(nodeLabel(plan, plan.nodes[i]))
          << "\"];\n";
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    for (size_t k = 0; k < plan.nodes[i].inputs.size(); ++k) {
      out << "  n" << plan.nodes[i].inputs[k] << " -> n" << i;
      if (k < plan.nodes[i].labels.size() && plan.nodes[i].kind == NodeKind::Invoke)
        out << " [label=\"" << escape(plan.nodes[i].labels[k]) << "\"]";
      out << ";\n";
    }
  for (size_t i = 0; i < plan.sinks.size(); ++i)
    for (size_t k = 0; k < plan.sinks[i].inputs.size(); ++k)
      out << "  n" << plan.sinks[i].inputs[k] << " -> s" << i << " [label=\""
          << escape(plan.sinks[i].labels[k]) << "\"];\n";
  out << "}\n";
}

} // namespace orch::plan
