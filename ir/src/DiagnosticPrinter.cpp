// Renders diagnostics through llvm::SourceMgr, which prints the source line and the caret.
#include "orch/ir/DiagnosticPrinter.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <string>

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

bool isControl(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte < 0x20 && c != '\t') || byte == 0x7f;
}

/// `text` with control characters (a NUL byte, an escape) written as `\xNN`, so that a message
/// never carries them to the terminal.
std::string escapeControls(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (!isControl(c)) {
      out += c;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
    out += escaped;
  }
  return out;
}

void printOne(llvm::SourceMgr &sources, const Diagnostic &diagnostic, llvm::raw_ostream &out,
              const DiagnosticPrintOptions &options) {
  const SourceLocation &location = diagnostic.location;
  if (!location.isKnown() || location.bufferId > sources.getNumBuffers()) {
    if (!options.programName.empty())
      out << options.programName << ": ";
    out << severityName(diagnostic.severity) << ": " << escapeControls(diagnostic.message) << "\n";
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
  // The quoted source line keeps its columns (for the caret): a control character in it is
  // shown as '?'.
  const llvm::SMDiagnostic full = sources.GetMessage(
      start, toDiagKind(diagnostic.severity), escapeControls(diagnostic.message), ranges, {});
  std::string line = full.getLineContents().str();
  std::replace_if(line.begin(), line.end(), isControl, '?');
  llvm::SMDiagnostic(sources, full.getLoc(), full.getFilename(), full.getLineNo(),
                     full.getColumnNo(), full.getKind(), full.getMessage(), line, full.getRanges(),
                     full.getFixIts())
      .print(nullptr, out, options.colors);
}

} // namespace

void printDiagnostic(llvm::SourceMgr &sources, const Diagnostic &diagnostic, llvm::raw_ostream &out,
                     const DiagnosticPrintOptions &options) {
  printOne(sources, diagnostic, out, options);
  for (const Diagnostic &note : diagnostic.notes)
    printOne(sources, note, out, options);
}

} // namespace orch
