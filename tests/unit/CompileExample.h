// Test helper: compiles an example (or any .orch text) through the whole compiler to a plan.
#pragma once

#include "orch/driver/CompileDriver.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>
#include <string>

namespace orch::testing {

inline std::string readExample(const std::string &name) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(ORCH_EXAMPLES_DIR) + "/" + name);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// The plan of `text`, or nullopt with the first error message in `error`.
inline std::optional<plan::Plan> compileText(const std::string &text, std::string *error = nullptr,
                                             const std::string &path = "test.orch") {
  llvm::SourceMgr sources;
  std::string firstError;
  DiagnosticEngine diags([&](const Diagnostic &d) {
    if (d.severity == DiagnosticSeverity::Error && firstError.empty())
      firstError = d.message;
  });
  driver::Compilation compiled = orch::driver::compileText(sources, text, path, diags);
  if (error)
    *error = firstError;
  return std::move(compiled.plan);
}

inline std::optional<plan::Plan> compileExample(const std::string &name) {
  return compileText(readExample(name), nullptr, "examples/" + name);
}

} // namespace orch::testing
