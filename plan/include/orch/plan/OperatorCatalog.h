// Operator signatures as data: what the compiler type-checks against without linking any
// implementation, and what workers bind implementations to without linking the compiler.
#pragma once

#include "orch/plan/StaticValue.h"
#include "orch/plan/Type.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace orch::plan {

enum class OperatorKind { Source, Transform, Sink };

/// Input parameters receive dataflow values (one per entity); static parameters receive
/// constants (literals or params) fixed for the whole run.
enum class ParamRole { Input, Static };

struct OperatorParam {
  std::string name;
  ParamRole role = ParamRole::Input;
  Type type;
  /// A static parameter with a default may be omitted.
  std::optional<StaticValue> defaultValue;
  std::string doc;
  /// A static parameter that may also be given a per-row value (`lang: rows.lang`): the
  /// operator reads it from its input then, and batches hold equal values only.
  bool perRow = false;
};

struct OperatorSignature {
  std::string name;
  OperatorKind kind = OperatorKind::Transform;
  std::vector<OperatorParam> params;
  /// What one row yields: the row type of a source, the value of a transform (a List for
  /// operators whose results are expanded). Unused for sinks.
  Type result;
  /// Has a GPU implementation (and a CPU one used when no GPU is present).
  bool gpu = false;
  /// The Call options it accepts (see CallOptions.h); `gpus` and `require_gpu` only with a
  /// GPU implementation, none for sources and sinks.
  std::vector<std::string> options;
  std::string doc;
  /// How it fails, for the operator reference.
  std::string failures;
  /// The batch size of its Calls when they do not set `batch`: 1, or more for cheap row-wise
  /// functions, whose per-batch overhead would otherwise dominate.
  int64_t defaultBatch = 1;
  /// Sinks: where they write, with `{name}` for a constant's value ("{path}", "{dir}/*{ext}"):
  /// what the summary, metrics and report name as the sink's target.
  std::string target;
  /// The compiler lowers its uses into engine nodes (dedup.exact, dedup.near: Dedup nodes the
  /// engine decides): no worker implements it.
  bool loweredByCompiler = false;
  /// Waits on a service rather than computing (llm.*): a replica keeps several batches open
  /// at once, and its Calls accept `in_flight` (this is its default). 0: one batch at a time.
  int64_t defaultInFlight = 0;

  const OperatorParam *param(std::string_view name) const;
};

const char *operatorKindName(OperatorKind kind);

/// `name(param: Type, param: Type = default) -> Result`, as the docs and the editor show it.
std::string signatureText(const OperatorSignature &op);

class OperatorCatalog {
public:
  /// Adds a signature; a second one with the same kind and name replaces the first.
  void add(OperatorSignature signature);
  const OperatorSignature *find(OperatorKind kind, std::string_view name) const;
  /// All signatures, in the order they were added.
  const std::vector<OperatorSignature> &all() const { return signatures_; }

private:
  std::vector<OperatorSignature> signatures_;
  std::unordered_map<std::string, size_t> index_;
};

/// The Call options a transform accepts: every one, less `gpus` and `require_gpu` for one without
/// a GPU implementation, and less `in_flight` for one that is not concurrent.
std::vector<std::string> transformOptionNames(bool gpu, bool concurrent = false);

/// The standard library's operators (sources, transforms, sinks) and the `test.*` operators.
const OperatorCatalog &standardCatalog();

struct PlanSink;
/// Where `sink` writes, from its signature's `target` with its constants filled in (for a sink
/// the standard catalog does not know, its `path` constant, or "").
std::string sinkTarget(const PlanSink &sink);

} // namespace orch::plan
