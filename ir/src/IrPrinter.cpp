// Prints IR modules.
#include "orch/ir/IrPrinter.h"

#include "llvm/Support/raw_ostream.h"

namespace orch::ir {
namespace {

std::string constants(const std::vector<NamedConstant> &named) {
  std::string out;
  for (const NamedConstant &constant : named)
    out +=
        (out.empty() ? "" : ", ") + constant.name + ": " + plan::formatStaticValue(constant.value);
  return out;
}

std::string valueRef(ValueId id) { return "%" + std::to_string(id); }

std::string typed(const Module &module, const Operation &op) {
  if (op.domain == kNoDomain)
    return op.type.str();
  return module.domainName(op.domain) + "<" + op.type.str() + ">";
}

std::string location(const SourceLocation &at) {
  return at.isKnown() ? " @" + std::to_string(at.line) + ":" + std::to_string(at.column) : "";
}

std::string labelled(const std::vector<std::string> &labels, const std::vector<ValueId> &operands) {
  std::string out;
  for (size_t i = 0; i < operands.size(); ++i)
    out += (i ? ", " : "") + (i < labels.size() ? labels[i] + ": " : std::string()) +
           valueRef(operands[i]);
  return out;
}

std::string body(const Module &module, const Operation &op) {
  switch (op.kind) {
  case OpKind::Source: {
    const Source &source = module.sources[op.index];
    return "source " + source.op + "(" + constants(source.constants) + ")";
  }
  case OpKind::Constant:
    return "constant " + (op.constant ? plan::formatStaticValue(*op.constant) : "?");
  case OpKind::Invoke:
    return "invoke " + module.calls[op.index].name + "(" + labelled(op.labels, op.operands) + ")";
  case OpKind::Expand:
    return "expand " + valueRef(op.operands[0]) + " as " + module.domainName(op.opens);
  case OpKind::Reduce:
    return "reduce " + valueRef(op.operands[0]);
  case OpKind::Filter:
    return "filter " + valueRef(op.operands[0]) + " if " + valueRef(op.operands[1]);
  case OpKind::Broadcast:
    return "broadcast " + valueRef(op.operands[0]) + " like " + valueRef(op.operands[1]);
  case OpKind::Project:
    return "project " + valueRef(op.operands[0]) + "." + op.field;
  case OpKind::Record:
    return "record {" + labelled(op.labels, op.operands) + "}";
  case OpKind::Compute:
    return "compute " + op.field + "(" + labelled({}, op.operands) + ")";
  case OpKind::Dedup:
    return "dedup." + op.field + "(" + labelled({}, op.operands) + ") {" + constants(op.constants) +
           "}";
  }
  return "?";
}

} // namespace

std::string formatNonDefaultOptions(const plan::CallOptions &options) {
  const plan::CallOptions defaults;
  std::string out;
  for (const plan::CallOptionSpec &spec : plan::callOptionSpecs()) {
    if (plan::callOptionText(spec, options) == plan::callOptionText(spec, defaults))
      continue;
    out += (out.empty() ? "" : ", ") + std::string(spec.name) + ": ";
    out += spec.isUnset && spec.isUnset(options) ? std::string(spec.unsetText)
                                                 : plan::formatStaticValue(spec.get(options));
  }
  return out.empty() ? "" : "{" + out + "}";
}

void printModule(const Module &module, llvm::raw_ostream &out) {
  out << "pipeline " << module.pipelineName << "\n";
  for (const Domain &domain : module.domains) {
    out << "domain " << domain.name;
    if (domain.parent != kNoDomain)
      out << " in " << module.domainName(domain.parent);
    out << "\n";
  }
  for (const Call &call : module.calls) {
    out << "call " << call.name << " = " << call.op << "(" << constants(call.constants) << ")";
    std::string options = formatNonDefaultOptions(call.options);
    if (!options.empty())
      out << " " << options;
    out << location(call.location) << "\n";
  }
  for (ValueId id = 0; id < module.ops.size(); ++id) {
    const Operation &op = module.ops[id];
    out << valueRef(id) << " = " << body(module, op) << " : " << typed(module, op);
    if (!op.name.empty())
      out << " // " << op.name;
    out << location(op.location) << "\n";
  }
  for (const Sink &sink : module.sinks) {
    out << "sink " << sink.op << "(" << constants(sink.constants) << ")("
        << labelled(sink.labels, sink.operands) << ")";
    if (sink.domain != kNoDomain)
      out << " in " << module.domainName(sink.domain);
    out << location(sink.location) << "\n";
  }
}

} // namespace orch::ir
