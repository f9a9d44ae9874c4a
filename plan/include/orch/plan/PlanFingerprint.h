// What a plan does, apart from where its source text put things: the identity a run journal
// resumes under (docs/outputs.md). Comments, blank lines, spacing and `orchc fmt` change
// source positions only, so they keep the fingerprint; an edit that changes what runs
// (an operator, an option, a param, the dataflow, a declared operator's script) changes it,
// and describePlanChanges says what.
#pragma once

#include "orch/plan/Plan.h"

#include <string>
#include <vector>

namespace orch::plan {

/// The plan's encoding (which never holds source positions) with the source file's path left out.
std::string planMeaning(const Plan &plan);

/// SHA-256 (hex) of planMeaning.
std::string planFingerprint(const Plan &plan);

/// What differs between two plans, one line each, for a person: "Call `ocr`: batch 8 → 16",
/// "sink 0 (jsonl): path "a.jsonl" → "b.jsonl"", "Call `t` was added". Empty when their
/// meanings are equal; a single general line when the difference is in the dataflow only.
std::vector<std::string> describePlanChanges(const Plan &before, const Plan &after);

} // namespace orch::plan
