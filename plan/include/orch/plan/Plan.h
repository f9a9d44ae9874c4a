// The executable plan: the only contract between the compiler (orchc) and the runtime (orch).
// A plan is the checked, domain-annotated dataflow of one pipeline: its domain tree, its Calls
// with their constants and options, its sources and sinks, and one node per value with
// precompiled trigger indexes (which nodes and sinks each value feeds), so the runtime never
// searches the graph.
#pragma once

#include "orch/plan/CallOptions.h"
#include "orch/plan/ComputeOps.h"
#include "orch/plan/StaticValue.h"
#include "orch/plan/Type.h"

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::plan {

/// Readers reject an unknown major version and accept any minor version of a known major
/// (newer writers only add keys, which readers ignore). Format 2 left source positions out of
/// the plan (PlanPositions.h) and writes nil for options the runtime decides; this reader
/// also reads format 1.
struct FormatVersion {
  uint32_t major = 1;
  uint32_t minor = 0;
  friend bool operator==(const FormatVersion &, const FormatVersion &) = default;
  friend auto operator<=>(const FormatVersion &, const FormatVersion &) = default;
};

inline constexpr FormatVersion kCurrentFormat{2, 1};

/// A reduce's `field` when it leaves failed members out instead of suppressing its list.
inline constexpr const char *kReduceSkipsFailed = "skip";

/// "None" for domain, node and call references.
inline constexpr uint32_t kNone = UINT32_MAX;

struct PlanDomain {
  std::string name;
  /// kNone for a root domain; parents always come before their children.
  uint32_t parent = kNone;
  friend bool operator==(const PlanDomain &, const PlanDomain &) = default;
};

struct PlanCall {
  std::string name;
  std::string op;
  std::vector<NamedConstant> constants;
  CallOptions options;
  bool gpu = false;
  /// Inputs (by label) that are per-row values of parameters the operator batches by value
  /// (`ocr.tesseract(image, lang: rows.lang)`): one batch holds grains with equal values only.
  std::vector<std::string> batchKeys;
  friend bool operator==(const PlanCall &, const PlanCall &) = default;
};

/// A parameter of a declared operator: a dataflow input (batched per grain) or a constant (given
/// to the operator once, when a replica starts).
struct PlanOperatorParam {
  std::string name;
  bool constant = false;
  Type type;
  friend bool operator==(const PlanOperatorParam &, const PlanOperatorParam &) = default;
};

/// An operator the program declares (`operator NAME(...) -> T = python(...)`), run by a child
/// process per replica (docs/python.md): `python` runs a class of a script under the bridge
/// (python/orch_operator.py); `exec` runs an executable that speaks the same protocol
/// (docs/protocol.md). Calls name it in `op` like any operator.
/// The runners of declared operators, as `= python(...)` and `= exec(...)` name them.
inline constexpr const char *kOperatorRunners[] = {"python", "exec"};

struct PlanExternalOperator {
  std::string name;
  /// One of kOperatorRunners.
  std::string runner;
  /// The script or executable, absolute; the same path on every worker host.
  std::string path;
  /// SHA-256 (hex) of that file when the plan was compiled: a host with another version
  /// refuses to start it.
  std::string sha256;
  /// python: the class to instantiate.
  std::string className;
  /// exec: its command-line arguments.
  std::vector<std::string> args;
  std::vector<PlanOperatorParam> params;
  Type result;
  /// Where it is declared in the plan's source file (1-based; 0 when unknown). Not in the
  /// plan's bytes: formatting a program never changes its plan (PlanPositions.h).
  uint32_t line = 0;
  uint32_t column = 0;
  friend bool operator==(const PlanExternalOperator &, const PlanExternalOperator &) = default;
};

struct PlanSource {
  std::string op;
  std::vector<NamedConstant> constants;
  uint32_t domain = kNone;
  /// The node that holds the source's rows.
  uint32_t node = kNone;
  friend bool operator==(const PlanSource &, const PlanSource &) = default;
};

enum class NodeKind {
  Source,
  Constant,
  Invoke,
  Expand,
  Reduce,
  Filter,
  Broadcast,
  Project,
  Record,
  /// An expression (ComputeOps.h): evaluated by the engine, per entity, never batched.
  Compute,
  /// Deduplication (`dedup.exact`, `dedup.near`, `dedup.hamming`): its first input's value
  /// where no earlier entity of its domain, in source order, had an equal key (exact: the value
  /// itself), a similar MinHash signature (near: the second input) or a perceptual hash within
  /// a Hamming distance (hamming); DROPPED where one did. Decided by the
  /// engine in source order (docs/runtime.md, "Deduplication").
  Dedup
};

/// A Dedup node's `field`: how it compares.
inline constexpr const char *kDedupExact = "exact";
inline constexpr const char *kDedupNear = "near";
inline constexpr const char *kDedupHamming = "hamming";

const char *nodeKindName(NodeKind kind);

/// How many inputs a node of `kind` reads; invokes and records read one per label. For Compute
/// the operation decides (validatePlan checks it): SIZE_MAX.
size_t expectedInputCount(NodeKind kind, size_t labelCount);

struct PlanNode {
  NodeKind kind = NodeKind::Constant;
  /// kNone for constants, and for records, projections and filters of constants only: values
  /// that are the same in every domain.
  uint32_t domain = kNone;
  Type type;
  /// Nodes this one reads; always earlier nodes.
  std::vector<uint32_t> inputs;
  /// Invoke: the parameter each input fills. Record: the field names.
  std::vector<std::string> labels;
  /// Invoke: the call. Source: the source. Expand: the domain it opens.
  uint32_t index = kNone;
  /// Project: the field. Compute: the operation's name (computeOpName). Reduce:
  /// kReduceSkipsFailed when failed members are left out (`reduce(x, failed: "skip")`), else
  /// empty (a failed member suppresses the list). Dedup: kDedupExact or kDedupNear.
  std::string field;
  /// Constant: the value.
  std::optional<StaticValue> constant;
  /// Dedup: its settings (`threshold`, `bands`, `order`).
  std::vector<NamedConstant> constants;
  /// The program's name for the value, for messages ("" if unnamed).
  std::string name;
  /// Where it is in the plan's source file, for messages (1-based; 0 when unknown). Not in
  /// the plan's bytes: formatting a program never changes its plan (PlanPositions.h).
  uint32_t line = 0;
  uint32_t column = 0;

  // Trigger index: what to revisit when this node's item for an entity becomes terminal.
  /// Nodes that read this one, in increasing order.
  std::vector<uint32_t> consumers;
  /// Sinks that read this one, in increasing order.
  std::vector<uint32_t> sinks;

  friend bool operator==(const PlanNode &, const PlanNode &) = default;
};

struct PlanSink {
  std::string op;
  std::vector<NamedConstant> constants;
  /// Dataflow inputs by parameter name.
  std::vector<std::string> labels;
  std::vector<uint32_t> inputs;
  /// The domain whose entities produce rows.
  uint32_t domain = kNone;
  friend bool operator==(const PlanSink &, const PlanSink &) = default;
};

struct Plan {
  FormatVersion format = kCurrentFormat;
  std::string pipelineName;
  /// The .orch file the plan was compiled from, for messages.
  std::string sourcePath;
  std::vector<PlanDomain> domains;
  std::vector<PlanCall> calls;
  std::vector<PlanSource> sources;
  std::vector<PlanNode> nodes;
  std::vector<PlanSink> sinks;
  /// Operators the program declares, by name (Calls refer to them in `op`).
  std::vector<PlanExternalOperator> operators;
  friend bool operator==(const Plan &, const Plan &) = default;

  /// The declared operator called `name`, or nullptr (a standard library operator).
  const PlanExternalOperator *externalOperator(std::string_view name) const;
};

/// Fills every node's consumers and sinks from the inputs of nodes and sinks.
void computeTriggerIndexes(Plan &plan);

/// Checks the plan's internal consistency: references in range, inputs before their readers,
/// arities, parents before children, trigger indexes matching the inputs, sane options.
/// Returns the first problem found, or nullopt.
std::optional<std::string> validatePlan(const Plan &plan);

} // namespace orch::plan
