// A plan's meaning and how two plans differ (PlanFingerprint.h).
#include "orch/plan/PlanFingerprint.h"

#include "orch/plan/CallOptions.h"
#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"
#include "orch/plan/Sha256.h"

#include <map>

namespace orch::plan {
namespace {

/// "lang "eng" → "deu"", one per constant that differs, was added or went.
void compareConstants(const std::string &what, const std::vector<NamedConstant> &before,
                      const std::vector<NamedConstant> &after, std::vector<std::string> &out) {
  std::map<std::string, std::string> old, now;
  for (const NamedConstant &constant : before)
    old[constant.name] = formatStaticValue(constant.value);
  for (const NamedConstant &constant : after)
    now[constant.name] = formatStaticValue(constant.value);
  for (const auto &[name, value] : now) {
    auto found = old.find(name);
    if (found == old.end())
      out.push_back(what + ": " + name + " " + value + " was added");
    else if (found->second != value)
      out.push_back(what + ": " + name + " " + found->second + " → " + value);
  }
  for (const auto &[name, value] : old)
    if (!now.count(name))
      out.push_back(what + ": " + name + " " + value + " was removed");
}

void compareCalls(const Plan &before, const Plan &after, std::vector<std::string> &out) {
  std::map<std::string, const PlanCall *> old;
  for (const PlanCall &call : before.calls)
    old[call.name] = &call;
  for (const PlanCall &call : after.calls) {
    const std::string what = "Call `" + call.name + "`";
    auto found = old.find(call.name);
    if (found == old.end()) {
      out.push_back(what + " (" + call.op + ") was added");
      continue;
    }
    const PlanCall &was = *found->second;
    old.erase(found);
    if (was.op != call.op)
      out.push_back(what + ": operator " + was.op + " → " + call.op);
    compareConstants(what, was.constants, call.constants, out);
    for (const CallOptionSpec &spec : callOptionSpecs()) {
      const std::string a = callOptionText(spec, was.options);
      const std::string b = callOptionText(spec, call.options);
      if (a != b)
        out.push_back(what + ": " + std::string(spec.name) + " " + a + " → " + b);
    }
  }
  for (const auto &[name, call] : old)
    out.push_back("Call `" + name + "` (" + call->op + ") was removed");
}

/// Sources or sinks, by position: "sink 0 (jsonl): path "a" → "b"", or how many there are.
template <typename End>
void compareEnds(const std::string &kind, const std::vector<End> &before,
                 const std::vector<End> &after, std::vector<std::string> &out) {
  for (size_t s = 0; s < std::min(before.size(), after.size()); ++s) {
    const std::string what = kind + " " + std::to_string(s) + " (" + after[s].op + ")";
    if (before[s].op != after[s].op)
      out.push_back(kind + " " + std::to_string(s) + ": " + before[s].op + " → " + after[s].op);
    compareConstants(what, before[s].constants, after[s].constants, out);
  }
  if (before.size() != after.size())
    out.push_back(kind + "s: " + std::to_string(before.size()) + " → " +
                  std::to_string(after.size()));
}

void compareOperators(const Plan &before, const Plan &after, std::vector<std::string> &out) {
  std::map<std::string, const PlanExternalOperator *> old;
  for (const PlanExternalOperator &op : before.operators)
    old[op.name] = &op;
  for (const PlanExternalOperator &op : after.operators) {
    auto found = old.find(op.name);
    if (found == old.end())
      out.push_back("operator `" + op.name + "` was declared");
    else if (found->second->sha256 != op.sha256)
      out.push_back("operator `" + op.name + "`: its script \"" + op.path + "\" changed");
    else if (!(*found->second == op))
      out.push_back("operator `" + op.name + "`: its declaration changed");
  }
}

} // namespace

std::string planMeaning(const Plan &plan) {
  Plan meaning = plan;
  meaning.sourcePath.clear();
  return encodePlan(meaning);
}

/// In a dataflow of the same shape, the constants (a param's value, a literal) and the names
/// of bindings that changed, placed in `after`'s source.
void compareNodes(const Plan &before, const Plan &after, std::vector<std::string> &out) {
  if (before.nodes.size() != after.nodes.size())
    return;
  for (size_t n = 0; n < before.nodes.size(); ++n)
    if (before.nodes[n].kind != after.nodes[n].kind)
      return;
  for (size_t n = 0; n < before.nodes.size(); ++n) {
    const PlanNode &old = before.nodes[n], &now = after.nodes[n];
    if (old.constant && now.constant && !(*old.constant == *now.constant))
      out.push_back("the constant at " + sourceLocation(after, now.line, now.column) + ": " +
                    formatStaticValue(*old.constant) + " → " + formatStaticValue(*now.constant));
    else if (!old.name.empty() && !now.name.empty() && old.name != now.name)
      out.push_back("`" + old.name + "` is named `" + now.name + "` now");
  }
}

std::string planFingerprint(const Plan &plan) { return sha256Hex(planMeaning(plan)); }

std::vector<std::string> describePlanChanges(const Plan &before, const Plan &after) {
  std::vector<std::string> out;
  if (planMeaning(before) == planMeaning(after))
    return out;
  compareCalls(before, after, out);
  compareEnds("source", before.sources, after.sources, out);
  compareEnds("sink", before.sinks, after.sinks, out);
  compareOperators(before, after, out);
  compareNodes(before, after, out);
  if (out.empty())
    out.push_back("the dataflow between the sources and the sinks changed");
  return out;
}

} // namespace orch::plan
