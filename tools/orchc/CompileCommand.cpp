// Loads, parses and checks one .orch file, printing diagnostics to stderr.
#include "CompileCommand.h"

#include "orch/frontend/Parser.h"
#include "orch/ir/DiagnosticPrinter.h"

#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace orch {

int runCompile(const CompileOptions &options) {
  llvm::SourceMgr sources;
  DiagnosticPrintOptions printOptions;
  printOptions.programName = "orchc";
  printOptions.colors = llvm::WithColor::defaultAutoDetectFunction()(llvm::errs());
  DiagnosticEngine diags([&](const Diagnostic &diagnostic) {
    printDiagnostic(sources, diagnostic, llvm::errs(), printOptions);
  });

  std::optional<uint32_t> buffer = loadSourceFile(sources, options.inputPath, diags);
  if (!buffer)
    return kCompileUserError;
  if (!parseFile(sources, *buffer, diags))
    return kCompileUserError;
  return diags.hadErrors() ? kCompileUserError : kCompileOk;
}

} // namespace orch
