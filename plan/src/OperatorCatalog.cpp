// Lookup of operator signatures by kind and name.
#include "orch/plan/OperatorCatalog.h"
#include "orch/plan/Plan.h"

namespace orch::plan {
namespace {

std::string indexKey(OperatorKind kind, std::string_view name) {
  return std::string(1, char('0' + int(kind))) + std::string(name);
}

} // namespace

const OperatorParam *OperatorSignature::param(std::string_view paramName) const {
  for (const OperatorParam &candidate : params)
    if (candidate.name == paramName)
      return &candidate;
  return nullptr;
}

std::string signatureText(const OperatorSignature &op) {
  std::string text = op.name + "(";
  const char *separator = "";
  for (const OperatorParam &param : op.params) {
    text += separator + param.name + ": " + param.type.str();
    if (param.defaultValue)
      text += " = " + formatStaticValue(*param.defaultValue);
    separator = ", ";
  }
  text += ")";
  if (op.kind != OperatorKind::Sink)
    text += " -> " + op.result.str();
  return text;
}

const char *operatorKindName(OperatorKind kind) {
  switch (kind) {
  case OperatorKind::Source:
    return "source";
  case OperatorKind::Transform:
    return "transform";
  case OperatorKind::Sink:
    return "sink";
  }
  return "transform";
}

void OperatorCatalog::add(OperatorSignature signature) {
  std::string key = indexKey(signature.kind, signature.name);
  if (auto existing = index_.find(key); existing != index_.end()) {
    signatures_[existing->second] = std::move(signature);
    return;
  }
  index_.emplace(std::move(key), signatures_.size());
  signatures_.push_back(std::move(signature));
}

const OperatorSignature *OperatorCatalog::find(OperatorKind kind, std::string_view name) const {
  auto found = index_.find(indexKey(kind, name));
  return found == index_.end() ? nullptr : &signatures_[found->second];
}

} // namespace orch::plan

namespace orch::plan {

std::string sinkTarget(const PlanSink &sink) {
  const OperatorSignature *signature = standardCatalog().find(OperatorKind::Sink, sink.op);
  // A sink the catalog does not know: its `path`, if it has one.
  const std::string pattern = signature ? signature->target : "{path}";
  std::string target;
  for (size_t at = 0; at < pattern.size();) {
    const size_t open = pattern.find('{', at);
    const size_t close = open == std::string::npos ? open : pattern.find('}', open);
    if (close == std::string::npos) {
      target += pattern.substr(at);
      break;
    }
    target += pattern.substr(at, open - at);
    const std::string name = pattern.substr(open + 1, close - open - 1);
    for (const NamedConstant &named : sink.constants)
      if (named.name == name)
        if (const auto *text = std::get_if<std::string>(&named.value))
          target += *text;
    at = close + 1;
  }
  return target;
}

} // namespace orch::plan
