// Measures of text that operators and the engine's expressions must compute identically:
// text.len and len() count code points, text.nonempty and its fused form look for a character
// other than ASCII whitespace.
#pragma once

#include <cstddef>
#include <string_view>

namespace orch::runtime {

/// Unicode code points of UTF-8 `text` (bytes that do not continue a sequence).
size_t countCodePoints(std::string_view text);

/// Whether `text` has a character other than ASCII whitespace.
bool hasNonBlank(std::string_view text);

} // namespace orch::runtime
