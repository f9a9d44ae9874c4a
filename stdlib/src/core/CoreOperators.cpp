// math.gt/lt, list.len/mean/max, text.join/nonempty/len: row-wise functions of their inputs.
#include "orch/stdlib/CoreOperators.h"

#include "../OperatorGroups.h"

#include "orch/plan/HelperOperators.h"
#include "orch/runtime/values/ComputeEval.h"

#include <algorithm>
#include <functional>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// An operator that maps each row independently; `function` returns a value or a failure.
class RowFunction : public runtime::Operator {
public:
  using Function = std::function<RowResult(std::span<const Value>)>;
  explicit RowFunction(Function function) : function_(std::move(function)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows)
      results.push_back(function_(row.inputs));
  }

private:
  Function function_;
};

void addFunction(runtime::OperatorRegistry &registry, std::string name,
                 std::function<RowFunction::Function(const OperatorConfig &)> make) {
  registry.addTransform(std::move(name), [make](const OperatorConfig &config) {
    return std::make_unique<RowFunction>(make(config));
  });
}

} // namespace

void registerCoreOperators(runtime::OperatorRegistry &registry) {
  registerMinHash(registry);
  auto constant = [](RowFunction::Function function) {
    return [function](const OperatorConfig &) { return function; };
  };
  // The helpers that are also expressions evaluate exactly as their fused form does.
  for (const plan::HelperOperator &helper : plan::kHelperOperators)
    addFunction(registry, helper.op, constant([&helper](std::span<const Value> in) {
                  runtime::ComputeOutcome outcome = runtime::evaluateCompute(
                      helper.compute, in, plan::Type::scalar(helper.result));
                  if (outcome.failure)
                    return RowResult::recordFailure(*outcome.failure);
                  return RowResult::ok(std::move(outcome.value));
                }));
  addFunction(registry, "list.mean", constant([](std::span<const Value> in) {
                const runtime::ValueList &list = in[0].asList();
                if (list.empty())
                  return RowResult::recordFailure("list.mean of an empty list");
                double sum = 0;
                for (const Value &element : list)
                  sum += element.asFloat();
                return RowResult::ok(Value::real(sum / static_cast<double>(list.size())));
              }));
  addFunction(registry, "list.max", constant([](std::span<const Value> in) {
                const runtime::ValueList &list = in[0].asList();
                if (list.empty())
                  return RowResult::recordFailure("list.max of an empty list");
                double best = list.front().asFloat();
                for (const Value &element : list)
                  best = std::max(best, element.asFloat());
                return RowResult::ok(Value::real(best));
              }));
  addFunction(registry, "text.join", [](const OperatorConfig &config) -> RowFunction::Function {
    std::string separator = config.stringConstant("separator");
    return [separator](std::span<const Value> in) {
      std::string joined;
      const char *between = "";
      for (const Value &part : in[0].asList()) {
        joined += between;
        joined += part.asString();
        between = separator.c_str();
      }
      return RowResult::ok(Value::string(std::move(joined)));
    };
  });
}

} // namespace orch::stdlib
