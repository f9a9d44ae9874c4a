// `orch run --memory-limit`: the byte budget of values a run holds (docs/runtime.md), its
// default and how it is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

/// "2GiB", "512MiB", "1.5GB", "800000000" (bytes) or "0" (no limit); nullopt if malformed.
std::optional<uint64_t> parseMemoryLimit(std::string_view text);

/// Half the memory this process may use: the machine's, or its cgroup's limit when lower.
uint64_t defaultMemoryLimit();

/// "1.5 GiB", "300 MiB", "17 B".
std::string formatMemory(uint64_t bytes);

} // namespace orch
