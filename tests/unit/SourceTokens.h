// Test helper: splits .orch source into rough tokens (names, numbers, strings, comments,
// punctuation) and the whitespace between them, so tests can mutate or re-space a program by
// the language's units without the real lexer.
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace orch::testing {

inline std::vector<std::string> sourceTokens(const std::string &text) {
  static const std::regex token(
      R"(\s+|//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|[A-Za-z_][A-Za-z_0-9]*|[0-9][0-9_.]*[A-Za-z]*|.)");
  std::vector<std::string> tokens;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), token);
       it != std::sregex_iterator(); ++it)
    tokens.push_back(it->str());
  return tokens;
}

} // namespace orch::testing
