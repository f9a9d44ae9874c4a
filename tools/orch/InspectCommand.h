// `orch inspect FILE.plan`: load a plan the way the runtime does (fully validated) and print it.
#pragma once

#include <string>

namespace orch {

int runInspect(const std::string &planPath);

} // namespace orch
