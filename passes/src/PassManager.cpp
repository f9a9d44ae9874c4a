// Runs passes in order, with IR dumps and timings on request.
#include "orch/passes/Pass.h"

#include "orch/ir/IrPrinter.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace orch::passes {

bool PassManager::run(ir::Module &module, DiagnosticEngine &diags) {
  std::vector<std::pair<std::string_view, double>> timings;
  bool ok = true;
  for (const auto &pass : passes_) {
    unsigned errorsBefore = diags.errorCount();
    auto start = std::chrono::steady_clock::now();
    pass->run(module, diags);
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    timings.emplace_back(pass->name(), elapsed.count());
    if (options_.printAfterAll) {
      *options_.printAfterAll << "// ----- IR after " << pass->name() << " ----- //\n";
      ir::printModule(module, *options_.printAfterAll);
    }
    if (diags.errorCount() != errorsBefore) {
      ok = false;
      break;
    }
  }
  if (options_.timePasses) {
    llvm::raw_ostream &out = *options_.timePasses;
    double total = 0;
    out << "===--- pass execution times ---===\n";
    for (const auto &[name, micros] : timings) {
      out << llvm::format("%12.1f us  ", micros) << name << "\n";
      total += micros;
    }
    out << llvm::format("%12.1f us  ", total) << "total\n";
  }
  return ok;
}

} // namespace orch::passes
