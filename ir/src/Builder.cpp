// IR construction.
#include "orch/ir/Builder.h"

namespace orch::ir {

DomainId Builder::domain(std::string name, SourceLocation location) {
  module_.domains.push_back(Domain{std::move(name), kNoDomain, kNoValue, location});
  return DomainId(module_.domains.size() - 1);
}

uint32_t Builder::call(Call call) {
  module_.calls.push_back(std::move(call));
  return uint32_t(module_.calls.size() - 1);
}

ValueId Builder::add(OpKind kind, const std::vector<Use> &uses, plan::Type type,
                     SourceLocation location) {
  Operation op;
  op.kind = kind;
  for (const Use &use : uses) {
    op.operands.push_back(use.value);
    op.operandLocations.push_back(use.location);
  }
  op.type = std::move(type);
  op.location = location;
  module_.ops.push_back(std::move(op));
  return ValueId(module_.ops.size() - 1);
}

ValueId Builder::source(Source source, plan::Type row, SourceLocation location) {
  DomainId domain = source.domain;
  module_.sources.push_back(std::move(source));
  ValueId id = add(OpKind::Source, {}, std::move(row), location);
  module_.op(id).index = uint32_t(module_.sources.size() - 1);
  module_.op(id).domain = domain;
  return id;
}

ValueId Builder::constant(plan::StaticValue value, SourceLocation location) {
  ValueId id = add(OpKind::Constant, {}, plan::typeOf(value), location);
  module_.op(id).constant = std::move(value);
  return id;
}

ValueId Builder::invoke(uint32_t call, std::vector<std::string> labels,
                        const std::vector<Use> &inputs, plan::Type type, SourceLocation location) {
  ValueId id = add(OpKind::Invoke, inputs, std::move(type), location);
  module_.op(id).index = call;
  module_.op(id).labels = std::move(labels);
  return id;
}

ValueId Builder::expand(Use list, DomainId opens, plan::Type element, SourceLocation location) {
  ValueId id = add(OpKind::Expand, {list}, std::move(element), location);
  module_.op(id).opens = opens;
  if (opens < module_.domains.size())
    module_.domains[opens].openedBy = id;
  return id;
}

ValueId Builder::reduce(Use value, plan::Type list, SourceLocation location, bool skipFailed) {
  ValueId id = add(OpKind::Reduce, {value}, std::move(list), location);
  if (skipFailed)
    module_.op(id).field = plan::kReduceSkipsFailed;
  return id;
}

ValueId Builder::filter(Use value, Use mask, plan::Type type, SourceLocation location) {
  return add(OpKind::Filter, {value, mask}, std::move(type), location);
}

ValueId Builder::broadcast(Use value, Use like, plan::Type type, SourceLocation location) {
  return add(OpKind::Broadcast, {value, like}, std::move(type), location);
}

ValueId Builder::project(Use value, std::string field, plan::Type type, SourceLocation location) {
  ValueId id = add(OpKind::Project, {value}, std::move(type), location);
  module_.op(id).field = std::move(field);
  return id;
}

ValueId Builder::compute(plan::ComputeOp op, const std::vector<Use> &values, plan::Type type,
                         SourceLocation location) {
  ValueId id = add(OpKind::Compute, values, std::move(type), location);
  module_.op(id).field = plan::computeOpName(op);
  return id;
}

ValueId Builder::record(std::vector<std::string> fields, const std::vector<Use> &values,
                        plan::Type type, SourceLocation location) {
  ValueId id = add(OpKind::Record, values, std::move(type), location);
  module_.op(id).labels = std::move(fields);
  return id;
}

void Builder::sink(std::string op, std::vector<NamedConstant> constants,
                   std::vector<std::string> labels, const std::vector<Use> &inputs,
                   SourceLocation location) {
  Sink sink;
  sink.op = std::move(op);
  sink.constants = std::move(constants);
  sink.labels = std::move(labels);
  for (const Use &use : inputs) {
    sink.operands.push_back(use.value);
    sink.operandLocations.push_back(use.location);
  }
  sink.location = location;
  module_.sinks.push_back(std::move(sink));
}

void Builder::name(ValueId value, std::string name, SourceLocation location) {
  module_.op(value).name = std::move(name);
  module_.op(value).nameLocation = location;
}

} // namespace orch::ir
