// The executable plan: the only contract between the compiler (orchc) and the runtime (orch).
// This first version carries the pipeline's identity; domains, Calls and trigger indexes
// follow with the lowering (issue 4).
#pragma once

#include <cstdint>
#include <string>

namespace orch::plan {

/// Readers reject an unknown major version and accept any minor version of a known major
/// (newer writers only add keys, which readers ignore).
struct FormatVersion {
  uint32_t major = 1;
  uint32_t minor = 0;
  friend bool operator==(const FormatVersion &, const FormatVersion &) = default;
};

inline constexpr FormatVersion kCurrentFormat{1, 0};

struct Plan {
  FormatVersion format = kCurrentFormat;
  std::string pipelineName;
  /// The .orch file the plan was compiled from, for messages.
  std::string sourcePath;
  friend bool operator==(const Plan &, const Plan &) = default;
};

} // namespace orch::plan
