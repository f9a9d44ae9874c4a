// `orch operators`: the operator reference (docs/operators.md is its output), generated from
// the catalog the compiler checks against.
#pragma once

namespace orch {

int runOperators();

} // namespace orch
