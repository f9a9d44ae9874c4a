// Writes failed source rows with their causes as JSON lines.
#include "ErrorsJournal.h"

#include "orch/runtime/values/Utf8.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace orch {
namespace {

runtime::Value pathValue(const std::vector<uint32_t> &path) {
  runtime::ValueList ordinals;
  for (uint32_t ordinal : path)
    ordinals.push_back(runtime::Value::integer(ordinal));
  return runtime::Value::list(std::move(ordinals));
}

} // namespace

void ErrorsJournal::record(const runtime::RootResult &root,
                           const std::function<void()> &keepAlive) {
  keepAlive_ = keepAlive ? &keepAlive : nullptr;
  recordRoot(root);
  keepAlive_ = nullptr;
}

void ErrorsJournal::recordRoot(const runtime::RootResult &root) {
  if (root.status != runtime::RootStatus::Failed) {
    recordSkippedMembers(root);
    recordDuplicates(root);
    return;
  }
  using runtime::Value;
  runtime::RecordFields fields{{"source", Value::string(plan_.sources[root.source].op)},
                               {"row", Value::integer(static_cast<int64_t>(root.sourceRow))}};
  // A row the run's stop left unfinished is listed, but as what it is: a resumed run runs it.
  if (runtime::stoppedByTheRun(root))
    fields.emplace_back("status", Value::string("unfinished"));
  // One cause at the top and in rows[0] (runtime::rootCause).
  if (const runtime::Failure *failure = runtime::rootCause(root)) {
    runtime::RecordFields cause = describe(*failure);
    fields.insert(fields.end(), cause.begin(), cause.end());
  }
  runtime::ValueList failedRows;
  for (const runtime::SinkRow &row : root.rows) {
    if (row.status != runtime::RowStatus::Failed)
      continue;
    runtime::RecordFields entry{{"sink", Value::integer(row.sink)},
                                {"row_path", pathValue(row.path)}};
    if (row.failure < root.failures.size()) {
      runtime::RecordFields cause = describe(root.failures[row.failure]);
      entry.insert(entry.end(), cause.begin(), cause.end());
    }
    failedRows.push_back(Value::record(std::move(entry)));
  }
  fields.emplace_back("failures", Value::integer(static_cast<int64_t>(root.failures.size())));
  fields.emplace_back("failed_rows", Value::integer(static_cast<int64_t>(failedRows.size())));
  fields.emplace_back("rows", Value::list(std::move(failedRows)));
  write(Value::record(std::move(fields)));
}

void ErrorsJournal::recordSkippedMembers(const runtime::RootResult &root) {
  using runtime::Value;
  for (const runtime::SkippedMember &skipped : root.skippedMembers) {
    runtime::RecordFields fields{{"source", Value::string(plan_.sources[root.source].op)},
                                 {"row", Value::integer(static_cast<int64_t>(root.sourceRow))},
                                 {"status", Value::string(runtime::rootStatusName(root.status))},
                                 {"kind", Value::string("skipped-member")},
                                 {"path", pathValue(skipped.path)}};
    if (skipped.cause < root.failures.size())
      fields.emplace_back("cause", Value::record(describe(root.failures[skipped.cause])));
    write(Value::record(std::move(fields)));
  }
}

void ErrorsJournal::recordDuplicates(const runtime::RootResult &root) {
  using runtime::Value;
  for (const runtime::DuplicateRow &duplicate : root.duplicates) {
    runtime::RecordFields survivor{
        {"row", Value::integer(static_cast<int64_t>(duplicate.survivorRow))},
        {"path", pathValue(duplicate.survivorPath)}};
    write(Value::record({{"source", Value::string(plan_.sources[root.source].op)},
                         {"row", Value::integer(static_cast<int64_t>(root.sourceRow))},
                         {"status", Value::string(runtime::rootStatusName(root.status))},
                         {"kind", Value::string("duplicate")},
                         {"dedup", Value::string(duplicate.dedup)},
                         {"path", pathValue(duplicate.path)},
                         {"duplicate_of", Value::record(std::move(survivor))},
                         {"similarity", Value::real(duplicate.similarity)}}));
  }
}

void ErrorsJournal::write(const runtime::Value &entry) {
  // Messages carry what came from outside (a file's name, a server's reply): the journal stays
  // UTF-8 whatever their bytes.
  const std::string line = runtime::validUtf8(entry.str()) + '\n';
  // One write per line, so that a run killed meanwhile leaves whole lines.
  if (fd_ >= 0 && writeError_.empty()) {
    if (writeLine(line))
      size_ += line.size();
    else
      writeError_ = std::strerror(errno);
  }
  if (++recorded_ % kLinesBetweenKeepAlives == 0 && keepAlive_)
    (*keepAlive_)();
}

bool ErrorsJournal::writeLine(const std::string &line) {
  if (!asItIs_)
    return runtime::writeAll(fd_, line);
  // A pipe whose reader went away fails the write (EPIPE) instead of ending the run with
  // SIGPIPE: the signal is held back meanwhile, and one it raised is taken.
  sigset_t pipeSignal, before;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipeSignal, &before);
  const bool written = runtime::writeAll(fd_, line);
  const int writeErrno = errno;
  if (!written && writeErrno == EPIPE && !sigismember(&before, SIGPIPE)) {
    const timespec now{0, 0};
    (void)::sigtimedwait(&pipeSignal, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  errno = writeErrno;
  return written;
}

ErrorsJournal::~ErrorsJournal() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool ErrorsJournal::open(uint64_t keep, bool keepSkippedMembers, std::string &error) {
  // The process's own streams, a device (/dev/null) or a named pipe are written as they are:
  // never cut, never read back.
  struct stat existing {};
  const bool exists = ::stat(path_.c_str(), &existing) == 0;
  asItIs_ = runtime::isStandardStream(path_) || (exists && !S_ISREG(existing.st_mode));
  // Read before the file is cut: the lines a retry keeps (rows that were written or dropped).
  std::string kept;
  if (keepSkippedMembers && keep == 0 && !asItIs_) {
    std::ifstream previous(path_);
    for (std::string line; std::getline(previous, line);)
      if (line.find("\"kind\": \"skipped-member\"") != std::string::npos ||
          line.find("\"kind\": \"duplicate\"") != std::string::npos)
        kept += line + '\n';
  }
  // Never written through a link planted at its name; the process's own streams are written
  // through its descriptor (its offset shared with the summary's lines, not overwriting them).
  // A file is opened to read too: a resume finds where its whole lines end. A named pipe is opened
  // without waiting: one that no process reads is refused, not waited on before the first row.
  const bool pipe = exists && S_ISFIFO(existing.st_mode);
  fd_ = runtime::isStandardStream(path_)
            ? runtime::duplicateStandardStream(path_)
            : ::open(path_.c_str(),
                     (asItIs_ ? O_WRONLY : O_RDWR) | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
                         (pipe ? O_NONBLOCK : 0),
                     0644);
  if (fd_ < 0 && errno == EACCES && !asItIs_) // one it may write but not read
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0 && errno == ELOOP) {
    error = "the errors journal \"" + path_ +
            "\" is a symbolic link; orch writes no output through a link: name the file it "
            "points to with --errors, or remove the link";
    return false;
  }
  if (fd_ < 0 && pipe && errno == ENXIO) {
    error = "the errors journal \"" + path_ +
            "\" is a named pipe that no process reads: start its reader first";
    return false;
  }
  if (fd_ >= 0 && pipe)
    (void)::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  if (fd_ >= 0 && asItIs_)
    keep = 0;
  // A resumed run keeps the lines its journal counts, as far as the file holds whole ones
  // (another file may have taken its place meanwhile: it is never padded, nor cut mid-line).
  if (fd_ >= 0 && keep > 0)
    keep = wholeLinesUpTo(keep);
  if (fd_ < 0 || (!asItIs_ && (::ftruncate(fd_, off_t(keep)) != 0 ||
                               ::lseek(fd_, off_t(keep), SEEK_SET) < 0))) {
    error = "cannot write the errors journal \"" + path_ + "\": " + std::strerror(errno);
    return false;
  }
  size_ = keep;
  if (!kept.empty()) {
    if (!runtime::writeAll(fd_, kept)) {
      error = "cannot write the errors journal \"" + path_ + "\": " + std::strerror(errno);
      return false;
    }
    size_ += kept.size();
  }
  return true;
}

uint64_t ErrorsJournal::wholeLinesUpTo(uint64_t keep) const {
  struct stat file {};
  if (::fstat(fd_, &file) != 0)
    return 0;
  keep = std::min<uint64_t>(keep, uint64_t(file.st_size));
  // Back to the end of the last line that ends within `keep`.
  char chunk[4096];
  while (keep > 0) {
    const uint64_t from = keep - std::min<uint64_t>(keep, sizeof chunk);
    const ssize_t got = ::pread(fd_, chunk, size_t(keep - from), off_t(from));
    if (got != ssize_t(keep - from))
      return 0;
    for (ssize_t i = got; i > 0; --i)
      if (chunk[i - 1] == '\n')
        return from + uint64_t(i);
    keep = from;
  }
  return 0;
}

runtime::RecordFields ErrorsJournal::describe(const runtime::Failure &failure) {
  using runtime::Value;
  return {{"kind", Value::string(runtime::failureKindName(failure.kind))},
          {"call", Value::string(failure.call)},
          {"path", pathValue(failure.path)},
          {"message", Value::string(failure.message)}};
}

} // namespace orch
