// The standard library's groups of operators, each registered by its own file;
// StandardOperators.cpp registers them all.
#pragma once

#include "orch/runtime/operators/Operator.h"

namespace orch::stdlib {

void registerFileSources(runtime::OperatorRegistry &registry);
void registerFileSinks(runtime::OperatorRegistry &registry);
void registerFileOperator(runtime::OperatorRegistry &registry);
void registerWebDataset(runtime::OperatorRegistry &registry);
void registerImageOperators(runtime::OperatorRegistry &registry);
void registerImageEncodeOperator(runtime::OperatorRegistry &registry);
void registerImageDecodeOperator(runtime::OperatorRegistry &registry);
void registerPdfOperators(runtime::OperatorRegistry &registry);
void registerOcrOperator(runtime::OperatorRegistry &registry);
void registerVideoOperators(runtime::OperatorRegistry &registry);
void registerTextNormalize(runtime::OperatorRegistry &registry);
void registerMinHash(runtime::OperatorRegistry &registry);
void registerLlmOperators(runtime::OperatorRegistry &registry);

} // namespace orch::stdlib
