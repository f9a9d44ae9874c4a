// Sinks to local files: `jsonl(path, record)` appends one JSON line per row as its root
// finishes; `files(dir, name, ext, content)` writes one file per row. Each root's rows are a
// transaction (RowSink): a row that cannot be written (disk full, a name too long or taken)
// fails its root, and what the root wrote is taken back, so outputs never hold a partial line,
// a partial file or half of a root (docs/outputs.md).
#include "FileIo.h"
#include "JsonValue.h"
#include "OperatorGroups.h"
#include "SinkSupport.h"

#include "orch/runtime/outputs/ReservedSpace.h"
#include "orch/runtime/outputs/SinkExtents.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::stdlib {
namespace {

namespace fs = std::filesystem;
using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::Value;

class JsonlSink : public runtime::RowSink {
public:
  explicit JsonlSink(const OperatorConfig &config)
      : path_(config.stringConstant("path")), record_(labelIndex(config, "record")),
        nonFinite_(nonFiniteOption(config)), name_(config.name()),
        resume_(runtime::extentsToResume(config)), stream_(isStandardStream(path_)) {
    checkOrder(config);
    if (!stream_)
      createDirectory(fs::path(path_).parent_path(), config);
    openLocked();
    if (resume_ && !stream_) {
      // The rows the journal counts as written must still be there: all of them, or (a retry
      // stopped half way) all but the retried rows', already cut out.
      const uint64_t size = fileSize();
      if (isRegular() && size < resume_->size && !(cutBytes() > 0 && size == cutSize()))
        throw OperatorError(name_ + ": cannot resume: \"" + path_ + "\" has " +
                            std::to_string(size) + " bytes where the run journal counts " +
                            std::to_string(resume_->size) +
                            " (it was removed or changed); run with --restart to start over");
    }
  }

  void takeUp() override {
    if (stream_ || !isRegular()) {
      // (The process's stream, or a device: written as it comes, never emptied or cut.)
    } else if (!resume_) {
      if (::ftruncate(fd_, 0) != 0)
        throw OperatorError(name_ + ": cannot write \"" + path_ + "\": " + std::strerror(errno));
    } else if (cutBytes() > 0 && fileSize() == cutSize() && fileSize() < resume_->size) {
      // A retry stopped after this output's cut: done already.
      committed_ = cutSize();
    } else {
      // Everything after the last committed row belongs to rows that run again, and so do the
      // rows of source rows that failed and are retried.
      committed_ = resume_->size;
      if (::ftruncate(fd_, off_t(committed_)) != 0)
        throw OperatorError(name_ + ": cannot resume \"" + path_ + "\": " + std::strerror(errno));
      if (cutBytes() > 0)
        cutOut(resume_->dropRanges);
    }
    if (!stream_ && isRegular() && ::lseek(fd_, off_t(committed_), SEEK_SET) < 0)
      throw OperatorError(name_ + ": cannot write \"" + path_ + "\": " + std::strerror(errno));
    size_ = committed_;
    resumedAt_ = committed_;
    // Rows are held back and written a round's roots at a time only where space can be
    // reserved for them first, so that a full disk still fails the root that filled it.
    holding_ = !stream_ && isRegular() && reserved_.begin(fd_, committed_);
  }

  ~JsonlSink() override {
    if (fd_ < 0)
      return;
    try {
      // (The run wrote them already, unless it ended by an exception: not a root half written.)
      rollback();
      writeHeld();
    } catch (const std::exception &) {
    }
    reserved_.release(fd_, writtenTo());
    ::close(fd_);
  }

  void write(std::span<const Value> values) override {
    const std::string line = jsonFromValue(values[record_], nonFinite_).dump() + '\n';
    if (stream_) {
      // A stream cannot be cut back: the root's lines wait until it commits.
      pending_ += line;
      size_ += line.size();
      return;
    }
    if (holding_) {
      // Held with the lines of the roots committed since the last write (writeHeld).
      held_ += line;
      size_ += line.size();
      // A root of many rows is not held whole: past a megabyte, what is held goes to the file.
      if (size_ - committed_ > kHeldRootBytes)
        writeThrough();
      return;
    }
    // Otherwise one write per line: rows become visible as their root finishes, never half a
    // line.
    if (!writeAll(fd_, line)) {
      const std::string cause = std::strerror(errno);
      // Part of the line may have been written: cut it off (the rest of the root's rows go
      // with rollback).
      if (::ftruncate(fd_, off_t(size_)) == 0)
        ::lseek(fd_, off_t(size_), SEEK_SET);
      throw OperatorError("cannot write \"" + path_ + "\": " + cause);
    }
    size_ += line.size();
  }

  /// Space for the root's lines, so that writing them with the next roots' cannot find the
  /// disk full.
  void prepare() override {
    if (holding_)
      reserve(size_);
  }

  // The lines are in the file (or held, with their space reserved) once prepared; committing
  // makes them the point to roll back to.
  void commit() override {
    if (stream_ && !pending_.empty()) {
      const bool written = writeAll(fd_, pending_);
      pending_.clear();
      if (!written)
        throw OperatorError("cannot write \"" + path_ + "\": " + std::strerror(errno));
    }
    committed_ = size_;
  }

  bool publishes() const override { return stream_; }

  void rollback() override {
    pending_.clear();
    if (size_ == committed_)
      return;
    if (writtenTo() <= committed_) { // (else written through: cut from the file below)
      held_.resize(committed_ - writtenTo());
      size_ = committed_;
      return;
    }
    if (!stream_ && ::ftruncate(fd_, off_t(committed_)) == 0)
      ::lseek(fd_, off_t(committed_), SEEK_SET);
    size_ = committed_;
    held_.clear();
    reserved_.cutTo(committed_); // cut off with the file's end
  }

  uint64_t heldBytes() const override { return held_.size(); }

  void writeHeld() override {
    if (!broken_.empty())
      throw OperatorError(broken_);
    if (held_.empty())
      return;
    if (!writeAll(fd_, held_))
      breakOff(std::strerror(errno));
    held_.clear();
  }

  /// After prepare: where the root's lines begin and end (an extent record, SinkExtents.h).
  std::string resumeRecord() const override {
    return runtime::encodeExtent({committed_, size_, {}});
  }
  std::string recordAfterRetry(const runtime::SinkRecord &record) const override {
    return runtime::extentAfterRetry(record, *resume_, name_);
  }
  uint64_t bytesCommitted() const override { return committed_ - resumedAt_; }

  void sync() override { ::fdatasync(fd_); }

  void close() override {
    if (fd_ < 0)
      return;
    writeHeld();
    reserved_.release(fd_, writtenTo());
    const int status = ::close(fd_);
    fd_ = -1;
    if (status != 0)
      throw OperatorError("cannot write \"" + path_ + "\": " + std::strerror(errno));
  }

private:
  /// Opens the output for this run alone: another run writing it would interleave lines. It
  /// is read too when failed rows are retried (their lines are cut out).
  void openLocked() {
    fd_ = openOutputFile(path_, O_RDWR | O_CREAT, name_);
    if (!stream_ && ::flock(fd_, LOCK_EX | LOCK_NB) != 0 && isRegular())
      throw OperatorError(
          name_ + ": \"" + path_ +
          "\" is being written by another orch run, or by another sink of this one; wait for "
          "it, or stop it");
  }

  bool isRegular() const {
    struct stat info {};
    return ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode);
  }

  /// Space for the lines held up to `end`: OperatorError (the root fails) when there is no room.
  void reserve(uint64_t end) {
    if (!reserved_.reserve(fd_, end))
      throw OperatorError("cannot write \"" + path_ + "\": " + std::strerror(errno));
  }

  /// Writes what is held, the root's lines so far included, into reserved space.
  void writeThrough() {
    reserve(size_);
    writeHeld();
  }

  /// Held lines could not be written to reserved space (an I/O error): what was written of
  /// them is cut off, and the committed ones with them are lost, so the run must stop before
  /// the journal records them (writeHeld throws from now on).
  [[noreturn]] void breakOff(const std::string &cause) {
    const uint64_t written = writtenTo();
    if (::ftruncate(fd_, off_t(written)) == 0)
      ::lseek(fd_, off_t(written), SEEK_SET);
    held_.clear();
    committed_ = size_ = written;
    reserved_.cutTo(written);
    broken_ = "cannot write \"" + path_ + "\": " + cause;
    throw OperatorError(broken_);
  }

  uint64_t fileSize() const {
    struct stat info {};
    return ::fstat(fd_, &info) == 0 ? uint64_t(info.st_size) : 0;
  }

  /// Bytes of the retried rows' lines, and the output's size once they are cut out.
  uint64_t cutBytes() const {
    uint64_t bytes = 0;
    for (const auto &[begin, end] : resume_->dropRanges)
      bytes += end - begin;
    return bytes;
  }
  uint64_t cutSize() const { return resume_->size - cutBytes(); }

  /// Rewrites the output without `ranges` (sorted byte ranges of source rows that run again)
  /// into a hidden file renamed over it: a run stopped meanwhile leaves the whole output, or
  /// the cut one (which the next run recognises by its size).
  void cutOut(const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
    std::string content(committed_, '\0');
    if (::pread(fd_, content.data(), content.size(), 0) != ssize_t(content.size()))
      throw OperatorError(name_ + ": cannot read \"" + path_ +
                          "\" to resume it: " + std::strerror(errno));
    std::string kept;
    uint64_t at = 0;
    for (const auto &[begin, end] : ranges) {
      kept.append(content, at, begin - at);
      at = end;
    }
    kept.append(content, at, std::string::npos);
    const fs::path path(path_);
    const fs::path temporary = path.parent_path() / ("." + path.filename().string() + ".retry" +
                                                     std::string(kPartialSuffix));
    ::unlink(temporary.c_str());
    const int out =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    const bool written = out >= 0 && writeAll(out, kept) && ::fsync(out) == 0;
    if (out >= 0)
      ::close(out);
    if (!written || ::rename(temporary.c_str(), path_.c_str()) != 0)
      throw OperatorError(name_ + ": cannot rewrite \"" + path_ + "\": " + std::strerror(errno));
    // The output is a new file now: open and lock it in place of the old one.
    ::close(fd_);
    openLocked();
    committed_ = kept.size();
  }

  std::string path_;
  size_t record_;
  NonFinite nonFinite_;
  std::string name_;
  /// What the run journal kept, folded (resuming only).
  std::optional<runtime::SinkExtents> resume_;
  /// The process's standard output or error (isStandardStream), and the lines of the root
  /// being written to it.
  bool stream_;
  std::string pending_;
  int fd_ = -1;
  /// The output's size after the last commit, and now.
  uint64_t committed_ = 0;
  uint64_t size_ = 0;
  /// Where this run started writing (after a resumed run's rows).
  uint64_t resumedAt_ = 0;
  /// Group commit (a regular file whose space can be reserved): the last lines, up to `size_`,
  /// are held in `held_` (those of committed roots, then the root being written), with their
  /// space reserved. `broken_`: held lines were lost.
  bool holding_ = false;
  std::string held_;
  /// The file's end: where the held lines go.
  uint64_t writtenTo() const { return size_ - held_.size(); }
  runtime::ReservedSpace reserved_;
  std::string broken_;
  /// A root of more lines than this is not held whole: they go to the file as they come.
  static constexpr uint64_t kHeldRootBytes = 1 << 20;
};

class FilesSink : public runtime::RowSink {
public:
  explicit FilesSink(const OperatorConfig &config)
      : dir_(config.stringConstant("dir")), ext_(config.stringConstant("ext")),
        name_(labelIndex(config, "name")), content_(labelIndex(config, "content")),
        sinkName_(config.name()), resume_(runtime::extentsToResume(config)) {
    checkOrder(config);
    createDirectory(dir_, config);
    // Every file is made relative to the directory opened now: a directory swapped for a link
    // during the run redirects nothing.
    dirFd_ = lockDirectory(dir_, config);
    probeWritable(dir_, config);
    if (resume_)
      checkResumable();
  }

  /// Files of committed rows are there (or, when the run stopped between a row's commit and
  /// its renames, still hidden: renamed now); files of failed rows that are retried go; the
  /// hidden files of rows that never committed go.
  void takeUp() override {
    if (resume_) {
      const std::set<std::string> dropped = droppedNames();
      for (const std::string &name : resume_->names) {
        if (dropped.count(name))
          continue;
        struct stat info {};
        if (::fstatat(dirFd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
          ::renameat(dirFd_, partialName(name).c_str(), dirFd_, name.c_str());
        taken_.insert(name);
      }
      for (const std::string &name : resume_->dropNames) {
        ::unlinkat(dirFd_, name.c_str(), 0);
        ::unlinkat(dirFd_, partialName(name).c_str(), 0);
      }
    }
    removePartialFiles(dir_);
  }

  ~FilesSink() override {
    rollback();
    if (dirFd_ >= 0)
      ::close(dirFd_);
  }

  void write(std::span<const Value> values) override {
    const std::string name = sanitizeFileName(values[name_].asString()) + ext_;
    if (name.size() > NAME_MAX)
      throw OperatorError("the file name \"" + name.substr(0, 40) + "...\" is " +
                          std::to_string(name.size()) + " bytes long; names may have at most " +
                          std::to_string(NAME_MAX));
    if (taken_.count(name) || std::any_of(pending_.begin(), pending_.end(),
                                          [&](const Pending &p) { return p.name == name; }))
      throw OperatorError("\"" + (dir_ / name).string() +
                          "\" was already written by another row of this run");
    const std::string partial = partialName(name);
    const Value &content = values[content_];
    std::string bytes;
    if (content.kind() == Value::Kind::String)
      bytes = content.asString();
    else if (content.kind() == Value::Kind::Bytes)
      bytes = content.asBytes();
    else
      bytes = jsonFromValue(content).dump() + '\n';
    const int fd = createPartialFile(dirFd_, partial);
    if (fd < 0)
      throw OperatorError("cannot write \"" + (dir_ / partial).string() +
                          "\": " + std::strerror(errno));
    const bool ok = writeAll(fd, bytes);
    const int error = errno;
    if (::close(fd) != 0 || !ok) {
      ::unlinkat(dirFd_, partial.c_str(), 0);
      throw OperatorError("cannot write \"" + (dir_ / name).string() +
                          "\": " + std::strerror(ok ? errno : error));
    }
    pending_.push_back(Pending{name, partial, bytes.size()});
  }

  /// What would stop a rename is found now, before the root commits: a directory in the way.
  void prepare() override {
    for (const Pending &file : pending_) {
      struct stat info {};
      if (::fstatat(dirFd_, file.name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISDIR(info.st_mode))
        throw OperatorError("cannot write \"" + (dir_ / file.name).string() +
                            "\": a directory of that name is in the way");
    }
    prepared_.clear();
    for (const Pending &file : pending_)
      prepared_.push_back(file.name);
  }

  void commit() override {
    std::vector<Pending> files = std::move(pending_);
    pending_.clear();
    for (const Pending &file : files) {
      taken_.insert(file.name);
      bytes_ += file.bytes;
      if (::renameat(dirFd_, file.partial.c_str(), dirFd_, file.name.c_str()) != 0)
        throw OperatorError("cannot write \"" + (dir_ / file.name).string() +
                            "\": " + std::strerror(errno));
    }
  }

  bool publishes() const override { return !pending_.empty(); }

  void rollback() override {
    for (const Pending &file : pending_)
      ::unlinkat(dirFd_, file.partial.c_str(), 0);
    pending_.clear();
    prepared_.clear();
  }

  /// After prepare: the names the root publishes (an extent record of no bytes).
  std::string resumeRecord() const override { return runtime::encodeExtent({0, 0, prepared_}); }
  std::string recordAfterRetry(const runtime::SinkRecord &record) const override {
    return runtime::extentAfterRetry(record, *resume_, sinkName_);
  }
  uint64_t bytesCommitted() const override { return bytes_; }

private:
  struct Pending {
    std::string name;
    std::string partial;
    uint64_t bytes;
  };

  /// Names the journal lists that retried rows had written: gone, or written again.
  std::set<std::string> droppedNames() const {
    std::set<std::string> names(resume_->dropNames.begin(), resume_->dropNames.end());
    names.insert(resume_->retiredNames.begin(), resume_->retiredNames.end());
    return names;
  }

  /// Every file the journal counts as written (retried rows' aside) is there, or hidden.
  void checkResumable() const {
    const std::set<std::string> dropped = droppedNames();
    for (const std::string &name : resume_->names) {
      struct stat info {};
      if (dropped.count(name) || ::fstatat(dirFd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 ||
          (::fstatat(dirFd_, partialName(name).c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(info.st_mode)))
        continue;
      throw OperatorError(sinkName_ + ": cannot resume: \"" + (dir_ / name).string() +
                          "\", which the run journal counts as written, is missing (it was "
                          "removed); run with --restart to start over");
    }
  }

  fs::path dir_;
  std::string ext_;
  size_t name_, content_;
  std::string sinkName_;
  std::optional<runtime::SinkExtents> resume_;
  /// The output directory, opened (and locked) once.
  int dirFd_ = -1;
  /// Names committed by this run (and, resumed, by the run it resumes).
  std::set<std::string> taken_;
  std::vector<Pending> pending_;
  /// The names the prepared root publishes.
  std::vector<std::string> prepared_;
  /// Bytes of the files this run committed.
  uint64_t bytes_ = 0;
};

} // namespace

void registerFileSinks(runtime::OperatorRegistry &registry) {
  registry.addSink(
      "jsonl", [](const OperatorConfig &config) { return std::make_unique<JsonlSink>(config); });
  registry.addSink(
      "files", [](const OperatorConfig &config) { return std::make_unique<FilesSink>(config); });
}

} // namespace orch::stdlib
