// Test helper: the sequential reference interpreter of the execution semantics
// (semantics.md), against which the engine property test and the runtime's differential tester
// compare every row: node by node in plan order, over every entity of the node's domain, with
// no scheduling, batching, infrastructure failures or barriers.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/values/Value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace orch::testing {

using namespace orch::runtime;

/// Evaluates a plan for one root sequentially, node by node in plan order, over every entity
/// of the node's domain: no scheduling, batching, failures of infrastructure or barriers.
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
    failures_ = 0;
    entities_.push_back(Entity{plan_.sources[0].domain, -1, {}, {}, {}});
    for (uint32_t n = 0; n < plan_.nodes.size(); ++n)
      evaluateNode(n, sourceRow, row);
    RootResult result;
    result.sourceRow = sourceRow;
    bool anyFailed = false, anyWritten = false;
    for (uint32_t s = 0; s < plan_.sinks.size(); ++s) {
      for (int e : entitiesIn(plan_.sinks[s].domain)) {
        SinkRow sinkRow;
        sinkRow.sink = s;
        sinkRow.path = entities_[e].path;
        for (uint32_t input : plan_.sinks[s].inputs) {
          const Item &item = itemFor(input, e);
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
    result.status = anyFailed || (!anyWritten && failures_ > 0) ? RootStatus::Failed
                    : anyWritten                                ? RootStatus::Written
                                                                : RootStatus::Dropped;
    return result;
  }

private:
  /// Entities of `domain` in lineage order.
  std::vector<int> entitiesIn(uint32_t domain) const {
    std::vector<uint32_t> path;
    for (uint32_t d = domain; d != plan::kNone; d = plan_.domains[d].parent)
      path.insert(path.begin(), d);
    std::vector<int> level{0};
    for (size_t i = 1; i < path.size(); ++i) {
      std::vector<int> next;
      for (int e : level) {
        auto found = entities_[e].expansions.find(path[i]);
        if (found != entities_[e].expansions.end())
          next.insert(next.end(), found->second.second.begin(), found->second.second.end());
      }
      level = next;
    }
    return level;
  }

  Item itemFor(uint32_t node, int entity) const {
    if (plan_.nodes[node].domain == plan::kNone)
      return constant(node);
    while (entities_[entity].domain != plan_.nodes[node].domain)
      entity = entities_[entity].parent;
    return entities_[entity].items.at(node);
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

  void evaluateNode(uint32_t n, uint64_t sourceRow, const Value &row) {
    const plan::PlanNode &node = plan_.nodes[n];
    if (node.domain == plan::kNone)
      return;
    if (node.kind == plan::NodeKind::Expand) {
      for (int parent : entitiesIn(plan_.domains[node.domain].parent)) {
        Item list = itemFor(node.inputs[0], parent);
        auto &expansion = entities_[parent].expansions[node.domain];
        if (list.outcome != ItemOutcome::Present) {
          expansion.first =
              list.outcome == ItemOutcome::Dropped ? ItemOutcome::Dropped : ItemOutcome::Failed;
          continue;
        }
        expansion.first = ItemOutcome::Present;
        const ValueList &elements = list.value.asList();
        for (uint32_t i = 0; i < elements.size(); ++i) {
          Entity child{node.domain, parent, entities_[parent].path, {}, {}};
          child.path.push_back(i);
          child.items[n] = {ItemOutcome::Present, elements[i]};
          entities_.push_back(std::move(child));
          // `expansion` may dangle after push_back: look it up again.
          entities_[parent].expansions[node.domain].second.push_back(int(entities_.size()) - 1);
        }
      }
      return;
    }
    for (int e : entitiesIn(node.domain))
      entities_[e].items[n] = evaluate(n, e, sourceRow, row);
  }

  Item evaluate(uint32_t n, int e, uint64_t sourceRow, const Value &row) {
    const plan::PlanNode &node = plan_.nodes[n];
    switch (node.kind) {
    case plan::NodeKind::Source:
      return {ItemOutcome::Present, row};
    case plan::NodeKind::Broadcast:
      return itemFor(node.inputs[0], e);
    case plan::NodeKind::Reduce: {
      const auto &expansion = entities_[e].expansions.at(plan_.nodes[node.inputs[0]].domain);
      if (expansion.first == ItemOutcome::Dropped)
        return {ItemOutcome::Dropped, {}};
      if (expansion.first == ItemOutcome::Failed)
        return {ItemOutcome::Suppressed, {}};
      ValueList values;
      for (int child : expansion.second) {
        Item member = itemFor(node.inputs[0], child);
        if (failed(member))
          return {ItemOutcome::Suppressed, {}};
        if (member.outcome == ItemOutcome::Present)
          values.push_back(member.value);
      }
      return {ItemOutcome::Present, Value::list(std::move(values))};
    }
    default:
      break;
    }
    if (node.kind == plan::NodeKind::Filter &&
        itemFor(node.inputs[0], e).outcome == ItemOutcome::Dropped)
      return {ItemOutcome::Dropped, {}};
    std::vector<Value> inputs;
    bool dropped = false;
    for (uint32_t input : node.inputs) {
      Item item = itemFor(input, e);
      if (failed(item))
        return {ItemOutcome::Suppressed, {}};
      dropped |= item.outcome == ItemOutcome::Dropped;
      inputs.push_back(item.value);
    }
    if (dropped)
      return {ItemOutcome::Dropped, {}};
    switch (node.kind) {
    case plan::NodeKind::Filter:
      return inputs[1].asBool() ? Item{ItemOutcome::Present, inputs[0]}
                                : Item{ItemOutcome::Dropped, {}};
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
    case plan::NodeKind::Invoke:
      return invoke(plan_.calls[node.index], inputs,
                    e == 0 ? uint32_t(sourceRow) : entities_[e].path.back());
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
      if (ordinals.count(ordinal) && (!batchKind || attempts < 0)) {
        ++failures_;
        return {ItemOutcome::Failed, {}};
      }
      return {ItemOutcome::Present, in[0]};
    }
    ADD_FAILURE() << "reference: unknown operator " << call.op;
    return {};
  }

  const plan::Plan &plan_;
  std::vector<Entity> entities_;
  int failures_ = 0;
};

} // namespace orch::testing
