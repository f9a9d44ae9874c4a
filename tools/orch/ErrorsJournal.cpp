// Writes failed source rows with their causes as JSON lines.
#include "ErrorsJournal.h"

#include "orch/runtime/values/Utf8.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
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
  if (fd_ >= 0 && runtime::writeAll(fd_, line))
    size_ += line.size();
  if (++recorded_ % kLinesBetweenKeepAlives == 0 && keepAlive_)
    (*keepAlive_)();
}

ErrorsJournal::~ErrorsJournal() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool ErrorsJournal::open(uint64_t keep, bool keepSkippedMembers, std::string &error) {
  // The process's own streams, a device (/dev/null) or a named pipe are written as they are:
  // never cut, never read back.
  struct stat existing {};
  const bool asItIs = runtime::isStandardStream(path_) ||
                      (::stat(path_.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode));
  // Read before the file is cut: the lines a retry keeps (rows that were written or dropped).
  std::string kept;
  if (keepSkippedMembers && keep == 0 && !asItIs) {
    std::ifstream previous(path_);
    for (std::string line; std::getline(previous, line);)
      if (line.find("\"kind\": \"skipped-member\"") != std::string::npos ||
          line.find("\"kind\": \"duplicate\"") != std::string::npos)
        kept += line + '\n';
  }
  // Never written through a link planted at its name; the process's own streams are written
  // through its descriptor (its offset shared with the summary's lines, not overwriting them).
  fd_ = runtime::isStandardStream(path_)
            ? runtime::duplicateStandardStream(path_)
            : ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0 && errno == ELOOP) {
    error = "the errors journal \"" + path_ +
            "\" is a symbolic link; orch writes no output through a link: name the file it "
            "points to with --errors, or remove the link";
    return false;
  }
  if (fd_ >= 0 && asItIs)
    keep = 0;
  if (fd_ < 0 || (!asItIs && (::ftruncate(fd_, off_t(keep)) != 0 ||
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

runtime::RecordFields ErrorsJournal::describe(const runtime::Failure &failure) {
  using runtime::Value;
  return {{"kind", Value::string(runtime::failureKindName(failure.kind))},
          {"call", Value::string(failure.call)},
          {"path", pathValue(failure.path)},
          {"message", Value::string(failure.message)}};
}

} // namespace orch
