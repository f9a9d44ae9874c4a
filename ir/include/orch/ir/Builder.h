// Builds IR modules one operation at a time, keeping their invariants: every operation gets
// its location and type, an expand and the domain it opens point at each other, labels and use
// locations stay parallel to operands. Used by IR generation and by tests that need IR no
// program would produce.
#pragma once

#include "orch/ir/Module.h"

namespace orch::ir {

/// An operand and where it is used.
struct Use {
  ValueId value;
  SourceLocation location;
};

class Builder {
public:
  explicit Builder(Module &module) : module_(module) {}

  DomainId domain(std::string name, SourceLocation location);
  uint32_t call(Call call);

  ValueId source(Source source, plan::Type row, SourceLocation location);
  ValueId constant(plan::StaticValue value, SourceLocation location);
  ValueId invoke(uint32_t call, std::vector<std::string> labels, const std::vector<Use> &inputs,
                 plan::Type type, SourceLocation location);
  ValueId expand(Use list, DomainId opens, plan::Type element, SourceLocation location);
  /// `skipFailed`: failed members are left out and reported (`reduce(x, failed: "skip")`).
  ValueId reduce(Use value, plan::Type list, SourceLocation location, bool skipFailed = false);
  ValueId filter(Use value, Use mask, plan::Type type, SourceLocation location);
  ValueId broadcast(Use value, Use like, plan::Type type, SourceLocation location);
  ValueId project(Use value, std::string field, plan::Type type, SourceLocation location);
  ValueId record(std::vector<std::string> fields, const std::vector<Use> &values, plan::Type type,
                 SourceLocation location);
  /// An expression node (plan/ComputeOps.h) of result type `type`.
  ValueId compute(plan::ComputeOp op, const std::vector<Use> &values, plan::Type type,
                  SourceLocation location);
  void sink(std::string op, std::vector<NamedConstant> constants, std::vector<std::string> labels,
            const std::vector<Use> &inputs, SourceLocation location);

  /// Names a value (`x = ...`), for messages and the plan.
  void name(ValueId value, std::string name, SourceLocation location);

private:
  ValueId add(OpKind kind, const std::vector<Use> &uses, plan::Type type, SourceLocation location);

  Module &module_;
};

} // namespace orch::ir
