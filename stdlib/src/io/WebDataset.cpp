// WebDataset shards with libarchive: `sink webdataset(dir, sample, shard_samples, shard_bytes)`
// writes each row's `sample` record as tar members KEY.FIELD (Bytes as they are, strings as
// UTF-8, anything else as JSON) into shard-000000.tar, shard-000001.tar, ...; the source
// `webdataset(glob)` reads shards back, one row per sample. A shard is written hidden
// (.shard-N.tar.orch-partial) and renamed when it is full or the run ends, so a reader never
// sees half a shard; each source row's samples are a transaction like every sink's rows
// (docs/outputs.md), and a killed run resumes into its partial shard (docs/operators.md).
#include "FileIo.h"
#include "JsonValue.h"
#include "OperatorGroups.h"
#include "SinkSupport.h"

#include "orch/runtime/execution/MemorySize.h"
#include "orch/runtime/outputs/SinkExtents.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <locale.h>
#include <regex>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::stdlib {
namespace {

namespace fs = std::filesystem;
using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::SourceRow;
using runtime::Value;

/// libarchive converts member names through the thread's locale (the C locale, in a program
/// that never calls setlocale, knows only ASCII): while one is alive, this thread's character
/// type is UTF-8, so names are UTF-8 bytes whatever the user's locale (thread-local: uselocale).
class Utf8NamesHere {
public:
  Utf8NamesHere() {
    static const locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
    if (utf8)
      previous_ = ::uselocale(utf8);
  }
  ~Utf8NamesHere() {
    if (previous_)
      ::uselocale(previous_);
  }
  Utf8NamesHere(const Utf8NamesHere &) = delete;
  Utf8NamesHere &operator=(const Utf8NamesHere &) = delete;

private:
  locale_t previous_ = locale_t(0);
};

std::string shardName(uint64_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "shard-%06llu.tar", static_cast<unsigned long long>(index));
  return name;
}

/// A sample key that WebDataset readers split correctly: its first '.' would start the
/// extension, and '/' would make a directory.
std::string sanitizeKey(const std::string &key) {
  std::string safe = sanitizeFileName(key);
  std::replace(safe.begin(), safe.end(), '.', '_');
  return safe;
}

/// Members in tar order (the sample's fields, `__key__` aside) and their bytes.
struct Sample {
  std::string key;
  std::vector<std::pair<std::string, std::string>> members;
};

Sample sampleOf(const Value &record, uint64_t fallbackKey) {
  if (record.kind() != Value::Kind::Record)
    throw OperatorError("a webdataset sample must be a record of members, such as { __key__: "
                        "..., png: ..., json: ... }");
  Sample sample;
  for (const auto &[field, value] : record.asRecord()) {
    if (field == "__key__") {
      sample.key = value.kind() == Value::Kind::String ? value.asString() : value.str();
      continue;
    }
    std::string content;
    if (value.kind() == Value::Kind::Bytes)
      content = value.asBytes();
    else if (value.kind() == Value::Kind::String)
      content = value.asString();
    else
      content = jsonFromValue(value).dump();
    sample.members.emplace_back(field, std::move(content));
  }
  sample.key = sanitizeKey(sample.key.empty() ? std::to_string(fallbackKey) : sample.key);
  if (sample.members.empty())
    throw OperatorError("the webdataset sample \"" + sample.key + "\" has no member");
  return sample;
}

/// What the tar headers up to `size` bytes say (read directly: a partial shard has no
/// end-of-archive blocks for libarchive): how many samples (runs of members with one key), and
/// where the members end (the end-of-archive blocks, if any, begin).
struct TarExtent {
  uint64_t samples = 0;
  uint64_t membersEnd = 0;
};

TarExtent scanTar(int fd, uint64_t size) {
  TarExtent extent;
  std::string lastKey;
  char header[512];
  for (uint64_t at = 0; at + 512 <= size;) {
    if (::pread(fd, header, 512, off_t(at)) != 512 || header[0] == '\0')
      break;
    const std::string name(header, strnlen(header, 100));
    const uint64_t length = std::strtoull(std::string(header + 124, 12).c_str(), nullptr, 8);
    const std::string key = name.substr(0, name.find('.'));
    if (header[156] == '0' || header[156] == '\0') {
      extent.samples += key != lastKey;
      lastKey = key;
    }
    at += 512 + (length + 511) / 512 * 512;
    extent.membersEnd = std::min(at, size);
  }
  return extent;
}

/// Shards hold members, then (once finished) end-of-archive blocks. The run journal counts a
/// sink's bytes as the members of every shard laid end to end, end-of-archive blocks left out,
/// so that the bytes a source row wrote are one range that can be cut out of its shard.
class WebDatasetSink : public runtime::RowSink {
public:
  explicit WebDatasetSink(const OperatorConfig &config)
      : dir_(config.stringConstant("dir")), name_(config.name()),
        resume_(runtime::extentsToResume(config)), sample_(labelIndex(config, "sample")),
        shardSamples_(config.intConstant("shard_samples")),
        shardBytes_(config.intConstant("shard_bytes")) {
    checkOrder(config);
    if (shardSamples_ < 0 || shardBytes_ < 0 || (shardSamples_ == 0 && shardBytes_ == 0))
      throw OperatorError(config.name() + ": give shard_samples or shard_bytes a positive value");
    createDirectory(dir_, config);
    dirFd_ = lockDirectory(dir_, config);
    probeWritable(dir_, config);
    if (resume_)
      checkResumable();
  }

  void takeUp() override {
    if (resume_)
      resume();
    else
      startAfresh();
  }

  ~WebDatasetSink() override {
    // Not closed: a partial shard stays as it is, without end-of-archive blocks, for a resume.
    freeWriter();
    if (fd_ >= 0)
      ::close(fd_);
    if (dirFd_ >= 0)
      ::close(dirFd_);
  }

  void write(std::span<const Value> values) override {
    pending_.push_back(sampleOf(values[sample_], nextKey_++));
  }

  /// Appends the root's samples to the partial shard; when that fills it, also ends it (its
  /// end-of-archive blocks, synced), so that committing only renames it.
  void prepare() override {
    preparedNames_.clear();
    if (pending_.empty())
      return;
    openShard();
    for (const Sample &sample : pending_)
      for (const auto &[extension, content] : sample.members)
        writeMember(sample.key + "." + extension, content);
    preparedSize_ = currentOffset();
    preparedSamples_ = samplesInShard_ + pending_.size();
    pending_.clear();
    if ((shardSamples_ > 0 && preparedSamples_ >= uint64_t(shardSamples_)) ||
        (shardBytes_ > 0 && preparedSize_ >= uint64_t(shardBytes_))) {
      endShard();
      preparedNames_.push_back(shardName(shardIndex_));
    }
  }

  void commit() override {
    partialSize_ = preparedSize_;
    samplesInShard_ = preparedSamples_;
    if (!ended_)
      return;
    publishShard();
  }

  bool publishes() const override { return ended_; }

  void rollback() override {
    pending_.clear();
    preparedNames_.clear();
    // A prepare that failed half way, or was not committed, may have written members (and
    // ended the shard): cut them off, and go on with a writer that knows nothing of them.
    if (fd_ >= 0 && (ended_ || currentOffset() != partialSize_)) {
      freeWriter();
      ended_ = false;
      if (::ftruncate(fd_, off_t(partialSize_)) == 0)
        ::lseek(fd_, off_t(partialSize_), SEEK_SET);
      openWriter();
    }
    preparedSize_ = partialSize_;
    preparedSamples_ = samplesInShard_;
  }

  /// After prepare: the root's members among those of every shard so far (see the class
  /// comment), and the shard it ended: an extent record (SinkExtents.h).
  std::string resumeRecord() const override {
    return runtime::encodeExtent(
        {finishedMembers_ + partialSize_, finishedMembers_ + preparedSize_, preparedNames_});
  }
  std::string recordAfterRetry(const runtime::SinkRecord &record) const override {
    return runtime::extentAfterRetry(record, *resume_, name_);
  }
  uint64_t bytesCommitted() const override { return bytesWritten_; }

  void sync() override {
    if (fd_ >= 0)
      ::fdatasync(fd_);
  }

  /// The last shard is ended and renamed into place. A run that resumes this one takes it back
  /// (the run journal does not record it).
  void close() override {
    if (samplesInShard_ > 0) {
      endShard();
      publishShard();
    } else if (fd_ >= 0) {
      // Opened, but every root written to it was rolled back: nothing to keep.
      freeWriter();
      ::close(fd_);
      fd_ = -1;
      ::unlinkat(dirFd_, partialName(shardName(shardIndex_)).c_str(), 0);
    }
  }

private:
  /// A fresh run: shards and partial shards of an earlier run in this directory go, so that
  /// the directory holds this run's dataset only.
  void startAfresh() {
    removePartialFiles(dir_);
    removeShardsFrom(0);
  }

  void removeShardsFrom(uint64_t first) {
    static const std::regex shard("shard-([0-9]{6})\\.tar");
    std::error_code error;
    std::smatch match;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, error)) {
      const std::string name = entry.path().filename().string();
      if (std::regex_match(name, match, shard) && std::stoull(match[1].str()) >= first)
        ::unlinkat(dirFd_, name.c_str(), 0);
    }
  }

  /// Opens `name` in the directory for reading and writing, never through a link.
  int openInDirectory(const std::string &name) const {
    return ::openat(dirFd_, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  }

  /// Where a shard of the run being resumed stands: its member bytes as the journal counts
  /// them, as they are once the retried rows' samples are cut out, and as they are now (one
  /// of the two: a retry stopped half way cut some shards and not others).
  struct ShardState {
    std::string file;
    uint64_t before = 0, after = 0, now = 0;
  };

  static uint64_t overlap(const std::vector<std::pair<uint64_t, uint64_t>> &ranges, uint64_t from,
                          uint64_t to) {
    uint64_t bytes = 0;
    for (const auto &[begin, end] : ranges)
      if (begin < to && end > from)
        bytes += std::min(end, to) - std::max(begin, from);
    return bytes;
  }

  /// Member bytes of the shard file `name` in the directory (0 when it cannot be read).
  uint64_t membersOf(const std::string &name) const {
    const int fd = openInDirectory(name);
    struct stat info {};
    uint64_t members = 0;
    if (fd >= 0 && ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode))
      members = scanTar(fd, uint64_t(info.st_size)).membersEnd;
    if (fd >= 0)
      ::close(fd);
    return members;
  }

  bool isRegularFile(const std::string &name) const {
    struct stat info {};
    return ::fstatat(dirFd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(info.st_mode);
  }

  /// Checks, changing nothing, that the shards are as the journal left them: every finished
  /// shard there (or still hidden: its rename was cut short), with its members (all, or all
  /// but the retried rows'), and the shard being written at least as long as committed.
  void checkResumable() {
    const auto refuse = [&](const std::string &why) {
      throw OperatorError(name_ + ": cannot resume: " + why + "; run with --restart to start over");
    };
    const runtime::SinkExtents &resume = *resume_;
    uint64_t start = 0;
    for (size_t i = 0; i < resume.names.size(); ++i) {
      const std::string &name = resume.names[i];
      ShardState shard;
      shard.file = isRegularFile(name)                ? name
                   : isRegularFile(partialName(name)) ? partialName(name)
                                                      : std::string();
      if (shard.file.empty())
        refuse("the shard \"" + (dir_ / name).string() +
               "\", which the run journal counts as written, is missing");
      const uint64_t end = i < resume.nameEnds.size() ? resume.nameEnds[i] : start;
      shard.before = end - start;
      shard.after = shard.before - overlap(resume.dropRanges, start, end);
      shard.now = membersOf(shard.file);
      if (shard.now != shard.before && shard.now != shard.after)
        refuse("the shard \"" + (dir_ / name).string() +
               "\" changed since the run journal recorded it");
      shards_.push_back(std::move(shard));
      start = end;
    }
    if (resume.size < start)
      refuse("the shards in \"" + dir_.string() + "\" changed since the run journal recorded them");
    // The shard being written: hidden, or ended and renamed by the run that stopped.
    const std::string hidden = partialName(shardName(shards_.size()));
    const std::string ended = shardName(shards_.size());
    partial_.file = isRegularFile(hidden) ? hidden : isRegularFile(ended) ? ended : std::string();
    partial_.before = resume.size - start;
    partial_.after = partial_.before - overlap(resume.dropRanges, start, resume.size);
    partial_.now = partial_.file.empty() ? 0 : membersOf(partial_.file);
    if (partial_.before > 0 &&
        !(partial_.now >= partial_.before ||
          (partial_.after < partial_.before && partial_.now == partial_.after)))
      refuse("the partial shard \"" + (dir_ / hidden).string() +
             "\" is missing or shorter than the run journal counts");
    partialStart_ = start;
  }

  /// Takes up the run checkResumable found resumable (see takeUp).
  void resume() {
    const runtime::SinkExtents &resume = *resume_;
    uint64_t start = 0;
    for (size_t i = 0; i < shards_.size(); ++i) {
      ShardState &shard = shards_[i];
      const std::string &name = resume.names[i];
      if (shard.file != name && ::renameat(dirFd_, shard.file.c_str(), dirFd_, name.c_str()) != 0)
        throw OperatorError("cannot finish the shard \"" + (dir_ / name).string() +
                            "\": " + std::strerror(errno));
      shard.file = name;
      uint64_t members = shard.before;
      if (shard.now == shard.before && shard.after != shard.before)
        cutOut(name, start, members, resume.dropRanges);
      finishedMembers_ += shard.after;
      start += shard.before;
    }
    shardIndex_ = shards_.size();
    const std::string hidden = partialName(shardName(shardIndex_));
    if (!partial_.file.empty() && partial_.file != hidden &&
        ::renameat(dirFd_, partial_.file.c_str(), dirFd_, hidden.c_str()) != 0)
      throw OperatorError("cannot resume \"" + (dir_ / partial_.file).string() +
                          "\": " + std::strerror(errno));
    // Whatever else is hidden or numbered after it belongs to rows that run again.
    std::error_code error;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, error)) {
      const std::string name = entry.path().filename().string();
      if (name != hidden && name.front() == '.' && name.find(kPartialSuffix) != std::string::npos)
        ::unlinkat(dirFd_, name.c_str(), 0);
    }
    removeShardsFrom(shardIndex_ + 1);
    partialSize_ = 0;
    if (!partial_.file.empty()) {
      fd_ = openInDirectory(hidden);
      const bool cut = partial_.now < partial_.before;
      uint64_t members = cut ? partial_.after : partial_.before;
      if (fd_ < 0 || ::ftruncate(fd_, off_t(members)) != 0)
        throw OperatorError("cannot resume \"" + (dir_ / hidden).string() +
                            "\": " + std::strerror(errno));
      if (!cut && partial_.after != partial_.before) {
        ::close(fd_);
        cutOut(hidden, partialStart_, members, resume.dropRanges);
        fd_ = openInDirectory(hidden);
      }
      partialSize_ = members;
    }
    if (fd_ >= 0 && partialSize_ == 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ < 0) {
      ::unlinkat(dirFd_, hidden.c_str(), 0);
    } else {
      ::lseek(fd_, off_t(partialSize_), SEEK_SET);
      samplesInShard_ = scanTar(fd_, partialSize_).samples;
      openWriter();
    }
    preparedSize_ = shardStartedAt_ = partialSize_;
    preparedSamples_ = samplesInShard_;
  }

  /// Rewrites the shard `name`, whose members are the journal's bytes [start, start + members),
  /// without the members in `ranges` (sorted, in the journal's bytes), keeping what follows
  /// its members (end-of-archive blocks), through a hidden file renamed over it. `members`
  /// becomes what is left.
  void cutOut(const std::string &name, uint64_t start, uint64_t &members,
              const std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
    const int fd = openInDirectory(name);
    struct stat info {};
    std::string content;
    if (fd >= 0 && ::fstat(fd, &info) == 0) {
      content.resize(size_t(info.st_size));
      if (::pread(fd, content.data(), content.size(), 0) != ssize_t(content.size()))
        content.clear();
    }
    if (fd >= 0)
      ::close(fd);
    if (content.size() < members)
      throw OperatorError("cannot read \"" + (dir_ / name).string() +
                          "\" to take back the samples of the rows that run again");
    std::string kept;
    uint64_t at = 0;
    for (const auto &[begin, end] : ranges) {
      const uint64_t from = std::clamp(begin, start, start + members) - start;
      const uint64_t to = std::clamp(end, start, start + members) - start;
      if (from >= to)
        continue;
      kept.append(content, at, from - at);
      at = to;
    }
    kept.append(content, at, std::string::npos);
    members -= content.size() - kept.size();
    const std::string temporary =
        ".cut-" + std::to_string(::getpid()) + std::string(kPartialSuffix);
    const int out = createPartialFile(dirFd_, temporary);
    const bool ok = out >= 0 && writeAll(out, kept) && ::fsync(out) == 0;
    if (out >= 0)
      ::close(out);
    if (!ok || ::renameat(dirFd_, temporary.c_str(), dirFd_, name.c_str()) != 0)
      throw OperatorError("cannot rewrite \"" + (dir_ / name).string() +
                          "\": " + std::strerror(errno));
  }

  void openShard() {
    if (fd_ >= 0)
      return;
    const std::string partial = partialName(shardName(shardIndex_));
    fd_ = createPartialFile(dirFd_, partial);
    if (fd_ < 0)
      throw OperatorError("cannot write \"" + (dir_ / partial).string() +
                          "\": " + std::strerror(errno));
    // O_WRONLY from createPartialFile suffices: the sink appends and truncates only.
    partialSize_ = preparedSize_ = 0;
    samplesInShard_ = preparedSamples_ = 0;
    openWriter();
  }

  /// A libarchive writer appending at the descriptor's offset, unbuffered (each member is in
  /// the file when its write returns).
  void openWriter() {
    archive_ = archive_write_new();
    archive_write_set_format_pax_restricted(archive_);
    archive_write_set_bytes_per_block(archive_, 0);
    if (archive_write_open_fd(archive_, fd_) != ARCHIVE_OK)
      throw OperatorError(std::string("cannot start a shard: ") + archive_error_string(archive_));
  }

  void freeWriter() {
    if (!archive_)
      return;
    archive_write_fail(archive_);
    archive_write_free(archive_);
    archive_ = nullptr;
  }

  void writeMember(const std::string &name, const std::string &content) {
    // Names are UTF-8 bytes whatever the locale (a pax header carries them when not ASCII).
    const Utf8NamesHere utf8;
    archive_entry *entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_size(entry, la_int64_t(content.size()));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    // Reproducible shards: no time or owner of the writing machine.
    archive_entry_set_mtime(entry, 0, 0);
    // finish_entry writes the member's padding now: a commit then ends on a 512-byte block,
    // where a resumed run appends the next member.
    const bool written = archive_write_header(archive_, entry) == ARCHIVE_OK &&
                         archive_write_data(archive_, content.data(), content.size()) ==
                             la_ssize_t(content.size()) &&
                         archive_write_finish_entry(archive_) == ARCHIVE_OK;
    archive_entry_free(entry);
    if (!written)
      throw OperatorError("cannot write \"" +
                          (dir_ / partialName(shardName(shardIndex_))).string() +
                          "\": " + archive_error_string(archive_));
  }

  uint64_t currentOffset() const {
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    return at < 0 ? partialSize_ : uint64_t(at);
  }

  /// Ends the shard: its end-of-archive blocks, and everything durable.
  void endShard() {
    const bool closed = archive_write_close(archive_) == ARCHIVE_OK;
    const std::string why = closed ? std::string() : archive_error_string(archive_);
    archive_write_free(archive_);
    archive_ = nullptr;
    ended_ = true;
    if (!closed || ::fsync(fd_) != 0)
      throw OperatorError("cannot finish the shard \"" + (dir_ / shardName(shardIndex_)).string() +
                          "\": " + (closed ? std::strerror(errno) : why));
  }

  /// Renames the ended shard into place; the next one starts empty.
  void publishShard() {
    const std::string partial = partialName(shardName(shardIndex_));
    const std::string final = shardName(shardIndex_);
    const uint64_t size = currentOffset();
    ::close(fd_);
    fd_ = -1;
    ended_ = false;
    finishedMembers_ += partialSize_;
    bytesWritten_ += size - shardStartedAt_;
    shardStartedAt_ = 0;
    partialSize_ = preparedSize_ = 0;
    samplesInShard_ = preparedSamples_ = 0;
    ++shardIndex_;
    if (::renameat(dirFd_, partial.c_str(), dirFd_, final.c_str()) != 0)
      throw OperatorError("cannot finish the shard \"" + (dir_ / final).string() +
                          "\": " + std::strerror(errno));
  }

  fs::path dir_;
  std::string name_;
  /// What the run journal kept, folded (resuming only).
  std::optional<runtime::SinkExtents> resume_;
  /// Resuming: the finished shards and the shard being written (checkResumable).
  std::vector<ShardState> shards_;
  ShardState partial_;
  uint64_t partialStart_ = 0;
  size_t sample_;
  int64_t shardSamples_, shardBytes_;
  /// The output directory, opened (and locked) once: shards are made relative to it.
  int dirFd_ = -1;
  int fd_ = -1;
  archive *archive_ = nullptr;
  std::vector<Sample> pending_;
  uint64_t nextKey_ = 0;
  uint64_t shardIndex_ = 0;
  /// Samples and member bytes of the partial shard as last committed, and as prepared.
  uint64_t samplesInShard_ = 0;
  uint64_t partialSize_ = 0;
  uint64_t preparedSamples_ = 0;
  uint64_t preparedSize_ = 0;
  /// The prepared root ended the shard (its end-of-archive blocks are written).
  bool ended_ = false;
  std::vector<std::string> preparedNames_;
  /// Member bytes of the finished shards (see the class comment).
  uint64_t finishedMembers_ = 0;
  /// Bytes this run wrote in finished shards, and where the partial shard was when resumed.
  uint64_t bytesWritten_ = 0;
  uint64_t shardStartedAt_ = 0;
};

/// Reads shards in path order, one sample (a run of members with one key) per row:
/// {__key__, __shard__, FIELD: value}, where `json` members are parsed, `txt` ones are
/// strings and the rest are Bytes. A shard that cannot be read is a failed row.
class WebDatasetSource : public runtime::RowSource {
public:
  explicit WebDatasetSource(const OperatorConfig &config) {
    const std::string pattern = config.stringConstant("glob");
    paths_ = expandGlob(pattern, "webdataset");
    if (paths_.empty())
      throw OperatorError("webdataset: no shard matches \"" + pattern + "\"");
  }

  ~WebDatasetSource() override { closeShard(); }

  std::optional<SourceRow> next() override {
    if (problemAhead_) {
      // The shard broke after a complete sample, which went first.
      SourceRow failed{std::nullopt, std::move(*problemAhead_)};
      problemAhead_.reset();
      return failed;
    }
    for (;;) {
      if (!reader_) {
        if (nextPath_ >= paths_.size())
          return std::nullopt;
        if (std::optional<SourceRow> failed = openShard(paths_[nextPath_++]))
          return failed;
        continue;
      }
      std::optional<std::string> problem;
      // The broken member belongs to the next sample: the one read so far is whole.
      bool sampleWhole = false;
      runtime::RecordFields fields;
      std::string key;
      // A member that cannot be a value (JSON nested too deep) fails its sample, not the shard.
      std::optional<std::string> sampleFailure;
      auto sample = [&]() -> SourceRow {
        if (sampleFailure)
          return SourceRow{std::nullopt, std::move(*sampleFailure)};
        return SourceRow{Value::record(std::move(fields)), {}};
      };
      // The member read ahead belongs to this sample.
      if (ahead_) {
        key = ahead_->key;
        fields = {{"__key__", Value::string(key)}, {"__shard__", Value::string(shard_)}};
        fields.emplace_back(std::move(ahead_->field), std::move(ahead_->value));
        sampleFailure = std::move(ahead_->failure);
        ahead_.reset();
      }
      // Member names are read as UTF-8 whatever the locale.
      const Utf8NamesHere utf8;
      for (;;) {
        archive_entry *entry = nullptr;
        const int status = archive_read_next_header(reader_, &entry);
        if (status == ARCHIVE_EOF)
          break;
        if (status != ARCHIVE_OK) {
          problem = std::string("cannot read the shard \"") + shard_ +
                    "\": " + archive_error_string(reader_);
          break;
        }
        if (archive_entry_filetype(entry) != AE_IFREG)
          continue;
        const char *name = archive_entry_pathname(entry);
        const std::string path = name ? name : "";
        const size_t slash = path.rfind('/');
        const size_t dot = path.find('.', slash == std::string::npos ? 0 : slash + 1);
        const std::string memberKey = path.substr(0, dot);
        const std::string extension = dot == std::string::npos ? "" : path.substr(dot + 1);
        std::string content;
        if (std::optional<std::string> unread = readMember(entry, path, content)) {
          problem = std::move(unread);
          sampleWhole = !key.empty() && memberKey != key;
          break;
        }
        Member member{memberKey, extension, Value(), std::nullopt};
        if (std::optional<std::string> unfit = memberValue(extension, content, member.value))
          member.failure = "\"" + path + "\" in the shard \"" + shard_ + "\": " + *unfit;
        if (key.empty()) {
          key = memberKey;
          fields = {{"__key__", Value::string(key)}, {"__shard__", Value::string(shard_)}};
        } else if (memberKey != key) {
          ahead_ = std::move(member);
          return sample();
        }
        if (member.failure && !sampleFailure)
          sampleFailure = std::move(member.failure);
        fields.emplace_back(std::move(member.field), std::move(member.value));
      }
      closeShard();
      if (problem && sampleWhole) {
        problemAhead_ = std::move(problem);
        return sample();
      }
      if (problem)
        return SourceRow{std::nullopt, *problem};
      if (!key.empty())
        return sample();
    }
  }

  std::string fingerprint() const override { return filesFingerprint(paths_); }

private:
  /// A member's value by its extension into `value`: `json` parsed, `txt` a string, the rest
  /// Bytes; why a `json` member cannot be a value (not JSON, nested too deep), or nullopt.
  static std::optional<std::string> memberValue(const std::string &extension,
                                                const std::string &content, Value &value) {
    if (extension == "json") {
      if (std::optional<std::string> deep = jsonNestedTooDeep(content))
        return deep;
      const nlohmann::ordered_json json = nlohmann::ordered_json::parse(content, nullptr, false);
      if (json.is_discarded())
        return std::string("not valid JSON");
      value = valueFromJson(json);
    } else if (extension == "txt" || extension == "text") {
      value = Value::string(content);
    } else {
      value = Value::bytes(content);
    }
    return std::nullopt;
  }

  /// Reads the member `entry` into `content` in chunks, so that a header claiming more bytes than
  /// the shard holds costs only the bytes that exist; why it cannot, or nullopt.
  std::optional<std::string> readMember(archive_entry *entry, const std::string &path,
                                        std::string &content) {
    const la_int64_t claimed = archive_entry_size(entry);
    constexpr size_t kChunk = size_t(1) << 20;
    content.reserve(size_t(std::min<la_int64_t>(std::max<la_int64_t>(claimed, 0), kChunk)));
    std::string failure;
    for (;;) {
      const size_t had = content.size();
      content.resize(had + kChunk);
      const la_ssize_t got = archive_read_data(reader_, content.data() + had, kChunk);
      content.resize(had + size_t(std::max<la_ssize_t>(got, 0)));
      if (got < 0)
        failure = archive_error_string(reader_) ? archive_error_string(reader_) : "unreadable";
      if (got <= 0)
        break;
    }
    const std::string where = "\"" + path + "\" in the shard \"" + shard_ + "\"";
    if (claimed >= 0 && content.size() < uint64_t(claimed))
      return where + " claims " + runtime::formatMemory(uint64_t(claimed)) + ", the shard holds " +
             runtime::formatMemory(content.size()) + " of it" +
             (failure.empty() ? "" : " (" + failure + ")");
    if (!failure.empty())
      return "cannot read " + where + ": " + failure;
    return std::nullopt;
  }

  /// Opens `path`; a failed row when it cannot.
  std::optional<SourceRow> openShard(const std::string &path) {
    shard_ = path;
    reader_ = archive_read_new();
    archive_read_support_format_tar(reader_);
    archive_read_support_filter_all(reader_);
    if (archive_read_open_filename(reader_, path.c_str(), 1 << 16) != ARCHIVE_OK) {
      const std::string problem =
          std::string("cannot read the shard \"") + path + "\": " + archive_error_string(reader_);
      closeShard();
      return SourceRow{std::nullopt, problem};
    }
    return std::nullopt;
  }

  void closeShard() {
    if (reader_)
      archive_read_free(reader_);
    reader_ = nullptr;
    ahead_.reset();
  }

  std::vector<std::string> paths_;
  size_t nextPath_ = 0;
  archive *reader_ = nullptr;
  std::string shard_;
  /// A member of the next sample, read while looking for the end of the current one.
  struct Member {
    std::string key;
    std::string field;
    Value value;
    std::optional<std::string> failure;
  };
  std::optional<Member> ahead_;
  std::optional<std::string> problemAhead_;
};

} // namespace

void registerWebDataset(runtime::OperatorRegistry &registry) {
  registry.addSink("webdataset", [](const OperatorConfig &config) {
    return std::make_unique<WebDatasetSink>(config);
  });
  registry.addSource("webdataset", [](const OperatorConfig &config) {
    return std::make_unique<WebDatasetSource>(config);
  });
}

} // namespace orch::stdlib
