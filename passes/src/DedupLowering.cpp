// Dedup lowering (DedupLowering.h).
#include "orch/passes/DedupLowering.h"

#include <variant>

namespace orch::passes {
namespace {

constexpr const char *kMinhashOp = "dedup.minhash";
/// The constants of `dedup.near` that shape its signatures (the rest are the decision's).
constexpr const char *kSignatureConstants[] = {"ngram", "permutations", "seed"};

bool isSignatureConstant(const std::string &name) {
  for (const char *constant : kSignatureConstants)
    if (name == constant)
      return true;
  return false;
}

template <typename T>
T constantOr(const std::vector<plan::NamedConstant> &constants, const char *name, T otherwise) {
  for (const plan::NamedConstant &constant : constants)
    if (constant.name == name)
      if (const T *value = std::get_if<T>(&constant.value))
        return *value;
  return otherwise;
}

class DedupLoweringPass : public Pass {
public:
  std::string_view name() const override { return "dedup-lowering"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    const size_t callCount = module.calls.size();
    // Exact and hamming Calls become Dedup operations alone ("exact" below); near ones also
    // compute signatures.
    std::vector<bool> exactCall(callCount), nearCall(callCount);
    std::vector<const char *> kind(callCount, nullptr);
    bool any = false;
    for (size_t c = 0; c < callCount; ++c) {
      const std::string &op = module.calls[c].op;
      exactCall[c] = op == "dedup.exact" || op == "dedup.hamming";
      nearCall[c] = op == "dedup.near";
      kind[c] = op == "dedup.exact"     ? plan::kDedupExact
                : op == "dedup.hamming" ? plan::kDedupHamming
                                        : plan::kDedupNear;
      any = any || exactCall[c] || nearCall[c];
      if ((exactCall[c] || nearCall[c] || module.calls[c].op == kMinhashOp) &&
          !checkSettings(module.calls[c], diags))
        return;
    }
    if (!any)
      return;
    // Every value keeps its operation; a near one gets its signature's Invoke just before it.
    std::vector<ir::Operation> ops;
    std::vector<ir::ValueId> renumbered(module.ops.size());
    for (ir::ValueId id = 0; id < module.ops.size(); ++id) {
      ir::Operation op = std::move(module.ops[id]);
      for (ir::ValueId &operand : op.operands)
        operand = renumbered[operand];
      const bool invoke = op.kind == ir::OpKind::Invoke;
      if (invoke && (exactCall[op.index] || nearCall[op.index])) {
        // Operands are renumbered already: they index `ops`.
        if (!isComparable(module.calls[op.index], op, ops[op.operands[0]], diags))
          return;
        const ir::Call &call = module.calls[op.index];
        if (nearCall[op.index]) {
          ops.push_back(signatureOf(op));
          op.operands.push_back(ir::ValueId(ops.size() - 1));
          if (!op.operandLocations.empty())
            op.operandLocations.push_back(op.location);
        }
        op.kind = ir::OpKind::Dedup;
        op.field = kind[op.index];
        op.constants = decisionSettings(call);
        op.labels.clear();
        if (op.name.empty())
          op.name = call.name;
        op.index = 0;
      }
      renumbered[id] = ir::ValueId(ops.size());
      ops.push_back(std::move(op));
    }
    module.ops = std::move(ops);
    for (ir::Domain &domain : module.domains)
      if (domain.openedBy != ir::kNoValue)
        domain.openedBy = renumbered[domain.openedBy];
    for (ir::Sink &sink : module.sinks)
      for (ir::ValueId &operand : sink.operands)
        operand = renumbered[operand];
    // Near Calls now compute signatures; exact ones leave the module.
    std::vector<uint32_t> callIndex(callCount, UINT32_MAX);
    std::vector<ir::Call> kept;
    for (size_t c = 0; c < callCount; ++c) {
      if (exactCall[c])
        continue;
      ir::Call call = std::move(module.calls[c]);
      if (nearCall[c]) {
        const bool exact =
            constantOr<std::string>(call.constants, "confirm", "estimate") == "exact";
        call.op = kMinhashOp;
        std::erase_if(call.constants, [](const plan::NamedConstant &constant) {
          return !isSignatureConstant(constant.name);
        });
        call.constants.push_back({"shingles", exact});
      }
      callIndex[c] = uint32_t(kept.size());
      kept.push_back(std::move(call));
    }
    module.calls = std::move(kept);
    for (ir::Operation &op : module.ops)
      if (op.kind == ir::OpKind::Invoke)
        op.index = callIndex[op.index];
  }

private:
  /// The Invoke of the signature Call (the near Call, which becomes `dedup.minhash`).
  static ir::Operation signatureOf(const ir::Operation &near) {
    ir::Operation signature;
    signature.kind = ir::OpKind::Invoke;
    signature.operands = {near.operands[0]};
    if (!near.operandLocations.empty())
      signature.operandLocations = {near.operandLocations[0]};
    signature.location = near.location;
    signature.type = plan::Type::scalar(plan::TypeKind::Bytes);
    signature.domain = near.domain;
    signature.index = near.index;
    signature.labels = {"text"};
    return signature;
  }

  static std::vector<plan::NamedConstant> decisionSettings(const ir::Call &call) {
    std::vector<plan::NamedConstant> settings{
        {"order", constantOr<std::string>(call.constants, "order", "source")}};
    if (call.op == "dedup.hamming")
      settings.push_back({"distance", constantOr<int64_t>(call.constants, "distance", 6)});
    if (call.op == "dedup.near") {
      settings.push_back({"threshold", constantOr<double>(call.constants, "threshold", 0.8)});
      settings.push_back(
          {"permutations", constantOr<int64_t>(call.constants, "permutations", 128)});
      settings.push_back({"bands", constantOr<int64_t>(call.constants, "bands", 16)});
      settings.push_back(
          {"confirm", constantOr<std::string>(call.constants, "confirm", "estimate")});
    }
    return settings;
  }

  static bool checkSettings(const ir::Call &call, DiagnosticEngine &diags) {
    const std::string order = constantOr<std::string>(call.constants, "order", "source");
    if (call.op != kMinhashOp && order != "source" && order != "arrival") {
      diags.error(call.location, "'order' of '" + call.op +
                                     "' must be \"source\" (the first in "
                                     "source order survives, deterministic) or \"arrival\" (the "
                                     "first to arrive survives), not \"" +
                                     order + "\"");
      return false;
    }
    if (call.op == "dedup.exact")
      return true;
    if (call.op == "dedup.hamming") {
      const int64_t distance = constantOr<int64_t>(call.constants, "distance", 6);
      if (distance >= 0 && distance <= 16)
        return true;
      diags.error(call.location,
                  "'distance' must be 0 to 16 bits, not " + std::to_string(distance));
      return false;
    }
    const double threshold = constantOr<double>(call.constants, "threshold", 0.8);
    const int64_t permutations = constantOr<int64_t>(call.constants, "permutations", 128);
    const int64_t bands = constantOr<int64_t>(call.constants, "bands", 16);
    const int64_t ngram = constantOr<int64_t>(call.constants, "ngram", 5);
    const bool near = call.op == "dedup.near";
    const std::string confirm = constantOr<std::string>(call.constants, "confirm", "estimate");
    std::string problem;
    if (near && confirm != "estimate" && confirm != "exact")
      problem = "'confirm' must be \"estimate\" or \"exact\", not \"" + confirm + "\"";
    else if (near && !(threshold > 0 && threshold <= 1))
      problem = "'threshold' must be in (0, 1], not " + plan::formatStaticValue(threshold);
    else if (permutations < 1 || permutations > 1024)
      problem = "'permutations' must be 1 to 1024, not " + std::to_string(permutations);
    else if (near && (bands < 1 || permutations % bands != 0))
      problem = "'bands' must divide 'permutations' (" + std::to_string(permutations) +
                ") into equal bands, not " + std::to_string(bands);
    else if (ngram < 1 || ngram > 64)
      problem = "'ngram' must be 1 to 64 words, not " + std::to_string(ngram);
    if (problem.empty())
      return true;
    diags.error(call.location, problem);
    return false;
  }

  /// dedup.near compares text; dedup.exact any value.
  static bool isComparable(const ir::Call &call, const ir::Operation &op,
                           const ir::Operation &operand, DiagnosticEngine &diags) {
    const SourceLocation used = op.operandLocations.empty() ? op.location : op.operandLocations[0];
    if (op.domain == ir::kNoDomain) {
      diags.error(used, "'" + call.op +
                            "' compares the values of a domain's entities, but its input is a "
                            "constant");
      return false;
    }
    const plan::TypeKind kind = operand.type.kind();
    if (call.op == "dedup.hamming") {
      if (kind == plan::TypeKind::String)
        return true;
      diags.error(used, "'dedup.hamming' compares perceptual hashes (the String of "
                        "image.phash), not " +
                            operand.type.str());
      return false;
    }
    if (call.op != "dedup.near")
      return true;
    if (kind == plan::TypeKind::Text || kind == plan::TypeKind::String)
      return true;
    diags.error(used, "'dedup.near' compares text (Text or String), not " + operand.type.str() +
                          "; compare other values exactly with 'dedup.exact'");
    return false;
  }
};

} // namespace

std::unique_ptr<Pass> createDedupLoweringPass() { return std::make_unique<DedupLoweringPass>(); }

} // namespace orch::passes
