// math.gt/lt, list.len/mean/max, text.join/nonempty/len: row-wise functions of their inputs.
#include "orch/stdlib/CoreOperators.h"

#include "orch/runtime/TextMeasures.h"

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
  auto constant = [](RowFunction::Function function) {
    return [function](const OperatorConfig &) { return function; };
  };
  addFunction(registry, "math.gt", constant([](std::span<const Value> in) {
                return RowResult::ok(Value::boolean(in[0].asFloat() > in[1].asFloat()));
              }));
  addFunction(registry, "math.lt", constant([](std::span<const Value> in) {
                return RowResult::ok(Value::boolean(in[0].asFloat() < in[1].asFloat()));
              }));
  addFunction(registry, "list.len", constant([](std::span<const Value> in) {
                return RowResult::ok(Value::integer(static_cast<int64_t>(in[0].asList().size())));
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
  addFunction(registry, "text.nonempty", constant([](std::span<const Value> in) {
                return RowResult::ok(Value::boolean(runtime::hasNonBlank(in[0].asString())));
              }));
  addFunction(registry, "text.len", constant([](std::span<const Value> in) {
                return RowResult::ok(Value::integer(
                    static_cast<int64_t>(runtime::countCodePoints(in[0].asString()))));
              }));
}

} // namespace orch::stdlib
