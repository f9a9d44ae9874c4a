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

#include "orch/runtime/MemorySize.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
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

/// How many samples (runs of members with one key) a tar holds up to `size` bytes: the tar
/// headers read directly (a partial shard has no end-of-archive blocks for libarchive).
uint64_t countSamples(int fd, uint64_t size) {
  uint64_t samples = 0;
  std::string lastKey;
  char header[512];
  for (uint64_t at = 0; at + 512 <= size;) {
    if (::pread(fd, header, 512, off_t(at)) != 512 || header[0] == '\0')
      break;
    const std::string name(header, strnlen(header, 100));
    const uint64_t length = std::strtoull(std::string(header + 124, 12).c_str(), nullptr, 8);
    const std::string key = name.substr(0, name.find('.'));
    if (header[156] == '0' || header[156] == '\0') {
      samples += key != lastKey;
      lastKey = key;
    }
    at += 512 + (length + 511) / 512 * 512;
  }
  return samples;
}

class WebDatasetSink : public runtime::RowSink {
public:
  explicit WebDatasetSink(const OperatorConfig &config)
      : dir_(config.stringConstant("dir")), sample_(labelIndex(config, "sample")),
        shardSamples_(config.intConstant("shard_samples")),
        shardBytes_(config.intConstant("shard_bytes")) {
    checkOrder(config);
    if (shardSamples_ < 0 || shardBytes_ < 0 || (shardSamples_ == 0 && shardBytes_ == 0))
      throw OperatorError(config.name() + ": give shard_samples or shard_bytes a positive value");
    createDirectory(dir_, config);
    lockFd_ = lockDirectory(dir_, config);
    probeWritable(dir_, config);
    if (const runtime::SinkResume *resume = config.resume())
      resumeFrom(*resume, config);
    else
      startAfresh();
  }

  ~WebDatasetSink() override {
    // Not closed: a partial shard stays as it is, without end-of-archive blocks, for a resume.
    if (archive_) {
      archive_write_fail(archive_);
      archive_write_free(archive_);
    }
    if (fd_ >= 0)
      ::close(fd_);
    if (lockFd_ >= 0)
      ::close(lockFd_);
  }

  void write(std::span<const Value> values) override {
    pending_.push_back(sampleOf(values[sample_], nextKey_++));
  }

  void commit() override {
    lastCommitted_.clear();
    if (pending_.empty())
      return;
    openShard();
    for (const Sample &sample : pending_)
      for (const auto &[extension, content] : sample.members)
        writeMember(sample.key + "." + extension, content);
    partialSize_ = currentOffset();
    samplesInShard_ += pending_.size();
    pending_.clear();
    if ((shardSamples_ > 0 && samplesInShard_ >= uint64_t(shardSamples_)) ||
        (shardBytes_ > 0 && partialSize_ >= uint64_t(shardBytes_)))
      finishShard();
  }

  void rollback() override {
    pending_.clear();
    // A commit that failed half way may have written members: cut them off, and go on with a
    // writer that knows nothing of them.
    if (fd_ >= 0 && currentOffset() != partialSize_) {
      archive_write_fail(archive_);
      archive_write_free(archive_);
      archive_ = nullptr;
      if (::ftruncate(fd_, off_t(partialSize_)) == 0)
        ::lseek(fd_, off_t(partialSize_), SEEK_SET);
      openWriter();
    }
  }

  /// Bytes of every shard so far, the partial one included: grows monotonically, as the run
  /// journal needs (a resumed run splits it into finished shards and the partial one).
  uint64_t committedSize() const override { return finishedBytes_ + partialSize_; }
  std::vector<std::string> committedNames() const override { return lastCommitted_; }
  uint64_t bytesCommitted() const override { return committedSize() - resumedAt_; }

  void sync() override {
    if (fd_ >= 0)
      ::fdatasync(fd_);
  }

  void close() override {
    if (samplesInShard_ > 0)
      finishShard();
    else if (fd_ >= 0) {
      // Opened, but every root written to it was rolled back: nothing to keep.
      archive_write_fail(archive_);
      archive_write_free(archive_);
      archive_ = nullptr;
      ::close(fd_);
      fd_ = -1;
      ::unlink(partialPath().c_str());
    }
  }

private:
  fs::path partialPath() const {
    return dir_ / ("." + shardName(shardIndex_) + std::string(kPartialSuffix));
  }

  /// A fresh run: shards and partial shards of an earlier run in this directory go, so that
  /// the directory holds this run's dataset only.
  void startAfresh() {
    removePartialFiles(dir_);
    static const std::regex shard("shard-[0-9]{6}\\.tar");
    std::error_code error;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, error))
      if (std::regex_match(entry.path().filename().string(), shard))
        fs::remove(entry.path(), error);
  }

  void resumeFrom(const runtime::SinkResume &resume, const OperatorConfig &config) {
    if (!resume.dropRanges.empty() || !resume.dropNames.empty())
      throw OperatorError(config.name() + ": a webdataset sink cannot take back the samples of "
                                          "rows that run again (--retry-failed); run with "
                                          "--restart to write the shards afresh");
    for (const std::string &name : resume.names) {
      std::error_code error;
      const uint64_t size = fs::file_size(dir_ / name, error);
      if (error)
        throw OperatorError(config.name() + ": cannot resume: the shard \"" +
                            (dir_ / name).string() +
                            "\", which the run journal counts as written, is missing; run "
                            "with --restart to start over");
      finishedBytes_ += size;
    }
    shardIndex_ = resume.names.size();
    if (resume.size < finishedBytes_)
      throw OperatorError(config.name() + ": cannot resume: the shards in \"" + dir_.string() +
                          "\" changed since the run journal recorded them; run with --restart");
    partialSize_ = resume.size - finishedBytes_;
    resumedAt_ = resume.size;
    // Partial shards of rows that were not committed go; the committed part of this one stays.
    const fs::path partial = partialPath();
    std::error_code error;
    for (const fs::directory_entry &entry : fs::directory_iterator(dir_, error))
      if (entry.path() != partial &&
          entry.path().filename().string().find(kPartialSuffix) != std::string::npos)
        fs::remove(entry.path(), error);
    if (partialSize_ == 0) {
      fs::remove(partial, error);
      return;
    }
    fd_ = ::open(partial.c_str(), O_RDWR | O_CLOEXEC);
    struct stat info {};
    if (fd_ < 0 || ::fstat(fd_, &info) != 0 || uint64_t(info.st_size) < partialSize_)
      throw OperatorError(config.name() + ": cannot resume: the partial shard \"" +
                          partial.string() +
                          "\" is missing or shorter than the run journal "
                          "counts; run with --restart to start over");
    if (::ftruncate(fd_, off_t(partialSize_)) != 0 ||
        ::lseek(fd_, off_t(partialSize_), SEEK_SET) < 0)
      throw OperatorError(config.name() + ": cannot resume \"" + partial.string() +
                          "\": " + std::strerror(errno));
    samplesInShard_ = countSamples(fd_, partialSize_);
    openWriter();
  }

  void openShard() {
    if (fd_ >= 0)
      return;
    const fs::path partial = partialPath();
    fd_ = ::open(partial.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw OperatorError("cannot write \"" + partial.string() + "\": " + std::strerror(errno));
    partialSize_ = 0;
    samplesInShard_ = 0;
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

  void writeMember(const std::string &name, const std::string &content) {
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
      throw OperatorError("cannot write \"" + partialPath().string() +
                          "\": " + archive_error_string(archive_));
  }

  uint64_t currentOffset() const {
    const off_t at = ::lseek(fd_, 0, SEEK_CUR);
    return at < 0 ? partialSize_ : uint64_t(at);
  }

  /// Ends the shard (the end-of-archive blocks), makes it durable and renames it into place.
  void finishShard() {
    const fs::path partial = partialPath();
    const fs::path final = dir_ / shardName(shardIndex_);
    const bool closed = archive_write_close(archive_) == ARCHIVE_OK;
    archive_write_free(archive_);
    archive_ = nullptr;
    const bool synced = ::fsync(fd_) == 0;
    ::close(fd_);
    fd_ = -1;
    std::error_code error;
    if (closed && synced)
      fs::rename(partial, final, error);
    if (!closed || !synced || error)
      throw OperatorError("cannot finish the shard \"" + final.string() +
                          "\": " + (error ? error.message() : std::strerror(errno)));
    finishedBytes_ += fs::file_size(final, error);
    partialSize_ = 0;
    samplesInShard_ = 0;
    lastCommitted_.push_back(final.filename().string());
    ++shardIndex_;
  }

  fs::path dir_;
  size_t sample_;
  int64_t shardSamples_, shardBytes_;
  int lockFd_ = -1;
  int fd_ = -1;
  archive *archive_ = nullptr;
  std::vector<Sample> pending_;
  uint64_t nextKey_ = 0;
  uint64_t shardIndex_ = 0;
  uint64_t samplesInShard_ = 0;
  /// Bytes of the shards finished (renamed) and of the partial one's committed members.
  uint64_t finishedBytes_ = 0;
  uint64_t partialSize_ = 0;
  uint64_t resumedAt_ = 0;
  std::vector<std::string> lastCommitted_;
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
        const std::string path = archive_entry_pathname(entry);
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
