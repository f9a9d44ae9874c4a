// Turns the text of literal tokens into constants, reporting a malformed literal at the exact
// character that is wrong. Internal to the frontend.
#pragma once

#include "orch/ir/Diagnostics.h"
#include "orch/plan/StaticValue.h"

#include <optional>
#include <string_view>

namespace orch::frontend {

/// `token` includes its quotes; escapes are those of JSON.
std::optional<plan::StaticValue> decodeStringLiteral(std::string_view token, SourceLocation at,
                                                     DiagnosticEngine &diags);
std::optional<plan::StaticValue> decodeIntLiteral(std::string_view digits, bool negative,
                                                  SourceLocation at, DiagnosticEngine &diags);
std::optional<plan::StaticValue> decodeFloatLiteral(std::string_view text, bool negative,
                                                    SourceLocation at, DiagnosticEngine &diags);
/// `250ms`, `1.5s`, `5m`, `2h`.
std::optional<plan::StaticValue> decodeDurationLiteral(std::string_view text, SourceLocation at,
                                                       DiagnosticEngine &diags);
/// `512MB`, `4GiB`, `64B`.
std::optional<plan::StaticValue> decodeSizeLiteral(std::string_view text, SourceLocation at,
                                                   DiagnosticEngine &diags);

} // namespace orch::frontend
