// A pass over the IR and the manager that runs a pipeline of them. A pass reports problems
// through the DiagnosticEngine; the manager stops after the first pass that reported an error,
// since later passes rely on what earlier ones established.
#pragma once

#include "orch/ir/Diagnostics.h"
#include "orch/ir/Module.h"

#include <memory>
#include <string_view>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace orch::passes {

class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual void run(ir::Module &module, DiagnosticEngine &diags) = 0;
};

struct PassManagerOptions {
  /// Print the IR after every pass here (`--print-after-all`).
  llvm::raw_ostream *printAfterAll = nullptr;
  /// Print each pass's wall time here at the end (`--time-passes`).
  llvm::raw_ostream *timePasses = nullptr;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {}) : options_(options) {}

  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }

  /// Runs the passes in order; returns false if one reported an error (the rest are skipped).
  bool run(ir::Module &module, DiagnosticEngine &diags);

private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace orch::passes
