// Loads and checks one .orch file, printing diagnostics to stderr (or verifying them against
// the file's annotations) and the requested output to stdout.
#include "CompileCommand.h"

#include "orch/frontend/AstPrinter.h"
#include "orch/frontend/Frontend.h"
#include "orch/frontend/Parser.h"
#include "orch/ir/DiagnosticPrinter.h"
#include "orch/ir/DiagnosticVerifier.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace orch {

int runCompile(const CompileOptions &options) {
  llvm::SourceMgr sources;
  DiagnosticPrintOptions printOptions;
  printOptions.programName = "orchc";
  printOptions.colors = llvm::WithColor::defaultAutoDetectFunction()(llvm::errs());
  std::unique_ptr<DiagnosticVerifier> verifier;
  DiagnosticEngine diags([&](const Diagnostic &diagnostic) {
    if (verifier)
      verifier->record(diagnostic);
    else
      printDiagnostic(sources, diagnostic, llvm::errs(), printOptions);
  });

  std::optional<uint32_t> buffer = loadSourceFile(sources, options.inputPath, diags);
  if (!buffer)
    return kCompileUserError;
  if (options.verifyDiagnostics)
    verifier = std::make_unique<DiagnosticVerifier>(sources, *buffer);

  FrontendOptions frontendOptions;
  frontendOptions.overrides = options.overrides;
  FrontendResult result = runFrontend(sources, *buffer, frontendOptions, diags);

  if (verifier) {
    std::vector<std::string> problems = verifier->problems();
    for (const std::string &problem : problems)
      llvm::errs() << "orchc: verify: " << problem << "\n";
    return problems.empty() ? kCompileOk : kCompileUserError;
  }
  if (!result.ok)
    return kCompileUserError;
  if (options.emit == EmitKind::Ast)
    printAst(*result.file, llvm::outs());
  return kCompileOk;
}

} // namespace orch
