// Where a plan's nodes and declared operators are in its source, kept out of the plan's bytes:
// a plan says what runs, so formatting a program (comments, spacing, line breaks) never changes
// it, while messages still point at file:line:col. `orchc -o X.plan` writes them beside the
// plan (X.plan.positions, like a source map) and `orch run X.plan` reads them back; a plan
// compiled in memory (`orch run X.orch`) has them all along, and a coordinator sends them to
// its workers with the plan. Positions written for other plan bytes, or for another text of the
// source file than the one there now (it was formatted since), are ignored.
#pragma once

#include "orch/plan/Plan.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace orch::plan {

/// The file beside `planPath` that holds its positions.
std::string positionsPathFor(const std::string &planPath);

/// The positions of `plan`, tied to `planBytes` (encodePlan(plan)) and, when given, to the
/// source text they point into.
std::string encodePlanPositions(const Plan &plan, std::string_view planBytes,
                                std::string_view sourceText = {});

/// Fills `plan`'s positions from `positions` when they were written for `planBytes` and fit the
/// plan; returns whether they did (otherwise the plan is unchanged: its positions unknown).
bool applyPlanPositions(Plan &plan, std::string_view planBytes, std::string_view positions);

/// Fills `plan`'s positions from the file beside the plan at `planPath` (or beside the file a
/// link there points to), whose bytes are `planBytes`: only a regular file of a size positions
/// can have, written for these bytes and for the source file as it is now (when it can be
/// read). Returns whether it did; anything else leaves the positions unknown.
bool loadPlanPositions(Plan &plan, const std::string &planPath, std::string_view planBytes);

/// "FILE:LINE:COL", or "FILE" when the position is unknown ("<plan>" without a file), for
/// messages about a place in the plan's source.
std::string sourceLocation(const Plan &plan, uint32_t line, uint32_t column);

} // namespace orch::plan
