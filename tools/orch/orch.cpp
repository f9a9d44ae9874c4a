// orch: runs compiled pipelines. Parses flags and hands over to the subcommand.
#include "InspectCommand.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory orchCategory("orch options");
static cl::SubCommand inspect("inspect", "Validate a compiled plan and print it");
static cl::opt<std::string> inspectPath(cl::Positional, cl::Required, cl::desc("<file.plan>"),
                                        cl::sub(inspect), cl::cat(orchCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(orchCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orch " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "orch: runs Orch pipelines with lineage-aware batching\n");
  if (inspect)
    return orch::runInspect(inspectPath);
  cl::PrintHelpMessage();
  return 1;
}
