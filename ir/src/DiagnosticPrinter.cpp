// Renders diagnostics through llvm::SourceMgr, which prints the source line and the caret.
#include "orch/ir/DiagnosticPrinter.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace orch {
namespace {

llvm::SourceMgr::DiagKind toDiagKind(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return llvm::SourceMgr::DK_Error;
  case DiagnosticSeverity::Warning:
    return llvm::SourceMgr::DK_Warning;
  case DiagnosticSeverity::Note:
    return llvm::SourceMgr::DK_Note;
  }
  return llvm::SourceMgr::DK_Error;
}

void printOne(llvm::SourceMgr &sources, const Diagnostic &diagnostic, llvm::raw_ostream &out,
              const DiagnosticPrintOptions &options) {
  const SourceLocation &location = diagnostic.location;
  if (!location.isKnown() || location.bufferId > sources.getNumBuffers()) {
    if (!options.programName.empty())
      out << options.programName << ": ";
    out << severityName(diagnostic.severity) << ": " << diagnostic.message << "\n";
    return;
  }
  llvm::SMLoc start =
      sources.FindLocForLineAndColumn(location.bufferId, location.line, location.column);
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (start.isValid() && location.length > 1) {
    // Clamp the underline to the end of the buffer.
    const llvm::MemoryBuffer *buffer = sources.getMemoryBuffer(location.bufferId);
    const char *end = std::min(start.getPointer() + location.length, buffer->getBufferEnd());
    ranges.push_back(llvm::SMRange(start, llvm::SMLoc::getFromPointer(end)));
  }
  sources.PrintMessage(out, start, toDiagKind(diagnostic.severity), diagnostic.message, ranges, {},
                       options.colors);
}

} // namespace

void printDiagnostic(llvm::SourceMgr &sources, const Diagnostic &diagnostic, llvm::raw_ostream &out,
                     const DiagnosticPrintOptions &options) {
  printOne(sources, diagnostic, out, options);
  for (const Diagnostic &note : diagnostic.notes)
    printOne(sources, note, out, options);
}

} // namespace orch
