// Prints diagnostics the way compilers do: `file:line:col: error: message`, the source line,
// and a caret (or an underline for a longer range), followed by any notes.
#pragma once

#include "orch/ir/Diagnostics.h"

#include <string>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace orch {

struct DiagnosticPrintOptions {
  bool colors = false;
  /// Prefix for diagnostics without a source location, e.g. "orchc: error: cannot read ...".
  std::string programName;
};

void printDiagnostic(llvm::SourceMgr &sources, const Diagnostic &diagnostic, llvm::raw_ostream &out,
                     const DiagnosticPrintOptions &options = {});

} // namespace orch
