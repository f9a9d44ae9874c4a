// Test helper: the sequential reference interpreter of the execution semantics
// (semantics.md), against which the engine property test and the runtime's differential tester
// compare every row. It is lazy, which is the demand rule read literally: an item is computed
// only when something that is itself computed asks for it, starting from the sinks; an if asks
// for its condition and then one branch, a coalesce for its operands until one is not dropped,
// a filter for its mask and then (where the mask is true or failed) its value, a reduce for its
// children. No scheduling, batching, infrastructure failures or barriers. Dedup nodes
// (`dedup.exact`) keep what they have seen across run() calls, which must come in source
// order: an entity is a duplicate of an earlier one with an equal value whose root did not
// fail (a failed root's values are forgotten when it finishes).
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/values/Value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace orch::testing {

using namespace orch::runtime;

/// Evaluates a plan for one root sequentially and lazily: only what a sink needs is computed.
class ReferenceInterpreter {
public:
  struct Item {
    ItemOutcome outcome = ItemOutcome::Unresolved;
    Value value;
  };
  struct Entity {
    uint32_t domain;
    int parent;
    std::vector<uint32_t> path;
    std::map<uint32_t, Item> items;
    /// Child domain -> (expansion outcome, children in ordinal order).
    std::map<uint32_t, std::pair<ItemOutcome, std::vector<int>>> expansions;
  };

  explicit ReferenceInterpreter(const plan::Plan &plan) : plan_(plan) {}

  RootResult run(uint64_t sourceRow, const Value &row) {
    entities_.clear();
    seenThisRoot_.clear();
    duplicates_.clear();
    lostSinkRows_ = false;
    sourceRow_ = sourceRow;
    entities_.push_back(Entity{plan_.sources[0].domain, -1, {}, {}, {}});
    entities_[0].items[plan_.sources[0].node] = {ItemOutcome::Present, row};
    RootResult result;
    result.sourceRow = sourceRow;
    bool anyFailed = false, anyWritten = false;
    for (uint32_t s = 0; s < plan_.sinks.size(); ++s) {
      for (int e : entitiesIn(plan_.sinks[s].domain)) {
        SinkRow sinkRow;
        sinkRow.sink = s;
        sinkRow.path = entities_[e].path;
        for (uint32_t input : plan_.sinks[s].inputs) {
          const Item item = itemFor(input, e);
          if (item.outcome == ItemOutcome::Failed || item.outcome == ItemOutcome::Suppressed) {
            sinkRow.status = RowStatus::Failed;
            break;
          }
          if (item.outcome == ItemOutcome::Dropped)
            sinkRow.status = RowStatus::Dropped;
          sinkRow.values.push_back(item.value);
        }
        if (sinkRow.status != RowStatus::Written)
          sinkRow.values.clear();
        anyFailed |= sinkRow.status == RowStatus::Failed;
        anyWritten |= sinkRow.status == RowStatus::Written;
        result.rows.push_back(std::move(sinkRow));
      }
    }
    result.status = anyFailed || lostSinkRows_ ? RootStatus::Failed
                    : anyWritten               ? RootStatus::Written
                                               : RootStatus::Dropped;
    if (result.status == RootStatus::Failed) {
      for (const auto &[node, key] : seenThisRoot_)
        seen_[node].erase(key);
    } else {
      result.duplicates = std::move(duplicates_);
      // As the engine lists them: by entity, then by node name.
      std::stable_sort(result.duplicates.begin(), result.duplicates.end(),
                       [](const DuplicateRow &a, const DuplicateRow &b) {
                         return std::tie(a.path, a.dedup) < std::tie(b.path, b.dedup);
                       });
    }
    return result;
  }

  /// Operators the last run() invoked, by Call name (what demand let run).
  const std::map<std::string, size_t> &invocations() const { return invocations_; }

private:
  bool sinksAtOrBelow(uint32_t domain) const {
    for (const plan::PlanSink &sink : plan_.sinks)
      for (uint32_t d = sink.domain; d != plan::kNone; d = plan_.domains[d].parent)
        if (d == domain)
          return true;
    return false;
  }

  /// The children of `parent` in `domain` (one level below), expanding it on first use.
  const std::vector<int> &childrenOf(int parent, uint32_t domain) {
    auto found = entities_[parent].expansions.find(domain);
    if (found != entities_[parent].expansions.end())
      return found->second.second;
    uint32_t expandNode = 0;
    while (!(plan_.nodes[expandNode].kind == plan::NodeKind::Expand &&
             plan_.nodes[expandNode].domain == domain))
      ++expandNode;
    const Item list = itemFor(plan_.nodes[expandNode].inputs[0], parent);
    std::pair<ItemOutcome, std::vector<int>> expansion;
    if (list.outcome != ItemOutcome::Present) {
      expansion.first =
          list.outcome == ItemOutcome::Dropped ? ItemOutcome::Dropped : ItemOutcome::Failed;
      lostSinkRows_ |= expansion.first == ItemOutcome::Failed && sinksAtOrBelow(domain);
    } else {
      expansion.first = ItemOutcome::Present;
      const ValueList &elements = list.value.asList();
      for (uint32_t i = 0; i < elements.size(); ++i) {
        Entity child{domain, parent, entities_[parent].path, {}, {}};
        child.path.push_back(i);
        child.items[expandNode] = {ItemOutcome::Present, elements[i]};
        entities_.push_back(std::move(child));
        expansion.second.push_back(int(entities_.size()) - 1);
      }
    }
    auto &stored = entities_[parent].expansions[domain];
    stored = std::move(expansion);
    return stored.second;
  }

  /// Entities of `domain` in lineage order, expanding what leads to them.
  std::vector<int> entitiesIn(uint32_t domain) {
    std::vector<uint32_t> path;
    for (uint32_t d = domain; d != plan::kNone; d = plan_.domains[d].parent)
      path.insert(path.begin(), d);
    std::vector<int> level{0};
    for (size_t i = 1; i < path.size(); ++i) {
      std::vector<int> next;
      for (int e : level) {
        const std::vector<int> &children = childrenOf(e, path[i]);
        next.insert(next.end(), children.begin(), children.end());
      }
      level = next;
    }
    return level;
  }

  /// The item of `node` seen from `entity` (its own, an ancestor's or a constant), computed
  /// on first use.
  Item itemFor(uint32_t node, int entity) {
    if (plan_.nodes[node].domain == plan::kNone)
      return constant(node);
    while (entities_[entity].domain != plan_.nodes[node].domain)
      entity = entities_[entity].parent;
    auto found = entities_[entity].items.find(node);
    if (found != entities_[entity].items.end())
      return found->second;
    Item item = evaluate(node, entity);
    entities_[entity].items[node] = item;
    return item;
  }

  Item constant(uint32_t node) const {
    const plan::PlanNode &planNode = plan_.nodes[node];
    switch (planNode.kind) {
    case plan::NodeKind::Constant: {
      const plan::StaticValue &value = *planNode.constant;
      if (auto *integer = std::get_if<int64_t>(&value))
        return {ItemOutcome::Present, Value::integer(*integer)};
      if (auto *real = std::get_if<double>(&value))
        return {ItemOutcome::Present, Value::real(*real)};
      if (auto *text = std::get_if<std::string>(&value))
        return {ItemOutcome::Present, Value::string(*text)};
      return {ItemOutcome::Present, Value::boolean(std::get<bool>(value))};
    }
    default:
      ADD_FAILURE() << "reference: unexpected domain-free " << plan::nodeKindName(planNode.kind);
      return {};
    }
  }

  static bool failed(const Item &item) {
    return item.outcome == ItemOutcome::Failed || item.outcome == ItemOutcome::Suppressed;
  }

  /// What a choice takes from the operand it chose: a failure is suppressed, else as is.
  static Item taken(const Item &chosen) {
    return failed(chosen) ? Item{ItemOutcome::Suppressed, {}} : chosen;
  }

  static bool isTrue(const Item &item) {
    return item.outcome == ItemOutcome::Present && item.value.kind() == Value::Kind::Bool &&
           item.value.asBool();
  }

  Item evaluate(uint32_t n, int e) {
    const plan::PlanNode &node = plan_.nodes[n];
    switch (node.kind) {
    case plan::NodeKind::Broadcast:
      return itemFor(node.inputs[0], e);
    case plan::NodeKind::Reduce: {
      const uint32_t childDomain = plan_.nodes[node.inputs[0]].domain;
      const std::vector<int> children = childrenOf(e, childDomain);
      const ItemOutcome expansion = entities_[e].expansions.at(childDomain).first;
      if (expansion == ItemOutcome::Dropped)
        return {ItemOutcome::Dropped, {}};
      if (expansion == ItemOutcome::Failed)
        return {ItemOutcome::Suppressed, {}};
      ValueList values;
      for (int child : children) {
        Item member = itemFor(node.inputs[0], child);
        if (failed(member))
          return {ItemOutcome::Suppressed, {}};
        if (member.outcome == ItemOutcome::Present)
          values.push_back(member.value);
      }
      return {ItemOutcome::Present, Value::list(std::move(values))};
    }
    case plan::NodeKind::Filter: {
      // A false or dropped mask drops the value without needing it; a dropped value stays
      // dropped whatever the mask; then a failure suppresses.
      const Item mask = itemFor(node.inputs[1], e);
      if (!isTrue(mask) && !failed(mask))
        return {ItemOutcome::Dropped, {}};
      const Item value = itemFor(node.inputs[0], e);
      if (value.outcome == ItemOutcome::Dropped)
        return {ItemOutcome::Dropped, {}};
      if (failed(value) || failed(mask))
        return {ItemOutcome::Suppressed, {}};
      return value;
    }
    case plan::NodeKind::Compute:
      if (node.field == "if") {
        const Item condition = itemFor(node.inputs[0], e);
        if (condition.outcome != ItemOutcome::Present)
          return taken(condition);
        return taken(itemFor(node.inputs[isTrue(condition) ? 1 : 2], e));
      }
      if (node.field == "coalesce") {
        for (uint32_t input : node.inputs)
          if (Item operand = itemFor(input, e); operand.outcome != ItemOutcome::Dropped)
            return taken(operand);
        return {ItemOutcome::Dropped, {}};
      }
      break;
    default:
      break;
    }
    std::vector<Value> inputs;
    bool dropped = false, anyFailed = false;
    for (uint32_t input : node.inputs) {
      Item item = itemFor(input, e);
      anyFailed |= failed(item);
      dropped |= item.outcome == ItemOutcome::Dropped;
      inputs.push_back(item.value);
    }
    if (anyFailed)
      return {ItemOutcome::Suppressed, {}};
    if (dropped)
      return {ItemOutcome::Dropped, {}};
    switch (node.kind) {
    case plan::NodeKind::Project: {
      const Value *field = inputs[0].field(node.field);
      return {ItemOutcome::Present, field ? *field : Value()};
    }
    case plan::NodeKind::Record: {
      RecordFields fields;
      for (size_t i = 0; i < inputs.size(); ++i)
        fields.emplace_back(node.labels[i], inputs[i]);
      return {ItemOutcome::Present, Value::record(std::move(fields))};
    }
    case plan::NodeKind::Dedup: {
      const std::string key = char(inputs[0].kind()) + inputs[0].str();
      const std::vector<uint32_t> &path = entities_[e].path;
      auto [first, fresh] = seen_[n].emplace(key, std::make_pair(sourceRow_, path));
      if (fresh) {
        seenThisRoot_.emplace_back(n, key);
        return {ItemOutcome::Present, inputs[0]};
      }
      duplicates_.push_back(
          DuplicateRow{node.name, n, path, first->second.first, first->second.second, 1});
      return {ItemOutcome::Dropped, {}};
    }
    case plan::NodeKind::Invoke:
      ++invocations_[plan_.calls[node.index].name];
      return invoke(plan_.calls[node.index], inputs,
                    e == 0 ? uint32_t(sourceRow_) : entities_[e].path.back());
    case plan::NodeKind::Compute:
      // Helper fusion turns math.gt and math.lt Calls into these.
      if (node.field == "greater" || node.field == "less") {
        const bool greater = inputs[0].asFloat() > inputs[1].asFloat();
        const bool less = inputs[0].asFloat() < inputs[1].asFloat();
        return {ItemOutcome::Present, Value::boolean(node.field == "greater" ? greater : less)};
      }
      ADD_FAILURE() << "reference: unexpected compute " << node.field;
      return {};
    default:
      ADD_FAILURE() << "reference: unexpected " << plan::nodeKindName(node.kind);
      return {};
    }
  }

  /// The operators' specifications, restated.
  Item invoke(const plan::PlanCall &call, const std::vector<Value> &in, uint32_t ordinal) {
    auto constant = [&](const std::string &name) -> const plan::StaticValue & {
      for (const plan::NamedConstant &named : call.constants)
        if (named.name == name)
          return named.value;
      throw std::runtime_error("no constant " + name);
    };
    if (call.op == "test.identity")
      return {ItemOutcome::Present, in[0]};
    if (call.op == "math.gt" || call.op == "math.lt") {
      bool greater = in[0].asFloat() > in[1].asFloat(), less = in[0].asFloat() < in[1].asFloat();
      return {ItemOutcome::Present, Value::boolean(call.op == "math.gt" ? greater : less)};
    }
    if (call.op == "test.split") {
      int64_t count = std::get<int64_t>(constant("n"));
      if (count < 0) {
        const std::string &field = std::get<std::string>(constant("field"));
        count = field.empty() ? in[0].asInt() : in[0].field(field)->asInt();
      }
      ValueList children;
      for (int64_t i = 0; i < count; ++i)
        children.push_back(Value::integer(i));
      return {ItemOutcome::Present, Value::list(std::move(children))};
    }
    if (call.op == "test.fail") {
      std::set<uint32_t> ordinals;
      std::stringstream list(std::get<std::string>(constant("ordinals")));
      for (std::string part; std::getline(list, part, ',');)
        ordinals.insert(uint32_t(std::stoul(part)));
      const bool batchKind = std::get<std::string>(constant("kind")) == "batch";
      const int64_t attempts = std::get<int64_t>(constant("attempts"));
      // A batch failure limited to `attempts` <= retries succeeds on a retry; every other
      // injected failure fails the row.
      if (ordinals.count(ordinal) && (!batchKind || attempts < 0))
        return {ItemOutcome::Failed, {}};
      return {ItemOutcome::Present, in[0]};
    }
    ADD_FAILURE() << "reference: unknown operator " << call.op;
    return {};
  }

  const plan::Plan &plan_;
  std::vector<Entity> entities_;
  uint64_t sourceRow_ = 0;
  bool lostSinkRows_ = false;
  std::map<std::string, size_t> invocations_;
  /// Per Dedup node: the values seen in roots that did not fail, with where they were first.
  std::map<uint32_t, std::map<std::string, std::pair<uint64_t, std::vector<uint32_t>>>> seen_;
  std::vector<std::pair<uint32_t, std::string>> seenThisRoot_;
  std::vector<DuplicateRow> duplicates_;
};

} // namespace orch::testing
