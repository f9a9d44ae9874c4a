// `orch keygen NAME`: writes a CURVE key pair for a coordinator or a worker (NAME.key, secret,
// mode 0600; NAME.pub, the line that goes into an authorized-keys file).
#pragma once

#include <string>

namespace orch {

/// Returns the exit code: 0, or 1 after a message.
int runKeygen(const std::string &name, const std::string &directory, bool overwrite);

} // namespace orch
