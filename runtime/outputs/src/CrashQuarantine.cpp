// The crash quarantine (CrashQuarantine.h). The signal handler does only what is
// async-signal-safe: it reads plain thread-local data, formats into a stack buffer, write(2)s
// and fsync(2)s one line, and raises the signal again with its default action.
#include "orch/runtime/outputs/CrashQuarantine.h"

#include "orch/runtime/engine/RowInProgress.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace orch::runtime {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr size_t kSignalCount = sizeof(kFatalSignals) / sizeof(kFatalSignals[0]);
/// Room for the handler on a thread whose stack overflowed.
constexpr size_t kAlternateStackBytes = size_t(1) << 16;

std::atomic<int> witnessFd{-1};
std::atomic<bool> witnessTaken{false};
struct sigaction previousActions[kSignalCount];
stack_t previousStack;

const char *activityWord(RowActivity activity) {
  switch (activity) {
  case RowActivity::Reading:
    return "reading";
  case RowActivity::Computing:
    return "computing";
  case RowActivity::Writing:
    return "writing";
  case RowActivity::Running:
    return "running";
  case RowActivity::None:
    break;
  }
  return "working";
}

char *appendText(char *at, const char *end, const char *text) {
  while (*text && at < end)
    *at++ = *text++;
  return at;
}

char *appendNumber(char *at, const char *end, uint64_t number) {
  char digits[20];
  size_t count = 0;
  do {
    digits[count++] = char('0' + number % 10);
    number /= 10;
  } while (number > 0);
  while (count > 0 && at < end)
    *at++ = digits[--count];
  return at;
}

void onFatalSignal(int signal) {
  const RowInProgress row = currentRowInProgress;
  const int fd = witnessFd.load();
  if (fd >= 0 && row.activity != RowActivity::None) {
    char line[128];
    const char *end = line + sizeof(line);
    char *at = appendText(line, end, "source ");
    at = appendNumber(at, end, row.source);
    at = appendText(at, end, " row ");
    at = appendNumber(at, end, row.row);
    at = appendText(at, end, " signal ");
    at = appendNumber(at, end, uint64_t(signal));
    at = appendText(at, end, " while ");
    at = appendText(at, end, activityWord(row.activity));
    at = appendText(at, end, "\n");
    const ssize_t written = ::write(fd, line, size_t(at - line));
    (void)written;
    ::fsync(fd);
  }
  // The action is the default again (SA_RESETHAND): the process dies of the signal, as it would
  // have without the witness.
  ::raise(signal);
}

} // namespace

CrashWitness::CrashWitness(const std::string &path) {
  if (witnessTaken.exchange(true))
    return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    witnessTaken = false;
    return;
  }
  witnessFd = fd;
  alternateStack_ = std::malloc(kAlternateStackBytes);
  stack_t stack{};
  stack.ss_sp = alternateStack_;
  stack.ss_size = kAlternateStackBytes;
  if (!alternateStack_ || ::sigaltstack(&stack, &previousStack) != 0) {
    std::free(alternateStack_);
    alternateStack_ = nullptr;
  }
  struct sigaction action {};
  action.sa_handler = onFatalSignal;
  action.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < kSignalCount; ++i)
    ::sigaction(kFatalSignals[i], &action, &previousActions[i]);
  watching_ = true;
}

CrashWitness::~CrashWitness() {
  if (!watching_)
    return;
  for (size_t i = 0; i < kSignalCount; ++i)
    ::sigaction(kFatalSignals[i], &previousActions[i], nullptr);
  if (alternateStack_) {
    ::sigaltstack(&previousStack, nullptr);
    std::free(alternateStack_);
  }
  ::close(witnessFd.exchange(-1));
  witnessTaken = false;
}

std::vector<CrashedRow> readCrashedRows(const std::string &path) {
  std::vector<CrashedRow> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    CrashedRow row;
    unsigned source = 0;
    unsigned long long index = 0;
    char activity[16] = {};
    if (std::sscanf(line.c_str(), "source %u row %llu signal %d while %15s", &source, &index,
                    &row.signal, activity) != 4)
      continue;
    row.source = source;
    row.row = index;
    row.activity = activity;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string crashedRowMessage(const CrashedRow &row) {
  const char *name = sigabbrev_np(row.signal);
  const std::string what = row.activity == "running"   ? "while an operator ran on it"
                           : row.activity == "working" ? "while the run worked on it"
                                                       : "while " + row.activity + " it";
  return "crashed an earlier run (signal " + std::to_string(row.signal) +
         (name ? std::string(", SIG") + name : std::string()) + ", " + what +
         "); it is not run again: --retry-failed runs it";
}

} // namespace orch::runtime
