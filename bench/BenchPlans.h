// Benchmark helper: compiles .orch text (or an example file) to a plan through the whole
// compiler; an empty plan when it does not compile.
#pragma once

#include "orch/driver/CompileDriver.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

namespace orch::bench {

inline plan::Plan compilePlanText(const std::string &text, const std::string &path) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(nullptr);
  return driver::compileText(sources, text, path, diags).plan.value_or(plan::Plan{});
}

inline plan::Plan compileExamplePlan(const std::string &name) {
  auto file = llvm::MemoryBuffer::getFile(std::string(ORCH_EXAMPLES_DIR) + "/" + name);
  return file ? compilePlanText((*file)->getBuffer().str(), name) : plan::Plan{};
}

} // namespace orch::bench
