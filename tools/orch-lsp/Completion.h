// Completion candidates at a cursor: Call option keys inside a Call's `{ … }`, otherwise
// operator names (by dotted prefix), the file's Calls and values, and keywords.
#pragma once

#include "DocumentIndex.h"

#include <string>
#include <string_view>
#include <vector>

namespace orch::lsp {

enum class CompletionKind { Operator, Call, Value, Keyword, Option };

struct CompletionCandidate {
  std::string label;
  CompletionKind kind = CompletionKind::Value;
  std::string detail;
  std::string documentation;
};

struct CompletionResult {
  /// The text before the cursor that the chosen label replaces (a dotted name).
  std::string prefix;
  std::vector<CompletionCandidate> candidates;
};

/// `textBeforeCursor` is the document up to the cursor.
CompletionResult completeAt(std::string_view textBeforeCursor, const DocumentIndex &index,
                            const plan::OperatorCatalog &catalog);

} // namespace orch::lsp
