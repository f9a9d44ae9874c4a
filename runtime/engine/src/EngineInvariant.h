// A bug in the engine (an illegal transition or a broken invariant). Thrown, never caught by the
// engine: like an assertion, but also in release builds.
#pragma once

#include <string>

namespace orch::runtime {

[[noreturn]] void engineInvariantFailed(const std::string &what);

} // namespace orch::runtime
