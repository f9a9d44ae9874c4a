// The canonical layout of .orch files. Each statement is laid out on its own: flat when it
// fits kFormatLineWidth, else its outermost bracket groups break one item per line (indented
// by four) until the rest fits. Statements are then joined, keeping at most one blank line
// between them and aligning the trailing comments of runs of one-line statements.
#include "orch/format/Formatter.h"

#include "FormatTokens.h"

#include "orch/frontend/Parser.h"
#include "orch/grammar/OrchLexer.h"

#include "llvm/Support/SourceMgr.h"

#include <algorithm>

namespace orch::format {
namespace {

using format::Comment;
using format::Group;
using format::Node;
using format::Token;
using grammar::OrchLexer;

constexpr unsigned kIndent = 4;

/// Display width of UTF-8 text (code points).
size_t widthOf(std::string_view text) {
  return size_t(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

/// Whether a space separates `previous` and `next` on one line.
bool spaceBetween(const Token &previous, const Token &next) {
  if (next.is(",") || next.is(";") || next.is(")") || next.is("]") || next.is(".") ||
      next.is(":") || next.typeBracket)
    return false;
  if (next.is("}"))
    return !previous.is("{");
  if (next.is("("))
    return !(previous.type == OrchLexer::IDENT || previous.type == OrchLexer::EXPAND ||
             previous.type == OrchLexer::REDUCE || previous.type == OrchLexer::FILTER ||
             previous.type == OrchLexer::BROADCAST || previous.is("(") || previous.unaryMinus);
  // A negating `-` sticks to its operand; a subtracting one has a space on both sides.
  return !(previous.is("(") || previous.is("[") || (previous.is("<") && previous.typeBracket) ||
           previous.is(".") || previous.unaryMinus);
}

/// Calls `visit` on every token of `nodes`, nested groups included.
template <typename Visit> void forEachToken(const std::vector<Node> &nodes, Visit &&visit);

template <typename Visit> void forEachToken(const Group &group, Visit &&visit) {
  visit(*group.open);
  for (size_t i = 0; i < group.items.size(); ++i) {
    forEachToken(group.items[i], visit);
    if (group.commas[i])
      visit(*group.commas[i]);
  }
  if (group.close)
    visit(*group.close);
}

template <typename Visit> void forEachToken(const std::vector<Node> &nodes, Visit &&visit) {
  for (const Node &node : nodes) {
    if (node.token)
      visit(*node.token);
    else
      forEachToken(*node.group, visit);
  }
}

/// Whether a group must break its items onto lines: a line comment, or a comment on a line of
/// its own, inside it.
bool groupMustBreak(const Group &group) {
  bool must = false;
  forEachToken(group, [&](const Token &token) {
    if ((&token != group.open && !token.leading.empty()) ||
        (&token != group.close && token.hasTrailingLineComment()))
      must = true;
  });
  return must;
}

/// Lays out one statement's tokens into lines.
class StatementPrinter {
public:
  /// The statement's text without the trailing comments of its last token, which the caller
  /// aligns with its neighbours.
  std::string print(const format::Statement &statement) {
    lastToken_ = statement.last;
    // An operator declaration too long for one line puts its runner on the next:
    //   operator quality.score(text: Text) -> Float
    //       = python("models/quality.py", class: "Scorer");
    const std::vector<Node> &all = statement.nodes;
    if (statement.first->type == OrchLexer::OPERATOR && flatWidth(all) > kFormatLineWidth) {
      auto runner = std::find_if(all.begin(), all.end(), [](const Node &node) {
        return node.token && node.token->is("=");
      });
      if (runner != all.end()) {
        const size_t split = size_t(runner - all.begin());
        nodes(all, 0, /*isStatementStart=*/true, 0, split);
        newline(kIndent);
        indent_ = kIndent;
        nodes(all, 0, false, split);
        return std::move(out_);
      }
    }
    nodes(all, 0, /*isStatementStart=*/true);
    return std::move(out_);
  }

private:
  /// Lays out `sequence[from, to)`.
  void nodes(const std::vector<Node> &sequence, size_t tail, bool isStatementStart = false,
             size_t from = 0, size_t to = SIZE_MAX) {
    to = std::min(to, sequence.size());
    for (size_t i = from; i < to; ++i) {
      const size_t rest = tail + flatWidth(sequence, i + 1, &lastToken(sequence[i]), to);
      if (sequence[i].token)
        token(*sequence[i].token, isStatementStart && i == from);
      else
        group(*sequence[i].group, rest, isStatementStart && i == from);
    }
  }

  void group(const Group &group, size_t tail, bool isStatementStart) {
    const size_t space = previous_ && spaceBetween(*previous_, *group.open) ? 1 : 0;
    const bool flat =
        group.open->is("<") ||
        (!groupMustBreak(group) && column_ + space + flatWidth(group) + tail <= kFormatLineWidth);
    token(*group.open, isStatementStart);
    if (group.items.empty()) {
      if (group.close)
        token(*group.close);
      return;
    }
    if (flat) {
      for (size_t i = 0; i < group.items.size(); ++i) {
        nodes(group.items[i], 0);
        if (group.commas[i] && i + 1 < group.items.size())
          token(*group.commas[i]);
        else if (group.commas[i])
          comments(*group.commas[i]);
      }
      if (group.close)
        token(*group.close);
      return;
    }
    const size_t outer = indent_;
    indent_ += kIndent;
    for (size_t i = 0; i < group.items.size(); ++i) {
      newline(indent_);
      const bool last = i + 1 == group.items.size();
      nodes(group.items[i], last ? 0 : 1);
      if (group.commas[i] && !last)
        token(*group.commas[i]);
      else if (group.commas[i])
        comments(*group.commas[i]);
      else if (!last)
        raw(",");
    }
    indent_ = outer;
    if (group.close) {
      newline(indent_);
      token(*group.close);
    }
  }

  /// A token with its comments. The leading comments of a statement's first token are printed
  /// by the caller.
  void token(const Token &token, bool isStatementStart = false) {
    if (!isStatementStart && !token.leading.empty()) {
      if (!atLineStart_)
        newline(indent_ + kIndent);
      const size_t commentColumn = column_;
      for (const Comment &comment : token.leading) {
        if (comment.blankBefore && atLineStart_)
          out_.insert(out_.size() - commentColumn, 1, '\n');
        raw(comment.text);
        if (comment.newlineAfter)
          newline(commentColumn);
        else
          raw(" ");
      }
    } else if (needNewline_) {
      newline(indent_ + kIndent);
    } else if (previous_ && !atLineStart_ && spaceBetween(*previous_, token)) {
      out_ += ' ';
      ++column_;
    }
    raw(token.text);
    previous_ = &token;
    if (&token != lastToken_)
      comments(token);
  }

  /// The trailing comments of `token`, printed after what is on the line.
  void comments(const Token &token) {
    for (const Comment &comment : token.trailing) {
      raw(comment.isLine ? "  " : " ");
      raw(comment.text);
      if (comment.isLine)
        needNewline_ = true;
    }
  }

  void raw(std::string_view text) {
    out_ += text;
    column_ += widthOf(text);
    atLineStart_ = false;
  }

  void newline(size_t indent) {
    while (!out_.empty() && out_.back() == ' ')
      out_.pop_back();
    out_ += '\n';
    out_.append(indent, ' ');
    column_ = indent;
    atLineStart_ = true;
    needNewline_ = false;
  }

  static const Token &firstToken(const Node &node) {
    return node.token ? *node.token : *node.group->open;
  }
  static const Token &lastToken(const Node &node) {
    if (node.token)
      return *node.token;
    return node.group->close ? *node.group->close : *node.group->open;
  }

  /// The width of `sequence` from `from` laid out on one line, after `previous` (if any).
  static size_t flatWidth(const std::vector<Node> &sequence, size_t from = 0,
                          const Token *previous = nullptr, size_t to = SIZE_MAX) {
    size_t width = 0;
    for (size_t i = from; i < std::min(to, sequence.size()); ++i) {
      if (previous && spaceBetween(*previous, firstToken(sequence[i])))
        ++width;
      width += sequence[i].token ? widthOf(sequence[i].token->text) : flatWidth(*sequence[i].group);
      previous = &lastToken(sequence[i]);
    }
    return width;
  }

  static size_t flatWidth(const Group &group) {
    size_t width = widthOf(group.open->text) + (group.close ? widthOf(group.close->text) : 0);
    if (group.open->is("{") && !group.items.empty())
      width += 2;
    for (size_t i = 0; i < group.items.size(); ++i)
      width += flatWidth(group.items[i]) + (i > 0 ? 2 : 0);
    return width;
  }

private:
  std::string out_;
  size_t column_ = 0;
  size_t indent_ = 0;
  bool atLineStart_ = true;
  bool needNewline_ = false;
  const Token *previous_ = nullptr;
  const Token *lastToken_ = nullptr;
};

/// A statement laid out, with what joining needs to know about it.
struct PrintedStatement {
  std::vector<Comment> leading;
  bool blankBefore = false;
  std::string code;
  std::vector<Comment> trailing;
  bool singleLine = false;
};

PrintedStatement printStatement(const format::Statement &statement) {
  PrintedStatement printed;
  printed.leading = statement.first->leading;
  printed.blankBefore = statement.first->blankBefore;
  StatementPrinter printer;
  printed.code = printer.print(statement);
  printed.trailing = statement.last->trailing;
  printed.singleLine = printed.code.find('\n') == std::string::npos;
  return printed;
}

std::string joinTrailing(const std::vector<Comment> &comments) {
  std::string text;
  for (const Comment &comment : comments)
    text += (text.empty() ? "" : " ") + comment.text;
  return text;
}

void appendComments(std::string &out, const std::vector<Comment> &comments, bool atFileStart) {
  for (const Comment &comment : comments) {
    if (comment.blankBefore && !atFileStart)
      out += '\n';
    atFileStart = false;
    out += comment.text;
    out += comment.newlineAfter ? '\n' : ' ';
  }
}

std::string joinStatements(std::vector<PrintedStatement> &statements,
                           const std::vector<Comment> &fileComments) {
  std::string out;
  size_t i = 0;
  while (i < statements.size()) {
    // A run of one-line statements without blank lines or comments between them: their
    // trailing comments start in one column.
    size_t end = i + 1;
    while (end < statements.size() && statements[end - 1].singleLine &&
           statements[end].singleLine && !statements[end].blankBefore &&
           statements[end].leading.empty())
      ++end;
    size_t commentColumn = 0;
    for (size_t k = i; k < end; ++k)
      if (!statements[k].trailing.empty())
        commentColumn = std::max(commentColumn, widthOf(statements[k].code) + 2);
    for (size_t k = i; k < end; ++k) {
      PrintedStatement &statement = statements[k];
      const bool first = out.empty();
      if (!first && (statement.leading.empty() ? statement.blankBefore
                                               : statement.leading.front().blankBefore))
        out += '\n';
      std::vector<Comment> leading = statement.leading;
      if (!leading.empty())
        leading.front().blankBefore = false;
      appendComments(out, leading, true);
      if (!statement.leading.empty() && statement.blankBefore)
        out += '\n';
      out += statement.code;
      if (!statement.trailing.empty()) {
        const size_t lastLine = statement.code.rfind('\n') + 1;
        const size_t width = widthOf(std::string_view(statement.code).substr(lastLine));
        const bool line = statement.trailing.back().isLine;
        const size_t column = statement.singleLine && line ? commentColumn : width + (line ? 2 : 1);
        out.append(column > width ? column - width : 1, ' ');
        out += joinTrailing(statement.trailing);
      }
      out += '\n';
    }
    i = end;
  }
  appendComments(out, fileComments, out.empty());
  while (out.size() > 1 && out.back() == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  if (!out.empty() && out.back() != '\n')
    out += '\n';
  return out;
}

} // namespace

std::optional<std::string> formatSource(llvm::SourceMgr &sources, uint32_t bufferId,
                                        DiagnosticEngine &diags) {
  const unsigned errorsBefore = diags.errorCount();
  frontend::ParseResult parsed = frontend::parseFile(sources, bufferId, diags);
  if (!parsed.ok || diags.errorCount() != errorsBefore)
    return std::nullopt;
  format::TokenizedFile file =
      format::tokenizeForFormatting(sources.getMemoryBuffer(bufferId)->getBuffer());
  std::vector<PrintedStatement> statements;
  for (const format::Statement &statement : file.statements)
    statements.push_back(printStatement(statement));
  return joinStatements(statements, file.trailingComments);
}

} // namespace orch::format
