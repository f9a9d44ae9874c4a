// Drives the ANTLR-generated lexer and parser and turns the parse tree into the typed AST,
// one transform function per grammar rule. With format/src/FormatTokens.cpp (the formatter's
// lexer pass) it is one of the two files that touch the ANTLR runtime; its error listener turns
// ANTLR's reports into Orch diagnostics.
#include "orch/frontend/Parser.h"
#include "orch/frontend/Sema.h"

#include "LiteralDecoder.h"

#include "orch/grammar/OrchLexer.h"
#include "orch/grammar/OrchParser.h"

#include "BaseErrorListener.h"
#include "CommonTokenStream.h"
#include "DefaultErrorStrategy.h"
#include "Exceptions.h"
#include "misc/IntervalSet.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace orch::frontend {
namespace {

using grammar::OrchLexer;
using grammar::OrchParser;

/// Maps ANTLR positions (1-based line, 0-based column counted in code points) to Orch source
/// locations (1-based line and column counted in bytes, as llvm::SourceMgr counts them).
class LocationMapper {
public:
  LocationMapper(llvm::SourceMgr &sources, uint32_t bufferId)
      : sources_(sources), bufferId_(bufferId) {}

  SourceLocation at(size_t line, size_t codePointColumn, size_t codePointLength) const {
    llvm::SMLoc lineStart = sources_.FindLocForLineAndColumn(bufferId_, line, 1);
    if (!lineStart.isValid())
      return SourceLocation{bufferId_, uint32_t(line), uint32_t(codePointColumn + 1), 1};
    const char *bufferEnd = sources_.getMemoryBuffer(bufferId_)->getBufferEnd();
    const char *start = advance(lineStart.getPointer(), codePointColumn, bufferEnd);
    const char *end = advance(start, codePointLength, bufferEnd);
    return SourceLocation{bufferId_, uint32_t(line), uint32_t(start - lineStart.getPointer() + 1),
                          uint32_t(std::max<ptrdiff_t>(end - start, 1))};
  }

  SourceLocation of(const antlr4::Token *token) const {
    if (token->getType() == antlr4::Token::EOF)
      return at(token->getLine(), token->getCharPositionInLine(), 1);
    size_t length = token->getStopIndex() >= token->getStartIndex()
                        ? token->getStopIndex() - token->getStartIndex() + 1
                        : 1;
    return at(token->getLine(), token->getCharPositionInLine(), length);
  }

  /// From the start of `first` to the end of `last`, clipped to the first line.
  SourceLocation span(const antlr4::Token *first, const antlr4::Token *last) const {
    SourceLocation start = of(first);
    if (!last || last->getType() == antlr4::Token::EOF || last->getLine() != first->getLine() ||
        last->getTokenIndex() < first->getTokenIndex())
      return start;
    SourceLocation end = of(last);
    start.length = end.column + end.length - start.column;
    return start;
  }

  /// The position just past `token`, where a missing token would have been written.
  SourceLocation after(const antlr4::Token *token) const {
    std::string text = token->getText();
    size_t line = token->getLine();
    size_t column = token->getCharPositionInLine();
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 0;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    return at(line, column, 1);
  }

private:
  static const char *advance(const char *p, size_t codePoints, const char *end) {
    for (; codePoints > 0 && p < end && *p != '\n'; --codePoints) {
      ++p;
      while (p < end && (static_cast<unsigned char>(*p) & 0xC0) == 0x80)
        ++p;
    }
    return p;
  }

  llvm::SourceMgr &sources_;
  uint32_t bufferId_;
};

/// Describes a token type the way a user reads it: `';'`, `a name`, `a string`.
std::string describeTokenType(size_t type, const antlr4::dfa::Vocabulary &vocabulary) {
  switch (type) {
  case antlr4::Token::EOF:
    return "end of file";
  case OrchLexer::IDENT:
    return "a name";
  case OrchLexer::STRING:
    return "a string";
  case OrchLexer::INT:
    return "an integer";
  case OrchLexer::FLOAT:
    return "a number";
  case OrchLexer::DURATION:
    return "a duration";
  case OrchLexer::SIZE:
    return "a size";
  default:
    return vocabulary.getLiteralName(type).empty() ? vocabulary.getSymbolicName(type)
                                                   : vocabulary.getLiteralName(type);
  }
}

/// What the parser wanted when too many tokens could start it to list them.
std::string describeRule(size_t ruleIndex) {
  switch (ruleIndex) {
  case OrchParser::RuleExpr:
  case OrchParser::RuleArgument:
    return "an expression";
  case OrchParser::RuleStatement:
    return "a statement (param, source, call, sink or a binding)";
  case OrchParser::RuleLiteral:
    return "a literal";
  case OrchParser::RuleTypeExpr:
  case OrchParser::RuleTypeField:
    return "a type";
  default:
    return "";
  }
}

std::string describeToken(const antlr4::Token *token) {
  if (token->getType() == antlr4::Token::EOF)
    return "end of file";
  std::string text = token->getText();
  if (text.size() > 24)
    text = text.substr(0, 21) + "...";
  return "'" + text + "'";
}

std::string describeExpected(const antlr4::misc::IntervalSet &expected,
                             const antlr4::dfa::Vocabulary &vocabulary) {
  std::vector<std::string> names;
  for (ssize_t type : expected.toList())
    if (type >= 0)
      names.push_back(describeTokenType(size_t(type), vocabulary));
  if (names.empty() || names.size() > 4)
    return "";
  std::string out = names.front();
  for (size_t i = 1; i < names.size(); ++i)
    out += (i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

/// Input positions (in code points) of characters the lexer dropped.
using DroppedCharacters = std::vector<size_t>;

class LexerErrorListener : public antlr4::BaseErrorListener {
public:
  LexerErrorListener(const LocationMapper &locations, DiagnosticEngine &diags,
                     DroppedCharacters &dropped)
      : locations_(locations), diags_(diags), dropped_(dropped) {}

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *, size_t line, size_t column,
                   const std::string &, std::exception_ptr) override {
    auto *lexer = static_cast<antlr4::Lexer *>(recognizer);
    size_t index = lexer->getInputStream()->index();
    std::string character = lexer->getInputStream()->getText(antlr4::misc::Interval(index, index));
    diags_.error(locations_.at(line, column, 1), "invalid character '" + character + "'");
    dropped_.push_back(index);
  }

private:
  const LocationMapper &locations_;
  DiagnosticEngine &diags_;
  DroppedCharacters &dropped_;
};

class ParserErrorListener : public antlr4::BaseErrorListener {
public:
  ParserErrorListener(const LocationMapper &locations, DiagnosticEngine &diags,
                      const DroppedCharacters &dropped)
      : locations_(locations), diags_(diags), dropped_(dropped) {}

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line,
                   size_t column, const std::string &, std::exception_ptr) override {
    auto *parser = static_cast<antlr4::Parser *>(recognizer);
    // Unterminated literals were already reported while scanning the tokens.
    if (offending && (offending->getType() == OrchLexer::UNTERMINATED_STRING ||
                      offending->getType() == OrchLexer::UNTERMINATED_BLOCK_COMMENT))
      return;
    // The lexer already reported the character it dropped just before this token; the gap it
    // left (`1 @ 2` reads as `1 2`) is not a second mistake.
    const antlr4::Token *previous = offending ? previousVisibleToken(parser, offending) : nullptr;
    if (offending && droppedBetween(previous, offending))
      return;
    std::string expected = describeExpected(parser->getExpectedTokens(), parser->getVocabulary());
    if (expected.empty() && parser->getContext())
      expected = describeRule(parser->getContext()->getRuleIndex());
    if (!offending) {
      diags_.error(locations_.at(line, column, 1),
                   expected.empty() ? "syntax error" : "expected " + expected);
      return;
    }
    std::string found = describeToken(offending);
    if (expected.empty()) {
      diags_.error(locations_.of(offending), "unexpected " + found);
      return;
    }
    // A token missing at the end of a line (typically ';') is reported where it belongs, right
    // after the previous token, the way C compilers do.
    if (previous && previous->getLine() < offending->getLine()) {
      diags_.error(locations_.after(previous), "expected " + expected);
      return;
    }
    diags_.error(locations_.of(offending), "expected " + expected + ", found " + found);
  }

private:
  bool droppedBetween(const antlr4::Token *previous, const antlr4::Token *next) const {
    size_t from = previous ? previous->getStopIndex() + 1 : 0;
    size_t to = next->getType() == antlr4::Token::EOF ? size_t(-1) : next->getStartIndex();
    for (size_t index : dropped_)
      if (index >= from && index < to)
        return true;
    return false;
  }

  static const antlr4::Token *previousVisibleToken(antlr4::Parser *parser,
                                                   const antlr4::Token *token) {
    auto *stream = static_cast<antlr4::BufferedTokenStream *>(parser->getTokenStream());
    for (ssize_t i = ssize_t(token->getTokenIndex()) - 1; i >= 0; --i) {
      antlr4::Token *candidate = stream->get(size_t(i));
      if (candidate->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
        return candidate;
    }
    return nullptr;
  }

  const LocationMapper &locations_;
  DiagnosticEngine &diags_;
  const DroppedCharacters &dropped_;
};

/// Panic-mode recovery at statement level: after a syntax error the rest of the broken statement
/// is skipped (through its ';', or up to the keyword that starts the next statement), so one
/// mistake produces one error instead of a cascade.
class StatementRecoveryStrategy : public antlr4::DefaultErrorStrategy {
public:
  void recover(antlr4::Parser *parser, std::exception_ptr) override {
    antlr4::TokenStream *tokens = parser->getTokenStream();
    size_t start = tokens->index();
    while (true) {
      size_t type = tokens->LA(1);
      if (type == antlr4::Token::EOF || startsStatement(type))
        break;
      parser->consume();
      if (type == OrchLexer::SEMI)
        break;
    }
    // Never stop twice at the same place: that would loop forever.
    if (tokens->index() == start && start == lastRecoveryIndex_ &&
        tokens->LA(1) != antlr4::Token::EOF)
      parser->consume();
    lastRecoveryIndex_ = start;
  }

protected:
  /// ANTLR would drop a ';' or a statement keyword as "extraneous" when the token after it
  /// fits (`x = ;` then `y = 1;`), swallowing the next statement. Neither is ever extraneous.
  antlr4::Token *singleTokenDeletion(antlr4::Parser *parser) override {
    size_t type = parser->getTokenStream()->LA(1);
    if (type == OrchLexer::SEMI || startsStatement(type))
      return nullptr;
    return antlr4::DefaultErrorStrategy::singleTokenDeletion(parser);
  }

private:
  static bool startsStatement(size_t type) {
    return type == OrchLexer::PARAM || type == OrchLexer::SOURCE || type == OrchLexer::CALL ||
           type == OrchLexer::SINK || type == OrchLexer::PIPELINE || type == OrchLexer::OPERATOR;
  }

  size_t lastRecoveryIndex_ = size_t(-1);
};

/// Reports bytes that are not UTF-8; the lexer only accepts UTF-8 text.
bool checkUtf8(llvm::StringRef text, llvm::SourceMgr &sources, uint32_t bufferId,
               DiagnosticEngine &diags) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.begin());
  const auto *cursor = begin;
  if (llvm::isLegalUTF8String(&cursor, reinterpret_cast<const llvm::UTF8 *>(text.end())))
    return true;
  auto [line, column] = sources.getLineAndColumn(
      llvm::SMLoc::getFromPointer(text.begin() + (cursor - begin)), bufferId);
  diags.error(SourceLocation{bufferId, line, column, 1}, "source file is not valid UTF-8");
  return false;
}

void reportUnterminatedTokens(antlr4::CommonTokenStream &tokens, const LocationMapper &locations,
                              DiagnosticEngine &diags) {
  for (antlr4::Token *token : tokens.getTokens()) {
    if (token->getType() == OrchLexer::UNTERMINATED_STRING)
      diags.error(locations.at(token->getLine(), token->getCharPositionInLine(), 1),
                  "unterminated string literal");
    else if (token->getType() == OrchLexer::UNTERMINATED_BLOCK_COMMENT)
      diags.error(locations.at(token->getLine(), token->getCharPositionInLine(), 2),
                  "unterminated block comment");
  }
}

/// Builds the AST from a parse tree. Each function handles one grammar rule and tolerates the
/// holes that error recovery leaves (missing children become ErrorExpr or empty names).
class ParseTreeTransform {
public:
  ParseTreeTransform(const LocationMapper &locations, uint32_t bufferId, DiagnosticEngine &diags)
      : locations_(locations), bufferId_(bufferId), diags_(diags) {}

  std::unique_ptr<ast::File> transformFile(OrchParser::FileContext *context) {
    auto file = std::make_unique<ast::File>();
    file->bufferId = bufferId_;
    if (auto *pipeline = context->pipelineDecl())
      file->pipelineName = identifier(pipeline->name);
    for (OrchParser::StatementContext *statement : context->statement())
      if (auto transformed = transformStatement(statement))
        file->statements.push_back(std::move(transformed));
    return file;
  }

private:
  /// Whether the parser recovered from an error inside `tree` by leaving a rule early, skipping
  /// tokens or conjuring one. Only a conjured `;` leaves the statement whole: it is checked like
  /// any other.
  static bool recoveredInside(antlr4::tree::ParseTree *tree) {
    std::vector<antlr4::tree::ParseTree *> pending{tree};
    while (!pending.empty()) {
      antlr4::tree::ParseTree *node = pending.back();
      pending.pop_back();
      if (auto *error = dynamic_cast<antlr4::tree::ErrorNode *>(node);
          error && !(error->getSymbol()->getTokenIndex() == INVALID_INDEX &&
                     error->getSymbol()->getType() == OrchLexer::SEMI))
        return true;
      if (auto *rule = dynamic_cast<antlr4::ParserRuleContext *>(node); rule && rule->exception)
        return true;
      pending.insert(pending.end(), node->children.begin(), node->children.end());
    }
    return false;
  }

  std::unique_ptr<ast::Statement> transformStatement(OrchParser::StatementContext *context) {
    auto statement = std::make_unique<ast::Statement>();
    statement->location = location(context);
    statement->broken = recoveredInside(context);
    if (auto *param = context->paramDecl())
      statement->node = transformParamDecl(param);
    else if (auto *source = context->sourceDecl())
      statement->node = transformSourceDecl(source);
    else if (auto *call = context->callDecl())
      statement->node = transformCallDecl(call);
    else if (auto *sink = context->sinkDecl())
      statement->node = transformSinkDecl(sink);
    else if (auto *binding = context->bindingDecl())
      statement->node = transformBindingDecl(binding);
    else if (auto *declared = context->operatorDecl())
      statement->node = transformOperatorDecl(declared);
    else
      return nullptr;
    return statement;
  }

  ast::ParamDecl transformParamDecl(OrchParser::ParamDeclContext *context) {
    ast::ParamDecl param;
    param.name = identifier(context->name);
    if (auto *type = context->typeExpr())
      param.type = transformTypeExpr(type);
    param.value = context->literal() ? transformLiteral(context->literal()) : errorExpr(context);
    return param;
  }

  ast::SourceDecl transformSourceDecl(OrchParser::SourceDeclContext *context) {
    ast::SourceDecl source;
    source.name = identifier(context->name);
    source.use = operatorUse(context->operatorName(), context->arguments(), nullptr);
    if (context->domain)
      source.domain = identifier(context->domain);
    return source;
  }

  ast::CallDecl transformCallDecl(OrchParser::CallDeclContext *context) {
    ast::CallDecl call;
    call.name = identifier(context->name);
    call.use = operatorUse(context->operatorName(), context->arguments(), context->callOptions());
    return call;
  }

  ast::SinkDecl transformSinkDecl(OrchParser::SinkDeclContext *context) {
    return ast::SinkDecl{
        operatorUse(context->operatorName(), context->arguments(), context->callOptions())};
  }

  ast::BindingDecl transformBindingDecl(OrchParser::BindingDeclContext *context) {
    ast::BindingDecl binding;
    binding.name = identifier(context->name);
    if (auto *type = context->typeExpr())
      binding.type = transformTypeExpr(type);
    binding.value = transformExpr(context->expr());
    return binding;
  }

  ast::OperatorDecl transformOperatorDecl(OrchParser::OperatorDeclContext *context) {
    ast::OperatorDecl declared;
    declared.location = location(context);
    declared.name = operatorName(context->operatorName());
    for (OrchParser::OperatorParamContext *param : context->operatorParam()) {
      ast::OperatorParamDecl decl;
      decl.name = identifier(param->name);
      decl.constant = param->CONST() != nullptr;
      if (param->modifier)
        decl.modifier = identifier(param->modifier);
      if (param->typeExpr())
        decl.type = transformTypeExpr(param->typeExpr());
      if (param->literal())
        decl.defaultValue = transformLiteral(param->literal());
      declared.params.push_back(std::move(decl));
    }
    if (context->result)
      declared.result = transformTypeExpr(context->result);
    declared.runner = identifier(context->runner);
    for (OrchParser::RunnerArgumentContext *argument : context->runnerArgument()) {
      ast::RunnerArgument runnerArgument;
      runnerArgument.location = location(argument);
      if (argument->name)
        runnerArgument.name = identifier(argument->name);
      runnerArgument.isList = argument->list != nullptr;
      for (OrchParser::LiteralContext *literal : argument->literal())
        runnerArgument.values.push_back(transformLiteral(literal));
      declared.arguments.push_back(std::move(runnerArgument));
    }
    return declared;
  }

  ast::OperatorName operatorName(OrchParser::OperatorNameContext *name) const {
    ast::OperatorName op;
    if (name) {
      op.location = location(name);
      for (antlr4::tree::TerminalNode *part : name->IDENT())
        op.text += (op.text.empty() ? "" : ".") + part->getText();
    }
    return op;
  }

  ast::Reduce transformReduce(OrchParser::ReduceExprContext *context) {
    ast::Reduce reduce{transformExpr(context->expr()), {}, ast::FailedMembers::Suppress};
    for (OrchParser::ReduceOptionContext *option : context->reduceOption())
      reduce.options.push_back(
          ast::ReduceOption{identifier(option->name), transformExpr(option->value)});
    return reduce;
  }

  ast::ExprPtr transformExpr(OrchParser::ExprContext *context) {
    if (!context)
      return std::make_unique<ast::Expr>(ast::Expr{{}, ast::ErrorExpr{}, {}});
    if (auto *paren = dynamic_cast<OrchParser::ParenExprContext *>(context))
      return transformExpr(paren->expr());
    auto expr = std::make_unique<ast::Expr>();
    expr->location = location(context);
    if (auto *expand = dynamic_cast<OrchParser::ExpandExprContext *>(context))
      expr->node = ast::Expand{transformExpr(expand->expr()), identifier(expand->domain)};
    else if (auto *reduce = dynamic_cast<OrchParser::ReduceExprContext *>(context))
      expr->node = transformReduce(reduce);
    else if (auto *filter = dynamic_cast<OrchParser::FilterExprContext *>(context))
      expr->node = ast::Filter{transformExpr(filter->value), transformExpr(filter->mask)};
    else if (auto *broadcast = dynamic_cast<OrchParser::BroadcastExprContext *>(context))
      expr->node = ast::Broadcast{transformExpr(broadcast->value), transformExpr(broadcast->like)};
    else if (auto *invoke = dynamic_cast<OrchParser::InvokeExprContext *>(context))
      expr->node = transformInvoke(invoke);
    else if (auto *projection = dynamic_cast<OrchParser::ProjectionExprContext *>(context))
      expr->node =
          ast::Projection{transformExpr(projection->expr()), identifier(projection->field)};
    else if (auto *record = dynamic_cast<OrchParser::RecordExprContext *>(context))
      expr->node = transformRecord(record);
    else if (auto *literal = dynamic_cast<OrchParser::LiteralExprContext *>(context))
      return transformLiteral(literal->literal());
    else if (auto *name = dynamic_cast<OrchParser::NameExprContext *>(context))
      expr->node =
          ast::NameRef{identifier(name->IDENT() ? name->IDENT()->getSymbol() : nullptr), nullptr};
    else if (!transformOperator(context, *expr))
      expr->node = ast::ErrorExpr{};
    return expr;
  }

  /// `op(...)`: an operator use, or a builtin function (`string(x)`, `coalesce(a, b)`), whose
  /// arguments are positional and which takes no options.
  decltype(ast::Expr::node) transformInvoke(OrchParser::InvokeExprContext *invoke) {
    ast::OperatorUse use =
        operatorUse(invoke->operatorName(), invoke->arguments(), invoke->callOptions());
    std::optional<plan::ComputeOp> builtin = builtinFunction(use.op.text);
    if (!builtin)
      return ast::Invoke{std::move(use), nullptr};
    ast::Compute compute;
    compute.op = *builtin;
    for (ast::Argument &argument : use.arguments) {
      if (argument.name)
        diags_.error(argument.name->location,
                     "'" + use.op.text + "' takes positional arguments only");
      compute.operands.push_back(std::move(argument.value));
    }
    if (use.hasOptionBlock)
      diags_.error(use.op.location,
                   "'" + use.op.text + "' is a builtin function; it takes no options");
    const size_t count = compute.operands.size();
    const bool variadic =
        compute.op == plan::ComputeOp::Coalesce || compute.op == plan::ComputeOp::Format;
    if (variadic ? count == 0 : count != 1)
      diags_.error(use.op.location, "'" + use.op.text + "' takes " +
                                        (variadic ? std::string("one or more arguments")
                                                  : std::string("exactly one argument")) +
                                        ", but " + std::to_string(count) + " were given");
    return compute;
  }

  /// The operator alternatives of `expr`; false when `context` is none of them.
  bool transformOperator(OrchParser::ExprContext *context, ast::Expr &expr) {
    ast::Compute compute;
    auto binary = [&](plan::ComputeOp op, antlr4::Token *token, OrchParser::ExprContext *left,
                      OrchParser::ExprContext *right) {
      compute.op = op;
      compute.operands.push_back(transformExpr(left));
      compute.operands.push_back(transformExpr(right));
      if (token && token->getTokenIndex() != INVALID_INDEX)
        expr.location = locations_.of(token);
    };
    auto unary = [&](plan::ComputeOp op, antlr4::Token *token, OrchParser::ExprContext *operand) {
      compute.op = op;
      compute.operands.push_back(transformExpr(operand));
      if (token && token->getTokenIndex() != INVALID_INDEX)
        expr.location = locations_.of(token);
    };
    auto opText = [](antlr4::Token *token) { return token ? token->getText() : std::string(); };
    if (auto *cast = dynamic_cast<OrchParser::CastExprContext *>(context)) {
      compute.op = plan::ComputeOp::Cast;
      compute.operands.push_back(transformExpr(cast->value));
      if (cast->type)
        compute.castType = transformTypeExpr(cast->type);
      if (cast->AS())
        expr.location = locations_.of(cast->AS()->getSymbol());
    } else if (auto *negate = dynamic_cast<OrchParser::NegateExprContext *>(context)) {
      unary(plan::ComputeOp::Negate, negate->op, negate->operand);
    } else if (auto *notExpr = dynamic_cast<OrchParser::NotExprContext *>(context)) {
      unary(plan::ComputeOp::Not, notExpr->op, notExpr->operand);
    } else if (auto *mul = dynamic_cast<OrchParser::MultiplicativeExprContext *>(context)) {
      const std::string op = opText(mul->op);
      binary(op == "*"   ? plan::ComputeOp::Multiply
             : op == "/" ? plan::ComputeOp::Divide
                         : plan::ComputeOp::Remainder,
             mul->op, mul->left, mul->right);
    } else if (auto *add = dynamic_cast<OrchParser::AdditiveExprContext *>(context)) {
      binary(opText(add->op) == "+" ? plan::ComputeOp::Add : plan::ComputeOp::Subtract, add->op,
             add->left, add->right);
    } else if (auto *rel = dynamic_cast<OrchParser::RelationalExprContext *>(context)) {
      const std::string op = opText(rel->op);
      binary(op == "<"    ? plan::ComputeOp::Less
             : op == "<=" ? plan::ComputeOp::LessEqual
             : op == ">"  ? plan::ComputeOp::Greater
                          : plan::ComputeOp::GreaterEqual,
             rel->op, rel->left, rel->right);
    } else if (auto *eq = dynamic_cast<OrchParser::EqualityExprContext *>(context)) {
      binary(opText(eq->op) == "==" ? plan::ComputeOp::Equal : plan::ComputeOp::NotEqual, eq->op,
             eq->left, eq->right);
    } else if (auto *andExpr = dynamic_cast<OrchParser::AndExprContext *>(context)) {
      binary(plan::ComputeOp::And, andExpr->op, andExpr->left, andExpr->right);
    } else if (auto *orExpr = dynamic_cast<OrchParser::OrExprContext *>(context)) {
      binary(plan::ComputeOp::Or, orExpr->op, orExpr->left, orExpr->right);
    } else if (auto *conditional = dynamic_cast<OrchParser::ConditionalExprContext *>(context)) {
      compute.op = plan::ComputeOp::If;
      compute.operands.push_back(transformExpr(conditional->condition));
      compute.operands.push_back(transformExpr(conditional->then));
      compute.operands.push_back(transformExpr(conditional->otherwise));
    } else {
      return false;
    }
    expr.node = std::move(compute);
    return true;
  }

  ast::Record transformRecord(OrchParser::RecordExprContext *context) {
    ast::Record record;
    for (OrchParser::RecordFieldContext *field : context->recordField())
      record.fields.push_back(
          ast::RecordField{identifier(field->name), transformExpr(field->expr())});
    return record;
  }

  ast::ExprPtr transformLiteral(OrchParser::LiteralContext *context) {
    auto expr = std::make_unique<ast::Expr>();
    expr->location = location(context);
    std::optional<plan::StaticValue> value = decodeLiteral(context, expr->location);
    if (value)
      expr->node = ast::Literal{std::move(*value)};
    else
      expr->node = ast::ErrorExpr{};
    return expr;
  }

  std::optional<plan::StaticValue> decodeLiteral(OrchParser::LiteralContext *context,
                                                 SourceLocation at) {
    if (auto *text = dynamic_cast<OrchParser::StringLiteralContext *>(context))
      return text->STRING() ? decodeStringLiteral(text->STRING()->getText(), at, diags_)
                            : std::nullopt;
    if (auto *integer = dynamic_cast<OrchParser::IntLiteralContext *>(context))
      return integer->INT() ? decodeIntLiteral(integer->INT()->getText(),
                                               context->getStart()->getText() == "-", at, diags_)
                            : std::nullopt;
    if (auto *real = dynamic_cast<OrchParser::FloatLiteralContext *>(context))
      return real->FLOAT() ? decodeFloatLiteral(real->FLOAT()->getText(),
                                                context->getStart()->getText() == "-", at, diags_)
                           : std::nullopt;
    if (auto *boolean = dynamic_cast<OrchParser::BoolLiteralContext *>(context))
      return plan::StaticValue(boolean->TRUE() != nullptr);
    if (auto *duration = dynamic_cast<OrchParser::DurationLiteralContext *>(context))
      return duration->DURATION()
                 ? decodeDurationLiteral(duration->DURATION()->getText(), at, diags_)
                 : std::nullopt;
    if (auto *size = dynamic_cast<OrchParser::SizeLiteralContext *>(context))
      return size->SIZE() ? decodeSizeLiteral(size->SIZE()->getText(), at, diags_) : std::nullopt;
    return std::nullopt;
  }

  ast::OperatorUse operatorUse(OrchParser::OperatorNameContext *name,
                               OrchParser::ArgumentsContext *arguments,
                               OrchParser::CallOptionsContext *options) {
    ast::OperatorUse use;
    use.op = operatorName(name);
    if (arguments)
      for (OrchParser::ArgumentContext *argument : arguments->argument())
        use.arguments.push_back(transformArgument(argument));
    if (options) {
      use.hasOptionBlock = true;
      for (OrchParser::CallOptionContext *option : options->callOption()) {
        ast::Option parsed{identifier(option->name), transformExpr(option->expr())};
        // `none` is a value of the option, not a name (`timeout: none`).
        if (auto *word = parsed.value ? std::get_if<ast::NameRef>(&parsed.value->node) : nullptr;
            word && word->name.name == "none") {
          parsed.value.reset();
          parsed.none = true;
        }
        use.options.push_back(std::move(parsed));
      }
    }
    return use;
  }

  ast::Argument transformArgument(OrchParser::ArgumentContext *context) {
    ast::Argument argument;
    argument.location = location(context);
    if (context->name)
      argument.name = identifier(context->name);
    argument.value = transformExpr(context->expr());
    return argument;
  }

  ast::TypeExpr transformTypeExpr(OrchParser::TypeExprContext *context) {
    ast::TypeExpr type;
    type.location = location(context);
    if (auto *named = dynamic_cast<OrchParser::NamedTypeContext *>(context)) {
      type.name = identifier(named->IDENT() ? named->IDENT()->getSymbol() : nullptr);
      for (OrchParser::TypeExprContext *argument : named->typeExpr())
        type.arguments.push_back(transformTypeExpr(argument));
    } else if (auto *record = dynamic_cast<OrchParser::RecordTypeContext *>(context)) {
      type.isRecord = true;
      for (OrchParser::TypeFieldContext *field : record->typeField()) {
        auto fieldType = std::make_unique<ast::TypeExpr>();
        if (field->typeExpr())
          *fieldType = transformTypeExpr(field->typeExpr());
        type.fields.push_back(ast::TypeField{identifier(field->name), std::move(fieldType)});
      }
    }
    return type;
  }

  ast::Identifier identifier(const antlr4::Token *token) const {
    if (!token || token->getTokenIndex() == INVALID_INDEX)
      return ast::Identifier{};
    return ast::Identifier{token->getText(), locations_.of(token)};
  }

  SourceLocation location(antlr4::ParserRuleContext *context) const {
    if (!context || !context->getStart())
      return SourceLocation{};
    return locations_.span(context->getStart(), context->getStop());
  }

  ast::ExprPtr errorExpr(antlr4::ParserRuleContext *context) const {
    return std::make_unique<ast::Expr>(ast::Expr{location(context), ast::ErrorExpr{}, {}});
  }

  const LocationMapper &locations_;
  uint32_t bufferId_;
  DiagnosticEngine &diags_;
};

/// How deeply brackets, `if`s and prefix operators may nest in one statement: the parser
/// recurses on each level. Like Clang's -fbracket-depth default.
constexpr size_t kMaxNesting = 256;
/// How deeply expressions may nest in one another (a chain `a + b + c ...` nests one level per
/// operator): every stage after the parser walks expressions recursively.
constexpr size_t kMaxExpressionDepth = 1000;

/// The first token at which one statement nests deeper than kMaxNesting, or null. Counted on
/// tokens, before parsing, so that the parser never recurses that deep.
const antlr4::Token *firstTooDeeplyNested(antlr4::CommonTokenStream &tokens) {
  // Per open bracket: the `if`s nested at its level (a `,` starts a sibling, a `;` a statement).
  std::vector<size_t> ifsAtLevel{0};
  size_t ifs = 0, prefixRun = 0;
  bool afterOperand = false;
  for (antlr4::Token *token : tokens.getTokens()) {
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    const size_t type = token->getType();
    const std::string text = token->getText();
    bool operand = false;
    if (text == "(" || text == "{") {
      ifsAtLevel.push_back(0);
    } else if (text == ")" || text == "}") {
      if (ifsAtLevel.size() > 1) {
        ifs -= ifsAtLevel.back();
        ifsAtLevel.pop_back();
      }
      operand = true;
    } else if (text == ",") {
      ifs -= ifsAtLevel.back();
      ifsAtLevel.back() = 0;
    } else if (text == ";") {
      ifsAtLevel.assign(1, 0);
      ifs = 0;
    } else if (type == OrchLexer::IF) {
      ++ifsAtLevel.back();
      ++ifs;
    } else if (type == OrchLexer::IDENT || type == OrchLexer::INT || type == OrchLexer::FLOAT ||
               type == OrchLexer::STRING || type == OrchLexer::TRUE || type == OrchLexer::FALSE ||
               type == OrchLexer::DURATION || type == OrchLexer::SIZE) {
      operand = true;
    }
    const bool prefix = type == OrchLexer::NOT || (text == "-" && !afterOperand);
    prefixRun = prefix ? prefixRun + 1 : 0;
    afterOperand = operand;
    if (ifsAtLevel.size() - 1 + ifs + prefixRun > kMaxNesting)
      return token;
  }
  return nullptr;
}

/// The first expression nested deeper than kMaxExpressionDepth in `tree`, or null. Iterative:
/// the tree may be that deep.
OrchParser::ExprContext *firstTooDeepExpression(antlr4::tree::ParseTree *tree) {
  std::vector<std::pair<antlr4::tree::ParseTree *, size_t>> pending{{tree, 0}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    auto *expr = dynamic_cast<OrchParser::ExprContext *>(node);
    if (expr && ++depth > kMaxExpressionDepth)
      return expr;
    for (antlr4::tree::ParseTree *child : node->children)
      pending.emplace_back(child, depth);
  }
  return nullptr;
}

std::unique_ptr<ast::File> parseTokens(llvm::SourceMgr &sources, uint32_t bufferId,
                                       llvm::StringRef text, DiagnosticEngine &diags) {
  LocationMapper locations(sources, bufferId);
  try {
    antlr4::ANTLRInputStream input(text.data(), text.size());
    OrchLexer lexer(&input);
    DroppedCharacters dropped;
    LexerErrorListener lexerErrors(locations, diags, dropped);
    lexer.removeErrorListeners();
    lexer.addErrorListener(&lexerErrors);

    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    reportUnterminatedTokens(tokens, locations, diags);
    if (const antlr4::Token *deep = firstTooDeeplyNested(tokens)) {
      diags.error(locations.of(deep), "brackets, 'if's and prefix operators nest more than " +
                                          std::to_string(kMaxNesting) +
                                          " levels deep here; split the expression into "
                                          "named bindings");
      return nullptr;
    }

    OrchParser parser(&tokens);
    parser.setErrorHandler(std::make_shared<StatementRecoveryStrategy>());
    ParserErrorListener parserErrors(locations, diags, dropped);
    parser.removeErrorListeners();
    parser.addErrorListener(&parserErrors);
    OrchParser::FileContext *tree = parser.file();
    if (OrchParser::ExprContext *deep = firstTooDeepExpression(tree)) {
      diags.error(deep->getStart() ? locations.of(deep->getStart())
                                   : SourceLocation{bufferId, 1, 1, 1},
                  "an expression nests more than " + std::to_string(kMaxExpressionDepth) +
                      " levels deep here (each operator of a chain is a level); split it into "
                      "named bindings");
      return nullptr;
    }
    return ParseTreeTransform(locations, bufferId, diags).transformFile(tree);
  } catch (const std::exception &error) {
    diags.internalError(SourceLocation{bufferId, 1, 1, 1},
                        std::string("while parsing: ") + error.what());
  }
  return nullptr;
}

} // namespace

/// The largest source the compiler takes. Real pipelines are kilobytes; a generated one of
/// this size compiles in about 6 s and 720 MB on a 2-core machine (both grow linearly), and a
/// larger one is refused up front instead of exhausting the machine.
constexpr size_t kMaxSourceBytes = 2 * 1024 * 1024;

ParseResult parseFile(llvm::SourceMgr &sources, uint32_t bufferId, DiagnosticEngine &diags) {
  llvm::StringRef text = sources.getMemoryBuffer(bufferId)->getBuffer();
  if (text.size() > kMaxSourceBytes) {
    char size[32];
    std::snprintf(size, sizeof size, "%.1f MiB", double(text.size()) / (1024 * 1024));
    diags.error(SourceLocation{bufferId, 1, 1, 1},
                std::string("this source is ") + size + "; the compiler takes sources of up to " +
                    std::to_string(kMaxSourceBytes / (1024 * 1024)) +
                    " MiB (split a generated pipeline into several)");
    return ParseResult{nullptr, false};
  }
  if (!checkUtf8(text, sources, bufferId, diags))
    return ParseResult{nullptr, false};

  // The lexer runs ahead of the parser, so errors are collected and delivered in source order.
  std::vector<Diagnostic> found;
  DiagnosticEngine syntaxDiags([&](const Diagnostic &d) { found.push_back(d); });
  std::unique_ptr<ast::File> file = parseTokens(sources, bufferId, text, syntaxDiags);
  std::stable_sort(found.begin(), found.end(), [](const Diagnostic &a, const Diagnostic &b) {
    return std::tie(a.location.line, a.location.column) <
           std::tie(b.location.line, b.location.column);
  });
  for (const Diagnostic &diagnostic : found)
    diags.emit(diagnostic);
  if (file)
    file->path = sources.getMemoryBuffer(bufferId)->getBufferIdentifier().str();
  return ParseResult{std::move(file), found.empty()};
}

std::vector<std::string> languageKeywords() {
  std::vector<std::string> keywords;
  antlr4::ANTLRInputStream nothing("");
  OrchLexer lexer(&nothing);
  const antlr4::dfa::Vocabulary &vocabulary = lexer.getVocabulary();
  for (size_t type = 1; type <= vocabulary.getMaxTokenType(); ++type) {
    const std::string literal = vocabulary.getLiteralName(type);
    // 'pipeline': a word in quotes (punctuation such as ';' is not a keyword).
    if (literal.size() > 2 && std::isalpha(static_cast<unsigned char>(literal[1])))
      keywords.push_back(literal.substr(1, literal.size() - 2));
  }
  return keywords;
}

} // namespace orch::frontend
