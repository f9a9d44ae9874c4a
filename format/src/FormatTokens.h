// The formatter's view of a source file: its tokens with the comments attached to them, cut
// into statements, and each statement into bracket groups (the places a line may break).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace orch::format {

struct Comment {
  std::string text;
  bool isLine = false;
  /// An empty line separates it from what came before.
  bool blankBefore = false;
  /// A line break follows it in the source (always true for line comments).
  bool newlineAfter = false;
};

struct Token {
  std::string text;
  /// The lexer's token type, to tell keywords and names from punctuation.
  size_t type = 0;
  /// Comments on lines of their own (or before the token on its line) ahead of it.
  std::vector<Comment> leading;
  /// Block comments after it on its line; then at most one line comment ending the line.
  std::vector<Comment> trailing;
  bool blankBefore = false;
  /// `<` and `>` around type arguments (`List<Int>`), as opposed to comparisons.
  bool typeBracket = false;
  /// A `-` that negates (`-x`, `-1`), as opposed to a subtraction.
  bool unaryMinus = false;

  bool is(std::string_view punctuation) const { return text == punctuation; }
  bool hasTrailingLineComment() const { return !trailing.empty() && trailing.back().isLine; }
};

struct Group;

/// A token, or a bracketed group of comma-separated items.
struct Node {
  const Token *token = nullptr;
  std::unique_ptr<Group> group;
};

struct Group {
  const Token *open = nullptr;
  const Token *close = nullptr;
  std::vector<std::vector<Node>> items;
  /// The commas after items; the last is null unless the source had a trailing comma.
  std::vector<const Token *> commas;
};

struct Statement {
  std::vector<Node> nodes;
  const Token *first = nullptr;
  const Token *last = nullptr;
};

struct TokenizedFile {
  std::vector<std::unique_ptr<Token>> tokens;
  std::vector<Statement> statements;
  /// Comments after the last statement.
  std::vector<Comment> trailingComments;
};

/// Lexes `text` (which parsed without errors) and builds its statements.
TokenizedFile tokenizeForFormatting(std::string_view text);

} // namespace orch::format
