// Signals, self-location, restart and the standard registry for Orch's processes.
#include "ProcessControl.h"

#include "orch/runtime/operators/TestOperators.h"
#include "orch/runtime/outputs/OutputFiles.h"
#include "orch/stdlib/StandardOperators.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

namespace orch::tools {

std::atomic<bool> stopRequested{false};

namespace {

int secondSignalExitCode = 130;

void requestStop(int) {
  if (stopRequested.exchange(true))
    ::_exit(secondSignalExitCode);
}

} // namespace

void installStopHandlers(int exitCode) {
  secondSignalExitCode = exitCode;
  struct sigaction action = {};
  action.sa_handler = requestStop;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

std::string thisProgram(const std::string &fallback) {
  char path[4096];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, size_t(length)) : fallback;
}

std::string siblingProgram(const std::string &name) {
  const std::string self = thisProgram("");
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? name : self.substr(0, slash + 1) + name;
}

void logLine(const std::string &line) {
  // One write per line: lines come from several threads (operator processes' output) and
  // several processes (local workers) at once, and must not interleave.
  runtime::writeAll(STDERR_FILENO, "orch: " + line + "\n");
}

void raiseFileDescriptorLimit(uint64_t ceiling) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  const rlim_t wanted = std::min<rlim_t>(limit.rlim_max, rlim_t(ceiling));
  if (limit.rlim_cur >= wanted)
    return;
  limit.rlim_cur = wanted;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

void restartThisProcess() {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> arguments;
  for (std::string argument; std::getline(cmdline, argument, '\0');)
    arguments.push_back(argument);
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  logLine(std::string("cannot restart: ") + std::strerror(errno));
}

runtime::OperatorRegistry standardRegistry() {
  runtime::OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  runtime::registerTestOperators(registry, std::make_shared<runtime::TestOperatorLog>(false));
  return registry;
}

std::vector<int64_t> allDevices(int64_t count) {
  std::vector<int64_t> devices;
  for (int64_t device = 0; device < count; ++device)
    devices.push_back(device);
  return devices;
}

} // namespace orch::tools
