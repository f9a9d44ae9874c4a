// Delivery and counting of diagnostics.
#include "orch/ir/Diagnostics.h"

namespace orch {

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

InFlightDiagnostic::~InFlightDiagnostic() {
  if (engine_)
    engine_->deliver(diagnostic_);
}

InFlightDiagnostic &InFlightDiagnostic::attachNote(SourceLocation location, std::string message) {
  diagnostic_.notes.push_back(
      Diagnostic{DiagnosticSeverity::Note, location, std::move(message), {}});
  return *this;
}

void DiagnosticEngine::deliver(const Diagnostic &diagnostic) {
  if (diagnostic.severity == DiagnosticSeverity::Error)
    ++errorCount_;
  else if (diagnostic.severity == DiagnosticSeverity::Warning)
    ++warningCount_;
  if (handler_)
    handler_(diagnostic);
}

} // namespace orch
