// The typed domain IR: what a .orch program computes, as SSA values in a tree of domains.
// Every value has a type and (after domain inference) a domain; every operation has a source
// location. Built from the AST by the frontend, checked by passes/, lowered to a plan.
#pragma once

#include "orch/ir/SourceLocation.h"
#include "orch/plan/CallOptions.h"
#include "orch/plan/Plan.h"
#include "orch/plan/StaticValue.h"
#include "orch/plan/Type.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace orch::ir {

using ValueId = uint32_t;
using DomainId = uint32_t;
/// "No domain": constants, which fit in every domain, and values not yet inferred.
inline constexpr DomainId kNoDomain = UINT32_MAX;

inline constexpr ValueId kNoValue = UINT32_MAX;

struct Domain {
  std::string name;
  /// kNoDomain for a root domain (one per source); set by domain inference for the others.
  DomainId parent = kNoDomain;
  /// The expand that opens it; kNoValue for a root domain.
  ValueId openedBy = kNoValue;
  SourceLocation location;
};

/// The IR's operations are the plan's node kinds: lowering is a transcription.
using OpKind = plan::NodeKind;

using plan::NamedConstant;

/// One operation, producing exactly one value (its id is the value's id).
struct Operation {
  OpKind kind = OpKind::Constant;
  std::vector<ValueId> operands;
  /// Where each operand is used (parallel to operands; may be empty for built IR).
  std::vector<SourceLocation> operandLocations;
  SourceLocation location;

  // The value it produces.
  plan::Type type;
  DomainId domain = kNoDomain;
  /// The binding (or source) name the program gave this value, if any, and where.
  std::string name;
  SourceLocation nameLocation;
  /// From an annotation `x: Page<Text> = ...`: the domain the value must be in.
  std::optional<std::string> expectedDomain;
  SourceLocation expectedDomainLocation;

  // Kind-specific.
  /// Invoke: index into Module::calls. Source: index into Module::sources.
  uint32_t index = 0;
  /// Invoke: the parameter each operand fills. Record: the field names.
  std::vector<std::string> labels;
  /// Project: the field. Reduce: plan::kReduceSkipsFailed, or empty.
  std::string field;
  /// Expand: the domain it opens.
  DomainId opens = kNoDomain;
  /// Constant: the value.
  std::optional<plan::StaticValue> constant;
  /// Dedup: its settings (plan::PlanNode::constants).
  std::vector<NamedConstant> constants;
};

/// One configured use of an operator: a `call` declaration or an inline invocation.
struct Call {
  std::string name;
  std::string op;
  std::vector<NamedConstant> constants;
  plan::CallOptions options;
  bool gpu = false;
  SourceLocation location;
  /// Declared with `call` (as opposed to an inline invocation).
  bool declared = false;
  /// The program set options on it (`{ batch: 64 }`): helper fusion leaves it a Call.
  bool optionsWritten = false;
  /// Inputs that are per-row values of static parameters (plan::PlanCall::batchKeys).
  std::vector<std::string> batchKeys;
};

struct Source {
  std::string op;
  std::vector<NamedConstant> constants;
  DomainId domain = kNoDomain;
};

struct Sink {
  std::string op;
  std::vector<NamedConstant> constants;
  /// Dataflow inputs by parameter name.
  std::vector<std::string> labels;
  std::vector<ValueId> operands;
  std::vector<SourceLocation> operandLocations;
  SourceLocation location;
  /// Filled by domain inference: the domain whose entities produce rows.
  DomainId domain = kNoDomain;
};

struct Module {
  std::string pipelineName;
  /// Where the pipeline is named (`pipeline NAME;`).
  SourceLocation pipelineLocation;
  std::string sourcePath;
  std::vector<Domain> domains;
  std::vector<Operation> ops;
  std::vector<Call> calls;
  std::vector<Source> sources;
  std::vector<Sink> sinks;
  /// The program's own operators (`operator ... = python(...)`), as the plan records them.
  std::vector<plan::PlanExternalOperator> operators;

  const Operation &op(ValueId id) const { return ops[id]; }
  /// Where operand `index` of `op` is used, or where it is defined if that is unknown.
  SourceLocation useLocation(const Operation &op, size_t index) const {
    return index < op.operandLocations.size() ? op.operandLocations[index]
                                              : ops[op.operands[index]].location;
  }
  Operation &op(ValueId id) { return ops[id]; }
  /// Whether `ancestor` is `descendant` or above it in the domain tree.
  bool isAncestorOrSelf(DomainId ancestor, DomainId descendant) const;
  /// Number of domains above `domain` (0 for a root).
  unsigned depth(DomainId domain) const;
  /// `Doc`, or `?` for kNoDomain.
  std::string domainName(DomainId domain) const;
};

} // namespace orch::ir
