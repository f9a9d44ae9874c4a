// `operator NAME(params) -> Result = python(...)` / `= exec(...)`: the program's own operators.
// Each declaration becomes a signature in the file's catalog (so uses are checked like any
// other operator's) and a plan record (docs/python.md) with the script's absolute path and hash.
#include "orch/frontend/Sema.h"

#include "OperatorBinding.h"

#include "orch/plan/Sha256.h"

#include <filesystem>
#include <map>
#include <unistd.h>

namespace orch::frontend {
namespace {

using plan::StaticValue;
using plan::Type;
using plan::TypeKind;

std::string inQuotes(const std::string &text) { return "'" + text + "'"; }

/// Calls of a declared operator batch this many grains unless they set `batch`: a model's
/// per-batch cost (a round trip to its process, a forward pass) should be shared.
constexpr int64_t kDeclaredOperatorBatch = 32;

bool isConstantKind(TypeKind kind) {
  return kind == TypeKind::Bool || kind == TypeKind::Int || kind == TypeKind::Float ||
         kind == TypeKind::String || kind == TypeKind::Duration || kind == TypeKind::Size;
}

bool isPythonIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// The runner arguments of one declaration, by role.
struct RunnerArguments {
  const ast::RunnerArgument *path = nullptr;
  const ast::RunnerArgument *className = nullptr;
  const ast::RunnerArgument *args = nullptr;
};

class OperatorDeclarer {
public:
  OperatorDeclarer(ast::File &file, const plan::OperatorCatalog &base, DiagnosticEngine &diags)
      : file_(file), base_(base), diags_(diags),
        catalog_(std::make_shared<plan::OperatorCatalog>(base)) {}

  bool run() {
    const unsigned errorsBefore = diags_.errorCount();
    for (auto &statement : file_.statements)
      if (auto *declared = std::get_if<ast::OperatorDecl>(&statement->node);
          declared && !statement->broken)
        declare(*declared);
    file_.catalog = catalog_;
    return diags_.errorCount() == errorsBefore;
  }

private:
  void declare(ast::OperatorDecl &decl) {
    const std::string &name = decl.name.text;
    if (name.empty())
      return;
    if (!checkName(decl))
      return;
    plan::OperatorSignature signature;
    signature.name = name;
    signature.kind = plan::OperatorKind::Transform;
    plan::PlanExternalOperator external;
    external.name = name;
    external.line = decl.location.line;
    external.column = decl.location.column;
    bool ok = declareParams(decl, signature, external);
    std::optional<Type> result = resolveTypeExpr(decl.result, diags_);
    ok = ok && result.has_value();
    if (result)
      signature.result = external.result = *result;
    ok = bindRunner(decl, external) && ok;
    if (!ok)
      return;
    signature.gpu = true;
    signature.options = plan::transformOptionNames(true);
    signature.defaultBatch = kDeclaredOperatorBatch;
    signature.doc = describe(external) + ", declared at " + file_.path + ":" +
                    std::to_string(decl.location.line);
    signature.failures = "an item the operator fails (an exception in its place) fails that "
                         "row; an exception for the batch is a batch error (the Call's "
                         "recovery); a crash or hang restarts the process and runs the batch "
                         "again";
    catalog_->add(std::move(signature));
    decl.external = std::move(external);
  }

  static std::string describe(const plan::PlanExternalOperator &external) {
    if (external.runner == "python")
      return "class " + external.className + " of " + external.path + ", in Python";
    return "the executable " + external.path;
  }

  bool checkName(const ast::OperatorDecl &decl) {
    const std::string &name = decl.name.text;
    for (plan::OperatorKind kind :
         {plan::OperatorKind::Source, plan::OperatorKind::Transform, plan::OperatorKind::Sink})
      if (base_.find(kind, name)) {
        diags_.error(decl.name.location, "operator " + inQuotes(name) +
                                             " is already a standard library operator; choose "
                                             "another name (such as " +
                                             inQuotes("my." + name) + ")");
        return false;
      }
    if (isBuiltinFunction(name)) {
      diags_.error(decl.name.location,
                   inQuotes(name) + " is a builtin function; choose another name for the operator");
      return false;
    }
    auto [existing, inserted] = declared_.emplace(name, decl.name.location);
    if (!inserted) {
      diags_.error(decl.name.location, "operator " + inQuotes(name) + " is declared twice")
          .attachNote(existing->second, "first declared here");
      return false;
    }
    return true;
  }

  bool declareParams(const ast::OperatorDecl &decl, plan::OperatorSignature &signature,
                     plan::PlanExternalOperator &external) {
    bool ok = true;
    std::map<std::string, SourceLocation> seen;
    for (const ast::OperatorParamDecl &param : decl.params) {
      if (param.name.name.empty()) {
        ok = false;
        continue;
      }
      if (auto [existing, inserted] = seen.emplace(param.name.name, param.name.location);
          !inserted) {
        diags_
            .error(param.name.location, "parameter " + inQuotes(param.name.name) + " appears twice")
            .attachNote(existing->second, "first given here");
        ok = false;
        continue;
      }
      std::optional<Type> type = resolveTypeExpr(param.type, diags_);
      if (!type) {
        ok = false;
        continue;
      }
      plan::OperatorParam entry{param.name.name,
                                param.constant ? plan::ParamRole::Static : plan::ParamRole::Input,
                                *type,
                                std::nullopt,
                                param.constant ? "a constant, given to the constructor"
                                               : "a dataflow input, batched",
                                false};
      if (param.modifier) {
        if (param.modifier->name != "grouped" || param.constant) {
          diags_.error(param.modifier->location,
                       param.constant ? std::string("a const parameter is one value for the run "
                                                    "already; 'grouped' marks an input")
                                      : "unknown modifier " + inQuotes(param.modifier->name) +
                                            " of a parameter; 'grouped' (an input whose "
                                            "batches hold one value each) is the only one");
          ok = false;
          continue;
        }
        entry.perRow = true;
        entry.doc = "a dataflow input; a batch holds one value of it";
      }
      if (param.constant && !isConstantKind(type->kind())) {
        diags_.error(param.type.location,
                     "a const parameter must be Bool, Int, Float, String, Duration or Size, not " +
                         type->str());
        ok = false;
        continue;
      }
      if (param.defaultValue && !param.constant) {
        diags_.error(param.defaultValue->location,
                     "only a const parameter takes a default (" + inQuotes(param.name.name) +
                         " is an input: each row brings its value); write 'const " +
                         param.name.name + ": ...'");
        ok = false;
        continue;
      }
      if (param.defaultValue)
        if (auto *literal = std::get_if<ast::Literal>(&param.defaultValue->node)) {
          entry.defaultValue = convertConstant(literal->value, *type);
          if (!entry.defaultValue) {
            diags_.error(param.defaultValue->location,
                         "parameter " + inQuotes(param.name.name) + " is " + type->str() +
                             " but its default is " + plan::typeOf(literal->value).str());
            ok = false;
            continue;
          }
        }
      external.params.push_back({entry.name, param.constant, *type});
      signature.params.push_back(std::move(entry));
    }
    return ok;
  }

  /// The runner (`python` or `exec`) and its arguments; resolves and fingerprints the file.
  bool bindRunner(const ast::OperatorDecl &decl, plan::PlanExternalOperator &external) {
    const std::string &runner = decl.runner.name;
    if (runner.empty())
      return false;
    if (runner != "python" && runner != "exec") {
      diags_.error(decl.runner.location, "unknown runner " + inQuotes(runner) +
                                             didYouMean(runner, {"python", "exec"}) +
                                             " (an operator runs with python(...) or exec(...))");
      return false;
    }
    external.runner = runner;
    const bool python = runner == "python";
    const std::string usage = python ? "python(\"models/quality.py\", class: \"Scorer\")"
                                     : "exec(\"bin/scorer\", args: [\"--fast\"])";
    RunnerArguments found;
    bool ok = true;
    for (const ast::RunnerArgument &argument : decl.arguments) {
      const ast::RunnerArgument **slot = nullptr;
      if (!argument.name) {
        if (found.path || found.className || found.args) {
          diags_.error(argument.location, "the path comes first, as in " + usage);
          ok = false;
          continue;
        }
        slot = &found.path;
      } else if (python && argument.name->name == "class") {
        slot = &found.className;
      } else if (!python && argument.name->name == "args") {
        slot = &found.args;
      } else {
        diags_.error(argument.name->location,
                     "unknown argument " + inQuotes(argument.name->name) + " of " + runner +
                         "(...)" + didYouMean(argument.name->name, {python ? "class" : "args"}) +
                         " (" + runner + " takes a path" +
                         (python ? " and a class" : " and optional args") + ", as in " + usage +
                         ")");
        ok = false;
        continue;
      }
      if (*slot) {
        diags_.error(argument.location, "this argument is given twice");
        ok = false;
        continue;
      }
      *slot = &argument;
    }
    if (!ok)
      return false;
    if (!found.path) {
      diags_.error(decl.runner.location, runner + "(...) needs a path, as in " + usage);
      return false;
    }
    std::optional<std::string> path = singleString(*found.path, "the path");
    if (!path)
      return false;
    if (python) {
      if (!found.className) {
        diags_.error(decl.runner.location, "python(...) needs the class to run, as in " + usage);
        return false;
      }
      std::optional<std::string> className = singleString(*found.className, "'class'");
      if (!className)
        return false;
      if (!isPythonIdentifier(*className)) {
        diags_.error(found.className->location,
                     inQuotes(*className) + " is not a Python class name");
        return false;
      }
      external.className = *className;
    }
    if (found.args) {
      if (!found.args->isList) {
        diags_.error(found.args->location, "'args' is a list of strings, as in " + usage);
        return false;
      }
      for (const ast::ExprPtr &value : found.args->values) {
        const auto *literal = std::get_if<ast::Literal>(&value->node);
        const auto *text = literal ? std::get_if<std::string>(&literal->value) : nullptr;
        if (!text) {
          diags_.error(value->location, "'args' is a list of strings");
          return false;
        }
        external.args.push_back(*text);
      }
    }
    return resolveFile(*path, found.path->location, python, external);
  }

  /// The one String literal of `argument`, or nullopt after reporting.
  std::optional<std::string> singleString(const ast::RunnerArgument &argument,
                                          const std::string &what) {
    const ast::Literal *literal = nullptr;
    if (!argument.isList && argument.values.size() == 1 && argument.values.front())
      literal = std::get_if<ast::Literal>(&argument.values.front()->node);
    const auto *text = literal ? std::get_if<std::string>(&literal->value) : nullptr;
    if (!text) {
      // A literal that could not be decoded was reported by the parser.
      if (!argument.isList && argument.values.size() == 1 && !literal)
        return std::nullopt;
      diags_.error(argument.location, what + " is a string");
      return std::nullopt;
    }
    if (text->empty()) {
      diags_.error(argument.location, what + " is empty");
      return std::nullopt;
    }
    return *text;
  }

  /// Resolves `written` against the .orch file's folder, checks the file and records its hash.
  bool resolveFile(const std::string &written, SourceLocation at, bool python,
                   plan::PlanExternalOperator &external) {
    namespace fs = std::filesystem;
    std::error_code error;
    fs::path path(written);
    if (path.is_relative())
      path = fs::path(file_.path).parent_path() / path;
    path = fs::absolute(path, error).lexically_normal();
    const std::string shown =
        inQuotes(written) + (written == path.string() ? "" : " (" + path.string() + ")");
    const std::string what = python ? "script " : "executable ";
    if (!fs::is_regular_file(path, error)) {
      diags_.error(at, "cannot find the " + what + shown +
                           (fs::exists(path, error) ? ": it is not a regular file"
                                                    : ": no such file (paths are relative to "
                                                      "the .orch file)"));
      return false;
    }
    if (!python && ::access(path.c_str(), X_OK) != 0) {
      diags_.error(at, "the executable " + shown + " is not executable (chmod +x)");
      return false;
    }
    std::string readError;
    std::optional<std::string> hash = plan::sha256OfFile(path.string(), readError);
    if (!hash) {
      diags_.error(at, "cannot read the " + what + shown + ": " + readError);
      return false;
    }
    external.path = path.string();
    external.sha256 = *hash;
    return true;
  }

  ast::File &file_;
  const plan::OperatorCatalog &base_;
  DiagnosticEngine &diags_;
  std::shared_ptr<plan::OperatorCatalog> catalog_;
  std::map<std::string, SourceLocation> declared_;
};

} // namespace

bool declareOperators(ast::File &file, const plan::OperatorCatalog &base, DiagnosticEngine &diags) {
  return OperatorDeclarer(file, base, diags).run();
}

} // namespace orch::frontend
