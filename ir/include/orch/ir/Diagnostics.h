// Diagnostics shared by every compiler stage: errors, warnings and notes with source
// locations. Stages report through a DiagnosticEngine; a handler decides where they go
// (the terminal printer, a test's expectation checker, the language server).
#pragma once

#include "orch/ir/SourceLocation.h"

#include <functional>
#include <string>
#include <vector>

namespace orch {

enum class DiagnosticSeverity { Error, Warning, Note };

/// "error", "warning" or "note", as diagnostics print it.
const char *severityName(DiagnosticSeverity severity);

struct Diagnostic {
  DiagnosticSeverity severity = DiagnosticSeverity::Error;
  SourceLocation location;
  std::string message;
  /// Related locations, e.g. the earlier binding of a name bound twice.
  std::vector<Diagnostic> notes;
};

class DiagnosticEngine;

/// A diagnostic being built; it is delivered to the engine's handler when it goes out of scope,
/// so notes can be attached first: `diags.error(loc, "...").attachNote(other, "...")`.
class InFlightDiagnostic {
public:
  InFlightDiagnostic(DiagnosticEngine &engine, Diagnostic diagnostic)
      : engine_(&engine), diagnostic_(std::move(diagnostic)) {}
  InFlightDiagnostic(InFlightDiagnostic &&other) noexcept
      : engine_(other.engine_), diagnostic_(std::move(other.diagnostic_)) {
    other.engine_ = nullptr;
  }
  InFlightDiagnostic(const InFlightDiagnostic &) = delete;
  InFlightDiagnostic &operator=(const InFlightDiagnostic &) = delete;
  InFlightDiagnostic &operator=(InFlightDiagnostic &&) = delete;
  ~InFlightDiagnostic();

  InFlightDiagnostic &attachNote(SourceLocation location, std::string message);

private:
  DiagnosticEngine *engine_;
  Diagnostic diagnostic_;
};

class DiagnosticEngine {
public:
  using Handler = std::function<void(const Diagnostic &)>;

  explicit DiagnosticEngine(Handler handler) : handler_(std::move(handler)) {}

  InFlightDiagnostic error(SourceLocation location, std::string message) {
    return report(DiagnosticSeverity::Error, location, std::move(message));
  }
  /// A bug in Orch rather than in the input: reported as an error, counted apart so tools can
  /// exit differently.
  InFlightDiagnostic internalError(SourceLocation location, std::string message) {
    ++internalErrorCount_;
    return error(location, "internal compiler error: " + std::move(message));
  }
  InFlightDiagnostic warning(SourceLocation location, std::string message) {
    return report(DiagnosticSeverity::Warning, location, std::move(message));
  }
  InFlightDiagnostic report(DiagnosticSeverity severity, SourceLocation location,
                            std::string message) {
    return InFlightDiagnostic(*this, Diagnostic{severity, location, std::move(message), {}});
  }

  /// Delivers an already built diagnostic (e.g. one a stage buffered to sort).
  void emit(const Diagnostic &diagnostic) { deliver(diagnostic); }

  unsigned errorCount() const { return errorCount_; }
  unsigned warningCount() const { return warningCount_; }
  unsigned internalErrorCount() const { return internalErrorCount_; }
  bool hadErrors() const { return errorCount_ != 0; }

private:
  friend class InFlightDiagnostic;
  void deliver(const Diagnostic &diagnostic);

  Handler handler_;
  unsigned errorCount_ = 0;
  unsigned warningCount_ = 0;
  unsigned internalErrorCount_ = 0;
};

} // namespace orch
