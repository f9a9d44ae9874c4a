// The textual form of the IR (`orchc --emit=ir`, `--print-after-all`): one line per domain,
// Call, operation and sink, stable across runs.
#pragma once

#include "orch/ir/Module.h"

namespace llvm {
class raw_ostream;
}

namespace orch::ir {

void printModule(const Module &module, llvm::raw_ostream &out);

/// `{batch: 8, replicas: 2}`: the options that differ from their defaults ("" if none).
std::string formatNonDefaultOptions(const plan::CallOptions &options);

} // namespace orch::ir
