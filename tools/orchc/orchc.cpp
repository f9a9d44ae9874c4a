// orchc: the Orch compiler. Parses flags and hands over to runCompile.
#include "CompileCommand.h"
#include "FormatCommand.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory orchcCategory("orchc options");

static cl::SubCommand fmt("fmt", "Rewrite .orch files in the canonical layout");
static cl::list<std::string> fmtPaths(cl::Positional, cl::OneOrMore, cl::desc("<file.orch|-> ..."),
                                      cl::sub(fmt), cl::cat(orchcCategory));
static cl::opt<bool> fmtCheck("check",
                              cl::desc("Write nothing; list files not formatted and exit 1"),
                              cl::sub(fmt), cl::cat(orchcCategory));
static cl::opt<std::string> inputPath(cl::Positional, cl::Required, cl::desc("<file.orch>"),
                                      cl::cat(orchcCategory));
static cl::opt<bool> checkOnly("check", cl::desc("Report diagnostics only; write nothing"),
                               cl::cat(orchcCategory));
static cl::opt<orch::EmitKind>
    emit("emit", cl::desc("What to print on standard output"), cl::init(orch::EmitKind::Nothing),
         cl::values(clEnumValN(orch::EmitKind::Ast, "ast", "the typed AST"),
                    clEnumValN(orch::EmitKind::Ir, "ir", "the domain IR after the checking passes"),
                    clEnumValN(orch::EmitKind::PlanText, "plan-text", "the plan, readably"),
                    clEnumValN(orch::EmitKind::Dot, "dot",
                               "the dataflow as Graphviz, domains as clusters")),
         cl::cat(orchcCategory));
static cl::list<std::string> setParams("set", cl::value_desc("NAME=VALUE"),
                                       cl::desc("Override the value of a param"),
                                       cl::cat(orchcCategory));
static cl::opt<std::string> outputPath("o", cl::value_desc("FILE.plan"),
                                       cl::desc("Write the compiled plan here"),
                                       cl::cat(orchcCategory));
static cl::opt<bool> printAfterAll("print-after-all",
                                   cl::desc("Print the IR after every pass (to stderr)"),
                                   cl::cat(orchcCategory));
static cl::opt<bool> timePasses("time-passes",
                                cl::desc("Print how long each pass took (to stderr)"),
                                cl::cat(orchcCategory));
static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check diagnostics against expected-error/warning/note annotations in the file"),
    cl::cat(orchcCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(orchcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orchc " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(
      argc, argv,
      "orchc: checks .orch pipelines and compiles them to plans; `orchc fmt` formats them\n");

  if (fmt)
    return orch::runFormat(orch::FormatOptions{{fmtPaths.begin(), fmtPaths.end()}, fmtCheck});

  orch::CompileOptions options;
  options.inputPath = inputPath;
  options.emit = checkOnly ? orch::EmitKind::Nothing : emit.getValue();
  options.verifyDiagnostics = verifyDiagnostics;
  options.outputPath = checkOnly ? std::string() : outputPath.getValue();
  options.printAfterAll = printAfterAll;
  options.timePasses = timePasses;
  for (const std::string &assignment : setParams) {
    std::optional<orch::frontend::ParamOverride> override =
        orch::frontend::parseParamOverride(assignment);
    if (!override) {
      llvm::errs() << "orchc: error: --set expects NAME=VALUE, got '" << assignment << "'\n";
      return orch::kCompileUserError;
    }
    options.overrides.push_back(*override);
  }
  return orch::runCompile(options);
}
