// Parsing of expected-* annotations and matching of diagnostics against them.
#include "orch/ir/DiagnosticVerifier.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdlib>

namespace orch {
namespace {} // namespace

DiagnosticVerifier::DiagnosticVerifier(llvm::SourceMgr &sources, uint32_t bufferId)
    : bufferId_(bufferId),
      fileName_(sources.getMemoryBuffer(bufferId)->getBufferIdentifier().str()) {
  parseAnnotations(sources);
}

void DiagnosticVerifier::parseAnnotations(llvm::SourceMgr &sources) {
  llvm::StringRef text = sources.getMemoryBuffer(bufferId_)->getBuffer();
  uint32_t line = 1;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [current, next] = rest.split('\n');
    rest = next;
    for (size_t at = current.find("expected-"); at != llvm::StringRef::npos;
         at = current.find("expected-", at + 1)) {
      llvm::StringRef annotation = current.substr(at + 9);
      DiagnosticSeverity severity;
      if (annotation.consume_front("error"))
        severity = DiagnosticSeverity::Error;
      else if (annotation.consume_front("warning"))
        severity = DiagnosticSeverity::Warning;
      else if (annotation.consume_front("note"))
        severity = DiagnosticSeverity::Note;
      else
        continue;
      // Only `expected-error {{` or `expected-error@` starts an annotation; other mentions
      // (in prose, in a RUN line's sed script) are text.
      if (!annotation.startswith("@") && !annotation.ltrim().startswith("{{"))
        continue;
      uint32_t target = line;
      if (annotation.consume_front("@")) {
        if (annotation.consume_front("*")) {
          target = 0;
        } else {
          bool below = annotation.consume_front("+");
          bool above = !below && annotation.consume_front("-");
          unsigned amount = 0;
          if (annotation.consumeInteger(10, amount)) {
            problems_.push_back(fileName_ + ":" + std::to_string(line) +
                                ": malformed line in expected-" + severityName(severity));
            continue;
          }
          target = below ? line + amount : above ? line - amount : amount;
        }
      }
      annotation = annotation.ltrim();
      size_t close = annotation.find("}}");
      if (!annotation.consume_front("{{") || close == llvm::StringRef::npos) {
        problems_.push_back(fileName_ + ":" + std::to_string(line) + ": expected-" +
                            severityName(severity) + " needs {{text}}");
        continue;
      }
      expectations_.push_back(
          Expectation{severity, target, annotation.substr(0, close - 2).str(), line});
    }
    ++line;
  }
}

void DiagnosticVerifier::record(const Diagnostic &diagnostic) {
  match(diagnostic);
  for (const Diagnostic &note : diagnostic.notes)
    match(note);
}

void DiagnosticVerifier::match(const Diagnostic &diagnostic) {
  uint32_t line = diagnostic.location.bufferId == bufferId_ ? diagnostic.location.line : 0;
  for (Expectation &expectation : expectations_) {
    if (!expectation.matched && expectation.severity == diagnostic.severity &&
        expectation.line == line &&
        diagnostic.message.find(expectation.text) != std::string::npos) {
      expectation.matched = true;
      return;
    }
  }
  problems_.push_back(fileName_ + ":" + (line ? std::to_string(line) : std::string("*")) +
                      ": unexpected " + severityName(diagnostic.severity) + ": " +
                      diagnostic.message);
}

std::vector<std::string> DiagnosticVerifier::problems() const {
  std::vector<std::string> all = problems_;
  for (const Expectation &expectation : expectations_)
    if (!expectation.matched)
      all.push_back(fileName_ + ":" + std::to_string(expectation.annotationLine) + ": expected " +
                    severityName(expectation.severity) + " not produced: " + expectation.text);
  return all;
}

} // namespace orch
