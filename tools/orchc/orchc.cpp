// orchc: the Orch compiler. Parses flags and hands over to runCompile.
#include "CompileCommand.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::OptionCategory orchcCategory("orchc options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required, cl::desc("<file.orch>"),
                                      cl::cat(orchcCategory));
static cl::opt<bool> checkOnly("check", cl::desc("Report diagnostics only; write nothing"),
                               cl::cat(orchcCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(orchcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &out) { out << "orchc " ORCH_VERSION "\n"; });
  cl::ParseCommandLineOptions(argc, argv,
                              "orchc: checks .orch pipelines and compiles them to plans\n");
  return orch::runCompile(orch::CompileOptions{inputPath, checkOnly});
}
