// orch: runs compiled pipelines. Subcommands (run, worker, report) arrive with the runtime;
// this main parses flags only.
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory orchCategory("orch options");

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(orchCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orch " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "orch: runs Orch pipelines with lineage-aware batching\n");
  cl::PrintHelpMessage();
  return 1;
}
