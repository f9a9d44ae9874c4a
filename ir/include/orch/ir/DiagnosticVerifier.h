// Checks the diagnostics a run produced against annotations in the source, like clang's
// -verify: `// expected-error {{text}}` on the line the diagnostic points at, or
// `expected-warning@+1 {{text}}` (relative line), `@5` (absolute line), `@*` (no location).
// Every diagnostic, notes included, must be expected, and every expectation met.
#pragma once

#include "orch/ir/Diagnostics.h"

#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace orch {

class DiagnosticVerifier {
public:
  DiagnosticVerifier(llvm::SourceMgr &sources, uint32_t bufferId);

  /// The handler to give the DiagnosticEngine.
  void record(const Diagnostic &diagnostic);

  /// What did not match, one line each as `file:line: ...`; empty when everything matched.
  /// Malformed annotations are reported here too.
  std::vector<std::string> problems() const;

private:
  struct Expectation {
    DiagnosticSeverity severity;
    /// 0 for `@*`: a diagnostic without a location.
    uint32_t line;
    std::string text;
    uint32_t annotationLine;
    bool matched = false;
  };

  void parseAnnotations(llvm::SourceMgr &sources);
  void match(const Diagnostic &diagnostic);

  uint32_t bufferId_;
  std::string fileName_;
  std::vector<Expectation> expectations_;
  std::vector<std::string> problems_;
};

} // namespace orch
