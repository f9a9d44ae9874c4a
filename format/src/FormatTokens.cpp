// Lexes a file for the formatter (comments and line breaks included), attaches each comment to
// the token it belongs to, and cuts the tokens into statements and bracket groups.
#include "FormatTokens.h"

#include "orch/grammar/OrchLexer.h"
#include "orch/grammar/OrchParser.h"

#include "CommonTokenStream.h"

#include <algorithm>
#include <unordered_set>

namespace orch::format {
namespace {

using grammar::OrchLexer;
using grammar::OrchParser;

size_t countNewlines(const std::string &text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

/// Attaches comments: one on the line of the token before it trails that token; any other leads
/// the next token (or the end of the file).
class CommentAttacher {
public:
  explicit CommentAttacher(TokenizedFile &file) : file_(file) {}

  void whitespace(const std::string &text) {
    newlinesSinceLast_ += countNewlines(text);
    if (pendingBlock_ && countNewlines(text) > 0)
      pendingBlock_->newlineAfter = true;
    pendingBlock_ = nullptr;
  }

  void comment(const std::string &text, bool isLine) {
    Comment comment{text, isLine, newlinesSinceLast_ >= 2, isLine};
    pendingBlock_ = nullptr;
    if (previous_ && newlinesSinceLast_ == 0 && !previousEndsLine()) {
      previous_->trailing.push_back(comment);
      if (!isLine)
        pendingBlock_ = &previous_->trailing.back();
    } else {
      leading_.push_back(comment);
      if (!isLine)
        pendingBlock_ = &leading_.back();
    }
    newlinesSinceLast_ = 0;
  }

  Token *token(std::string text, size_t type) {
    auto token = std::make_unique<Token>();
    token->text = std::move(text);
    token->type = type;
    token->leading = std::move(leading_);
    token->blankBefore = newlinesSinceLast_ >= 2;
    leading_.clear();
    newlinesSinceLast_ = 0;
    pendingBlock_ = nullptr;
    previous_ = token.get();
    file_.tokens.push_back(std::move(token));
    return previous_;
  }

  void end() {
    file_.trailingComments = std::move(leading_);
    if (!file_.trailingComments.empty() && newlinesSinceLast_ == 0)
      file_.trailingComments.back().newlineAfter = true;
  }

private:
  bool previousEndsLine() const { return previous_->hasTrailingLineComment(); }

  TokenizedFile &file_;
  Token *previous_ = nullptr;
  std::vector<Comment> leading_;
  size_t newlinesSinceLast_ = 0;
  /// The block comment just seen, until we know whether a line break follows it. Points into a
  /// vector that does not grow before it is cleared.
  Comment *pendingBlock_ = nullptr;
};

class StatementBuilder {
public:
  explicit StatementBuilder(const std::vector<std::unique_ptr<Token>> &tokens) : tokens_(tokens) {}

  std::vector<Statement> build() {
    std::vector<Statement> statements;
    while (next_ < tokens_.size()) {
      Statement statement;
      statement.first = tokens_[next_].get();
      statement.nodes = sequence(nullptr);
      statement.last = tokens_[next_ - 1].get();
      statements.push_back(std::move(statement));
    }
    return statements;
  }

private:
  static const char *closerOf(const Token &token) {
    if (token.is("("))
      return ")";
    if (token.is("{"))
      return "}";
    if (token.is("["))
      return "]";
    if (token.is("<") && token.typeBracket)
      return ">";
    return nullptr;
  }

  /// Nodes up to a `,` or `closer` inside a group (not consumed), or through `;` at top level.
  std::vector<Node> sequence(const char *closer) {
    std::vector<Node> nodes;
    while (next_ < tokens_.size()) {
      const Token &token = *tokens_[next_];
      if (closer && (token.is(closer) || token.is(",")))
        return nodes;
      ++next_;
      if (const char *innerCloser = closerOf(token)) {
        nodes.push_back(Node{nullptr, group(token, innerCloser)});
        continue;
      }
      nodes.push_back(Node{&token, nullptr});
      if (!closer && token.is(";"))
        return nodes;
    }
    return nodes;
  }

  std::unique_ptr<Group> group(const Token &open, const char *closer) {
    auto result = std::make_unique<Group>();
    result->open = &open;
    while (next_ < tokens_.size() && !tokens_[next_]->is(closer)) {
      std::vector<Node> item = sequence(closer);
      const Token *comma = nullptr;
      if (next_ < tokens_.size() && tokens_[next_]->is(","))
        comma = tokens_[next_++].get();
      result->items.push_back(std::move(item));
      result->commas.push_back(comma);
    }
    if (next_ < tokens_.size())
      result->close = tokens_[next_++].get();
    return result;
  }

  const std::vector<std::unique_ptr<Token>> &tokens_;
  size_t next_ = 0;
};

/// What only the grammar knows about some tokens: which `<` `>` bracket type arguments and which
/// `-` negates. Collected from the parse tree by token index.
struct TokenRoles {
  std::unordered_set<size_t> typeBrackets;
  std::unordered_set<size_t> unaryMinuses;

  void collect(antlr4::tree::ParseTree *tree) {
    if (auto *named = dynamic_cast<OrchParser::NamedTypeContext *>(tree)) {
      for (antlr4::tree::ParseTree *child : named->children)
        if (auto *terminal = dynamic_cast<antlr4::tree::TerminalNode *>(child))
          if (terminal->getText() == "<" || terminal->getText() == ">")
            typeBrackets.insert(terminal->getSymbol()->getTokenIndex());
    } else if (auto *negate = dynamic_cast<OrchParser::NegateExprContext *>(tree)) {
      if (negate->op)
        unaryMinuses.insert(negate->op->getTokenIndex());
    } else if (auto *literal = dynamic_cast<antlr4::ParserRuleContext *>(tree)) {
      if ((dynamic_cast<OrchParser::IntLiteralContext *>(literal) ||
           dynamic_cast<OrchParser::FloatLiteralContext *>(literal)) &&
          literal->getStart() && literal->getStart()->getText() == "-")
        unaryMinuses.insert(literal->getStart()->getTokenIndex());
    }
    for (antlr4::tree::ParseTree *child : tree->children)
      collect(child);
  }
};

TokenRoles tokenRoles(antlr4::CommonTokenStream &stream) {
  OrchParser parser(&stream);
  parser.removeErrorListeners();
  TokenRoles roles;
  roles.collect(parser.file());
  stream.seek(0);
  return roles;
}

} // namespace

TokenizedFile tokenizeForFormatting(std::string_view text) {
  TokenizedFile file;
  antlr4::ANTLRInputStream input(text.data(), text.size());
  OrchLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream stream(&lexer);
  stream.fill();
  const TokenRoles roles = tokenRoles(stream);
  CommentAttacher attacher(file);
  for (antlr4::Token *token : stream.getTokens()) {
    switch (token->getType()) {
    case antlr4::Token::EOF:
      break;
    case OrchLexer::WHITESPACE:
      attacher.whitespace(token->getText());
      break;
    case OrchLexer::LINE_COMMENT:
      attacher.comment(token->getText(), true);
      break;
    case OrchLexer::BLOCK_COMMENT:
      attacher.comment(token->getText(), false);
      break;
    default: {
      Token *added = attacher.token(token->getText(), token->getType());
      added->typeBracket = roles.typeBrackets.count(token->getTokenIndex()) != 0;
      added->unaryMinus = roles.unaryMinuses.count(token->getTokenIndex()) != 0;
    }
    }
  }
  attacher.end();
  file.statements = StatementBuilder(file.tokens).build();
  return file;
}

} // namespace orch::format
