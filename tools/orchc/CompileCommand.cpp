// Compiles one .orch file: frontend, IR, checking passes, plan. Prints diagnostics to stderr
// (or verifies them against the file's annotations), the requested view to stdout, and writes
// the plan where asked.
#include "CompileCommand.h"

#include "orch/driver/CompileDriver.h"
#include "orch/frontend/AstPrinter.h"
#include "orch/frontend/Parser.h"
#include "orch/ir/DiagnosticPrinter.h"
#include "orch/ir/DiagnosticVerifier.h"
#include "orch/ir/IrPrinter.h"
#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"
#include "orch/plan/PlanPrinters.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <climits>
#include <memory>
#include <sstream>

namespace orch {
namespace {

/// Writes the file next to its final name, then renames it, so no reader sees half a plan.
bool writeAtomically(const std::string &path, const std::string &bytes, DiagnosticEngine &diags) {
  // A new file of a name no one could have planted (created exclusively: a link there is not
  // followed), renamed over the target; short, so that any name the target may have works.
  llvm::SmallString<256> model(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(model, ".orchc-%%%%%%%%.tmp");
  llvm::SmallString<256> temporary;
  int fd = -1;
  std::error_code error =
      llvm::sys::fs::createUniqueFile(model, fd, temporary, llvm::sys::fs::OF_None);
  if (!error) {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << bytes;
    out.close();
    error = out.error();
  }
  if (!error)
    error = llvm::sys::fs::rename(temporary, path);
  if (error) {
    llvm::sys::fs::remove(temporary);
    diags.error({}, "cannot write '" + path + "': " + error.message());
    return false;
  }
  return true;
}

void printView(EmitKind emit, const ir::Module &module, const plan::Plan &plan) {
  std::ostringstream text;
  if (emit == EmitKind::Ir) {
    ir::printModule(module, llvm::outs());
    return;
  }
  if (emit == EmitKind::PlanText)
    plan::printPlanText(plan, text);
  else if (emit == EmitKind::Dot)
    plan::printPlanDot(plan, text);
  llvm::outs() << text.str();
}

int compile(const CompileOptions &options) {
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

  std::optional<uint32_t> buffer = frontend::loadSourceFile(sources, options.inputPath, diags);
  if (!buffer)
    return kCompileUserError;
  if (options.verifyDiagnostics)
    verifier = std::make_unique<DiagnosticVerifier>(sources, *buffer);

  driver::CompileRequest request;
  request.frontend.overrides = options.overrides;
  request.passes.printAfterAll = options.printAfterAll ? &llvm::errs() : nullptr;
  request.passes.timePasses = options.timePasses ? &llvm::errs() : nullptr;
  request.frontendOnly = options.emit == EmitKind::Ast;
  driver::Compilation compiled =
      driver::compileBuffer(sources, *buffer, options.inputPath, diags, request);
  const frontend::FrontendResult &result = compiled.frontend;
  const std::optional<plan::Plan> &plan = compiled.plan;
  const ir::Module &module = compiled.module;

  if (verifier) {
    std::vector<std::string> problems = verifier->problems();
    for (const std::string &problem : problems)
      llvm::errs() << "orchc: verify: " << problem << "\n";
    return problems.empty() ? kCompileOk : kCompileUserError;
  }
  if (diags.internalErrorCount() > 0)
    return kCompileInternalError;
  if (!result.ok)
    return kCompileUserError;
  if (options.emit == EmitKind::Ast) {
    frontend::printAst(*result.file, llvm::outs());
    return kCompileOk;
  }
  if (!plan)
    return kCompileUserError;
  if (options.emit != EmitKind::Nothing)
    printView(options.emit, module, *plan);
  if (options.outputPath == "-") {
    // The plan's bytes to standard output (a pipe): no file beside it for its positions.
    llvm::outs() << plan::encodePlan(*plan);
    llvm::outs().flush();
  } else if (!options.outputPath.empty()) {
    // The positions first: a reader that finds the new plan finds its positions (positions
    // left beside an older plan are ignored, being tied to other bytes).
    const std::string bytes = plan::encodePlan(*plan);
    const std::string positions = plan::positionsPathFor(options.outputPath);
    if (llvm::sys::path::filename(positions).size() > NAME_MAX)
      // A plan name of 246 to 255 bytes: the plan runs the same, its messages name the file.
      llvm::errs() << "orchc: warning: '" << options.outputPath
                   << "' leaves no room for its positions file beside it (a name of at most "
                   << (NAME_MAX - 10) << " bytes does)\n";
    else if (!writeAtomically(positions,
                              plan::encodePlanPositions(
                                  *plan, bytes, sources.getMemoryBuffer(*buffer)->getBuffer()),
                              diags))
      return kCompileUserError;
    if (!writeAtomically(options.outputPath, bytes, diags))
      return kCompileUserError;
  }
  return kCompileOk;
}

} // namespace

int runCompile(const CompileOptions &options) {
  try {
    return compile(options);
  } catch (const std::exception &error) {
    llvm::errs() << "orchc: internal compiler error: " << error.what() << "\n";
    return kCompileInternalError;
  }
}

} // namespace orch
