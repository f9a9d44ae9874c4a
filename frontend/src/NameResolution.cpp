// Name resolution: every name use is bound to the param, source, Call or binding it names.
// Names live in one namespace and are bound once; a use must follow its definition, and a use
// of a later binding that leads back to the user is reported as a cycle. Domain names (from
// `source ... as D` and `expand(...) as D`) live in their own namespace.
#include "orch/frontend/Sema.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace orch::frontend {
namespace {

struct Declaration {
  ast::Statement *statement = nullptr;
  size_t index = 0;
  const ast::Identifier *name = nullptr;
};

/// A name as used inside a statement.
struct NameUse {
  std::string name;
  SourceLocation location;
};

const char *describeDeclaration(const ast::Statement &statement) {
  if (std::holds_alternative<ast::ParamDecl>(statement.node))
    return "param";
  if (std::holds_alternative<ast::SourceDecl>(statement.node))
    return "source";
  if (std::holds_alternative<ast::CallDecl>(statement.node))
    return "call";
  return "value";
}

class NameResolver {
public:
  NameResolver(ast::File &file, DiagnosticEngine &diags) : file_(file), diags_(diags) {}

  bool run() {
    unsigned errorsBefore = diags_.errorCount();
    declareNames();
    declareDomains();
    collectUses();
    for (size_t index = 0; index < file_.statements.size(); ++index)
      resolveStatement(index);
    return diags_.errorCount() == errorsBefore;
  }

private:
  void declareNames() {
    for (size_t index = 0; index < file_.statements.size(); ++index) {
      ast::Statement &statement = *file_.statements[index];
      const ast::Identifier *name = ast::declaredName(statement);
      if (!name || name->name.empty())
        continue;
      // `len(x)` would call the builtin, never this declaration. (It is still declared, so
      // that its uses are not reported as undefined too.)
      if (isBuiltinFunction(name->name))
        diags_.error(name->location, "'" + name->name + "' is a builtin function; give this " +
                                         describeDeclaration(statement) + " another name");
      auto [existing, inserted] =
          declarations_.emplace(name->name, Declaration{&statement, index, name});
      if (!inserted)
        diags_.error(name->location, "name '" + name->name + "' is bound twice")
            .attachNote(existing->second.name->location, "first bound here");
    }
  }

  void declareDomain(const ast::Identifier &domain) {
    if (domain.name.empty())
      return;
    auto [existing, inserted] = domains_.emplace(domain.name, domain.location);
    if (!inserted) {
      diags_.error(domain.location, "domain '" + domain.name + "' is defined twice")
          .attachNote(existing->second, "first defined here");
      return;
    }
    file_.domains.push_back(domain);
  }

  void declareDomains() {
    for (auto &statement : file_.statements) {
      if (statement->broken)
        continue;
      if (auto *source = std::get_if<ast::SourceDecl>(&statement->node))
        declareDomain(source->domain ? *source->domain : source->name);
      ast::forEachExpr(*statement, [&](ast::Expr &expr) { declareExpandDomains(expr); });
    }
  }

  /// Post-order: in `expand(f(expand(x) as Clip)) as Frame` the inner domain, Frame's parent,
  /// is declared first, so parents always precede their children.
  void declareExpandDomains(ast::Expr &expr) {
    ast::forEachChild(expr, [&](ast::Expr &child) { declareExpandDomains(child); });
    if (auto *expand = std::get_if<ast::Expand>(&expr.node))
      declareDomain(expand->domain);
  }

  /// The names each statement uses, for finding cycles before resolving.
  void collectUses() {
    for (auto &statement : file_.statements) {
      if (statement->broken)
        continue;
      std::vector<NameUse> &uses = uses_[statement.get()];
      ast::forEachExpr(*statement, [&](ast::Expr &expr) { collectUses(expr, uses); });
    }
  }

  void collectUses(ast::Expr &expr, std::vector<NameUse> &uses) {
    if (auto *name = std::get_if<ast::NameRef>(&expr.node))
      uses.push_back({name->name.name, name->name.location});
    if (auto *invoke = std::get_if<ast::Invoke>(&expr.node))
      if (invoke->use.op.text.find('.') == std::string::npos)
        uses.push_back({invoke->use.op.text, invoke->use.op.location});
    ast::forEachChild(expr, [&](ast::Expr &child) { collectUses(child, uses); });
  }

  void resolveStatement(size_t index) {
    ast::Statement &statement = *file_.statements[index];
    if (statement.broken)
      return;
    ast::forEachExpr(statement, [&](ast::Expr &expr) { resolveExpr(expr, index); });
  }

  void resolveExpr(ast::Expr &expr, size_t userIndex) {
    if (auto *name = std::get_if<ast::NameRef>(&expr.node)) {
      if (const Declaration *target = lookup(name->name.name, name->name.location, userIndex)) {
        if (std::holds_alternative<ast::CallDecl>(target->statement->node))
          diags_
              .error(name->name.location, "'" + name->name.name +
                                              "' is a call, not a value; apply it to its inputs: " +
                                              name->name.name + "(...)")
              .attachNote(target->name->location, "call declared here");
        else
          name->target = target->statement;
      }
    } else if (auto *invoke = std::get_if<ast::Invoke>(&expr.node)) {
      resolveCallee(*invoke, userIndex);
    }
    ast::forEachChild(expr, [&](ast::Expr &child) { resolveExpr(child, userIndex); });
  }

  /// A callee without a dot may be a declared Call; anything else is left to the catalog.
  void resolveCallee(ast::Invoke &invoke, size_t userIndex) {
    const std::string &callee = invoke.use.op.text;
    if (callee.find('.') != std::string::npos)
      return;
    auto found = declarations_.find(callee);
    if (found == declarations_.end())
      return;
    if (!std::holds_alternative<ast::CallDecl>(found->second.statement->node)) {
      invoke.calleeReported = true;
      diags_
          .error(invoke.use.op.location, "'" + callee + "' is a " +
                                             describeDeclaration(*found->second.statement) +
                                             ", not a call")
          .attachNote(found->second.name->location, "'" + callee + "' is declared here");
      return;
    }
    if (lookup(callee, invoke.use.op.location, userIndex))
      invoke.call = found->second.statement;
    else
      invoke.calleeReported = true;
  }

  /// The declaration `name` refers to from statement `userIndex`, or null after reporting why
  /// there is none usable.
  const Declaration *lookup(const std::string &name, SourceLocation at, size_t userIndex) {
    auto found = declarations_.find(name);
    if (found == declarations_.end()) {
      auto error = diags_.error(at, "use of undefined name '" + name + "'");
      std::string suggestion = suggest(name, userIndex);
      if (!suggestion.empty())
        error.attachNote(declarations_[suggestion].name->location,
                         "did you mean '" + suggestion + "'?");
      return nullptr;
    }
    const Declaration &target = found->second;
    if (target.index < userIndex)
      return &target;
    std::vector<size_t> cycle = findPath(target.index, userIndex);
    if (!cycle.empty()) {
      reportCycle(cycle, at);
      return nullptr;
    }
    diags_.error(at, "'" + name + "' is used before its definition")
        .attachNote(target.name->location, "'" + name + "' is defined here");
    return nullptr;
  }

  /// Statement indices from `from` to `to` following name uses, or empty if `to` is not
  /// reachable. The path starts at `from` and ends at `to`.
  std::vector<size_t> findPath(size_t from, size_t to) {
    std::map<size_t, size_t> parent;
    std::vector<size_t> frontier = {from};
    parent[from] = from;
    while (!frontier.empty()) {
      size_t current = frontier.back();
      frontier.pop_back();
      if (current == to) {
        std::vector<size_t> path = {to};
        while (path.back() != from)
          path.push_back(parent[path.back()]);
        return {path.rbegin(), path.rend()};
      }
      for (const NameUse &use : uses_[file_.statements[current].get()]) {
        auto next = declarations_.find(use.name);
        if (next != declarations_.end() && !parent.count(next->second.index)) {
          parent[next->second.index] = current;
          frontier.push_back(next->second.index);
        }
      }
    }
    return {};
  }

  /// `path` runs from the used binding back to the user; the use at `at` closes the cycle.
  void reportCycle(const std::vector<size_t> &path, SourceLocation at) {
    std::set<size_t> members(path.begin(), path.end());
    if (!reportedCycles_.insert(members).second)
      return;
    size_t user = path.back();
    std::string chain = nameOf(user);
    for (size_t index : path)
      chain += " -> " + nameOf(index);
    auto error = diags_.error(at, "cycle between bindings: " + chain);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const std::string next = nameOf(path[i + 1]);
      for (const NameUse &use : uses_[file_.statements[path[i]].get()])
        if (use.name == next) {
          error.attachNote(use.location, "'" + nameOf(path[i]) + "' uses '" + next + "' here");
          break;
        }
    }
  }

  std::string nameOf(size_t index) const {
    const ast::Identifier *name = ast::declaredName(*file_.statements[index]);
    return name ? name->name : "?";
  }

  /// A value declared before `userIndex` whose name is close to `name`.
  std::string suggest(const std::string &name, size_t userIndex) const {
    std::vector<std::string> candidates;
    for (const auto &[candidate, declaration] : declarations_)
      if (declaration.index < userIndex)
        candidates.push_back(candidate);
    return closestSpelling(name, candidates);
  }

  ast::File &file_;
  DiagnosticEngine &diags_;
  std::unordered_map<std::string, Declaration> declarations_;
  std::unordered_map<std::string, SourceLocation> domains_;
  std::unordered_map<const ast::Statement *, std::vector<NameUse>> uses_;
  std::set<std::set<size_t>> reportedCycles_;
};

} // namespace

bool resolveNames(ast::File &file, DiagnosticEngine &diags) {
  return NameResolver(file, diags).run();
}

} // namespace orch::frontend
