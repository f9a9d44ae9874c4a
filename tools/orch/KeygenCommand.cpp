// Key pair generation for `orch keygen` (KeygenCommand.h).
#include "KeygenCommand.h"

#include "orch/runtime/cluster/CurveKeys.h"

#include "llvm/Support/raw_ostream.h"

#include <exception>

namespace orch {

int runKeygen(const std::string &name, const std::string &directory, bool overwrite) {
  if (!runtime::isValidKeyName(name)) {
    llvm::errs() << "orch keygen: error: '" << name
                 << "' cannot name a key: use 1-64 letters, digits and . _ - @ :\n";
    return 1;
  }
  try {
    const runtime::CurveKeyPair pair = runtime::generateCurveKeyPair(name);
    const std::string base = (directory.empty() ? "" : directory + "/") + name;
    if (std::optional<std::string> problem = runtime::writeKeyFiles(pair, base, overwrite)) {
      llvm::errs() << "orch keygen: error: " << *problem << "\n";
      return 1;
    }
    llvm::outs() << "wrote " << base << ".key (secret; mode 0600) and " << base << ".pub (public)\n"
                 << "public key: " << pair.publicKey << "\n";
  } catch (const std::exception &error) {
    llvm::errs() << "orch keygen: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

} // namespace orch
