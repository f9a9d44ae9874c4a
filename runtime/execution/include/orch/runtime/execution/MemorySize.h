// Sizes of memory on the command line and in messages: `orch run --value-budget` (the byte
// budget, docs/runtime.md) and `orch worker --memory` (what a worker offers replicas).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch::runtime {

/// "2GiB", "512MiB", "1.5GB", "800000000" (bytes) or "0"; nullopt if malformed.
std::optional<uint64_t> parseMemorySize(std::string_view text);

/// The memory this process may use: the machine's, or its cgroup's limit when lower.
uint64_t machineMemory();

/// "1.5 GiB", "300 MiB", "17 B".
std::string formatMemory(uint64_t bytes);

} // namespace orch::runtime
