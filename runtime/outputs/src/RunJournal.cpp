// The run journal's files: `lock` (held with flock while a run writes), `run` (the fingerprint
// of the plan and its inputs, and whether the run finished) and `commits` (one line per
// committed source row: where its rows ended in each sink). Lines are written whole with one
// write each; a line cut short by a crash is ignored and cut off when the run resumes.
#include "orch/runtime/outputs/RunJournal.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanFingerprint.h"
#include "orch/plan/Sha256.h"
#include "orch/runtime/outputs/CrashQuarantine.h"
#include "orch/runtime/outputs/OutputFiles.h"

#include "GrainCheckpoints.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char *kMagic = "orch-run-journal 1";

uint64_t key(uint32_t source, uint64_t row) { return uint64_t(source) << 48 | row; }

/// Names are written with %-escapes for what would split a line or a field.
std::string escapeName(const std::string &name) {
  std::string out;
  for (unsigned char c : name) {
    if (c <= 0x20 || c == '%' || c == 0x7f) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string unescapeName(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += char(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

/// Replaces `path` with `text` atomically (a crash leaves the old or the new file), through
/// `temporary`; never through a symbolic link planted at either name.
bool replaceFile(const std::string &temporary, const fs::path &path, const std::string &text) {
  ::unlink(temporary.c_str());
  const int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return false;
  const bool ok = writeAll(fd, text) && ::fdatasync(fd) == 0;
  ::close(fd);
  std::error_code error;
  if (ok)
    fs::rename(temporary, path, error);
  return ok && !error;
}

struct Commit {
  uint32_t source = 0;
  uint64_t row = 0;
  char status = 'w';
  uint64_t errorsSize = 0;
  std::vector<SinkRange> ranges;
};

std::string formatCommit(const Commit &commit) {
  std::string line = std::to_string(commit.source) + " " + std::to_string(commit.row) + " " +
                     commit.status + " " + std::to_string(commit.errorsSize) + " " +
                     std::to_string(commit.ranges.size());
  for (const SinkRange &range : commit.ranges) {
    line += " " + std::to_string(range.begin) + " " + std::to_string(range.end) + " " +
            std::to_string(range.names.size());
    for (const std::string &name : range.names)
      line += " " + escapeName(name);
  }
  return line + "\n";
}

std::optional<Commit> parseCommit(const std::string &line, size_t sinks) {
  std::istringstream in(line);
  Commit commit;
  size_t count = 0;
  if (!(in >> commit.source >> commit.row >> commit.status >> commit.errorsSize >> count) ||
      count != sinks)
    return std::nullopt;
  for (size_t s = 0; s < count; ++s) {
    SinkRange range;
    size_t names = 0;
    if (!(in >> range.begin >> range.end >> names))
      return std::nullopt;
    for (size_t n = 0; n < names; ++n) {
      std::string name;
      if (!(in >> name))
        return std::nullopt;
      range.names.push_back(unescapeName(name));
    }
    commit.ranges.push_back(std::move(range));
  }
  return commit;
}

std::map<std::string, std::string> readHeader(const fs::path &path) {
  std::map<std::string, std::string> fields;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kMagic)
    return fields;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space != std::string::npos)
      fields[line.substr(0, space)] = line.substr(space + 1);
  }
  return fields;
}

/// " (Call `ocr`: batch 8 → 16; ...)": how `plan` differs from the one the journal kept.
std::string changesSince(const fs::path &kept, const plan::Plan &plan) {
  std::ifstream in(kept, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto decoded = plan::decodePlan(bytes);
  const plan::Plan *before = std::get_if<plan::Plan>(&decoded);
  if (bytes.empty() || !before)
    return "";
  std::vector<std::string> changes = plan::describePlanChanges(*before, plan);
  std::string text;
  const size_t shown = std::min<size_t>(changes.size(), 5);
  for (size_t i = 0; i < shown; ++i)
    text += (i ? "; " : "") + changes[i];
  if (changes.size() > shown)
    text += "; and " + std::to_string(changes.size() - shown) + " more";
  return text.empty() ? "" : " (" + text + ")";
}

/// Whether the plan kept at `kept`, which the journal's header fingerprints as `recorded`, does
/// what `meaning` does: a journal written by an earlier version of orch, whose plan encoding
/// differed (format 1.x), resumes when its plan, read by this version, is this plan.
bool keptPlanMeans(const fs::path &kept, const std::string &recorded, const std::string &meaning) {
  std::ifstream in(kept, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty() || plan::sha256Hex(bytes) != recorded)
    return false;
  auto decoded = plan::decodePlan(bytes);
  const plan::Plan *before = std::get_if<plan::Plan>(&decoded);
  return before && plan::planMeaning(*before) == meaning;
}

} // namespace

std::unique_ptr<RunJournal> RunJournal::open(const JournalOptions &options, const plan::Plan &plan,
                                             const std::string &inputs, std::string &error) {
  std::unique_ptr<RunJournal> journal(new RunJournal);
  journal->dir_ = options.dir;
  const fs::path dir(options.dir);
  std::error_code fsError;
  fs::create_directories(dir, fsError);
  if (fsError) {
    error = "cannot create the run journal \"" + options.dir + "\": " + fsError.message();
    return nullptr;
  }
  // One run at a time writes these outputs.
  const fs::path lockPath = dir / "lock";
  journal->lockFd_ = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (journal->lockFd_ < 0) {
    error = "cannot open \"" + lockPath.string() + "\": " + std::strerror(errno);
    return nullptr;
  }
  if (::flock(journal->lockFd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    std::ifstream(lockPath) >> holder;
    error = "another orch run (pid " + (holder.empty() ? std::string("?") : holder) +
            ") is writing the outputs of pipeline '" + plan.pipelineName + "' (its journal \"" +
            options.dir + "\" is locked); wait for it, or stop it";
    return nullptr;
  }
  if (::ftruncate(journal->lockFd_, 0) == 0)
    writeAll(journal->lockFd_, std::to_string(::getpid()) + "\n");

  // What the plan does, not where its text put things: a comment or `orchc fmt` between a
  // killed run and its resume keeps it.
  const std::string meaning = plan::planMeaning(plan);
  const std::string planHash = plan::sha256Hex(meaning);
  const std::string inputsHash = plan::sha256Hex(inputs);
  const fs::path runPath = dir / "run";
  const fs::path commitsPath = dir / "commits";
  std::map<std::string, std::string> previous = readHeader(runPath);
  // A run that committed nothing, kept no value and crashed on no row (it could not start)
  // leaves nothing to resume; one that crashed on its first row left only that row's quarantine.
  auto holdsSome = [](const fs::path &path) {
    std::error_code failed;
    return fs::file_size(path, failed) > 0 && !failed;
  };
  const bool committedSome =
      holdsSome(commitsPath) || holdsSome(dir / "values") || holdsSome(dir / "crashed");
  const bool exists = !previous.empty() && committedSome;
  const bool samePlan = exists && (previous["plan"] == planHash ||
                                   keptPlanMeans(dir / "plan", previous["plan"], meaning));
  const bool same = samePlan && previous["inputs"] == inputsHash;
  const bool finished = previous["state"] == "complete";
  if (exists && !finished && !same && !options.restart) {
    const bool otherPlan = !samePlan;
    error = "\"" + options.dir + "\" holds an unfinished run of " +
            (otherPlan ? std::string("another version of this pipeline")
                       : std::string("this pipeline on other inputs")) +
            (otherPlan ? changesSince(dir / "plan", plan) : std::string()) +
            "; run with --restart to start over (its outputs are replaced), or restore the " +
            (otherPlan ? "program" : "inputs") + " to resume it";
    return nullptr;
  }
  // A --retry-failed that was stopped while it took the retried rows out of the outputs left
  // its intent: the run that follows completes it, whatever its flags.
  std::error_code intentError;
  const bool retryInterrupted = fs::exists(dir / "retry", intentError);
  const bool retryFailed = options.retryFailed || (retryInterrupted && !options.restart);
  journal->resuming_ = same && !options.restart && (!finished || retryFailed);
  if (options.retryFailed && !journal->resuming_ && !options.restart)
    journal->notice_ = "--retry-failed: \"" + options.dir + "\" holds " +
                       (!exists     ? std::string("no earlier run")
                        : !samePlan ? "a run of another version of this pipeline" +
                                          changesSince(dir / "plan", plan)
                                    : std::string("a run of this pipeline on other inputs")) +
                       ", so every source row ran";
  journal->sinkResume_.assign(plan.sinks.size(), SinkResume{});

  if (journal->resuming_) {
    // Read the committed rows; a last line cut short by a crash is dropped.
    std::ifstream in(commitsPath, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t good = 0;
    for (size_t at = 0; at < content.size();) {
      const size_t newline = content.find('\n', at);
      if (newline == std::string::npos)
        break;
      std::optional<Commit> commit =
          parseCommit(content.substr(at, newline - at), plan.sinks.size());
      if (!commit)
        break;
      good = newline + 1;
      at = newline + 1;
      const bool retry = retryFailed && commit->status == 'f';
      // 'r': what a retried row had published (a shard it ended) before a retry took its rows
      // out; the row itself is in a later record, or runs again.
      const bool retired = commit->status == 'r';
      for (size_t s = 0; s < plan.sinks.size(); ++s) {
        SinkResume &sink = journal->sinkResume_[s];
        const SinkRange &range = commit->ranges[s];
        sink.size = std::max(sink.size, range.end);
        sink.names.insert(sink.names.end(), range.names.begin(), range.names.end());
        sink.nameEnds.insert(sink.nameEnds.end(), range.names.size(), range.end);
        if (retired) {
          sink.retiredNames.insert(sink.retiredNames.end(), range.names.begin(), range.names.end());
        } else {
          // Written again since (the retried row succeeded): a name of the output again.
          for (const std::string &name : range.names)
            std::erase(sink.retiredNames, name);
        }
        if (retry) {
          if (range.end > range.begin)
            sink.dropRanges.emplace_back(range.begin, range.end);
          sink.dropNames.insert(sink.dropNames.end(), range.names.begin(), range.names.end());
        }
      }
      if (!retry && !retired)
        journal->done_.insert(key(commit->source, commit->row));
      if (commit->status == 'f')
        journal->failed_.insert(key(commit->source, commit->row));
      else
        journal->failed_.erase(key(commit->source, commit->row));
      journal->errorsKeep_ = retryFailed ? 0 : commit->errorsSize;
    }
    journal->commitsKept_ = good;
  }
  // Rows an earlier run crashed on are failed unread (a retry runs them again).
  if (journal->resuming_ && !retryFailed)
    for (const CrashedRow &row : readCrashedRows(journal->crashedRowsPath()))
      journal->crashed_.emplace(key(row.source, row.row), crashedRowMessage(row));
  journal->checkpoints_ = std::make_unique<GrainCheckpoints>(plan);
  if (journal->resuming_) {
    // The values finished grains had: a resumed run does not run those grains again (rows
    // that are done need none of theirs).
    const RunJournal &reader = *journal;
    journal->checkpoints_->load(
        (dir / "values").string(),
        [&reader](uint32_t source, uint64_t row) { return !reader.isDone(source, row); },
        [&reader](uint32_t source, uint64_t row) {
          return reader.failed_.count(key(source, row)) != 0;
        });
  }
  if (!journal->resuming_)
    journal->sinkResume_.clear();
  journal->header_ =
      kMagic + std::string("\nplan ") + planHash + "\ninputs " + inputsHash + "\nstate running\n";
  journal->planMeaning_ = meaning;
  journal->retryFailed_ = journal->resuming_ && retryFailed;
  journal->sinks_ = plan.sinks.size();
  return journal;
}

uint64_t RunJournal::doneFailed() const {
  return uint64_t(std::count_if(failed_.begin(), failed_.end(),
                                [this](uint64_t row) { return done_.count(row) != 0; }));
}

bool RunJournal::beginTakeUp(std::string &error) {
  if (!retryFailed_)
    return true;
  // The failed rows run again: their old records go, and the sinks cut their rows out, so
  // the records kept move back by what was cut out before them.
  const fs::path commitsPath = fs::path(dir_) / "commits";
  std::ifstream in(commitsPath);
  std::string line;
  size_t read = 0;
  while (read < commitsKept_ && std::getline(in, line)) {
    read += line.size() + 1;
    std::optional<Commit> commit = parseCommit(line, sinks_);
    if (!commit)
      continue;
    bool published = false;
    for (const SinkRange &range : commit->ranges)
      published = published || !range.names.empty();
    // A retried row's record goes; what it published stays as a record of its own ('r': a
    // shard it ended is still a shard), with nothing of the row in it.
    if (commit->status == 'f' && !published)
      continue;
    for (size_t s = 0; s < sinks_; ++s) {
      uint64_t before = 0;
      for (const auto &[begin, end] : sinkResume_[s].dropRanges)
        if (end <= commit->ranges[s].begin)
          before += end - begin;
      commit->ranges[s].begin -= before;
      commit->ranges[s].end -= before;
      if (commit->status == 'f')
        commit->ranges[s].end = commit->ranges[s].begin;
    }
    if (commit->status == 'f')
      commit->status = 'r';
    // The errors journal starts afresh (the failed rows' lines go; they run again).
    commit->errorsSize = 0;
    retryCommits_ += formatCommit(*commit);
  }
  // The intent, durable before any sink changes: a run stopped from here on is completed by
  // the next one, which finds the outputs part cut and part not (RowSink::takeUp).
  if (!replaceFile(dir_ + "/retry.new", fs::path(dir_) / "retry", retryCommits_)) {
    error = "cannot write the run journal \"" + dir_ + "/retry\": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool RunJournal::start(std::string &error) {
  const fs::path dir(dir_);
  const fs::path runPath = dir / "run";
  const fs::path commitsPath = dir / "commits";
  // A fresh run gets a fresh header and no commits; a resumed one appends after what was kept
  // (a last line cut short by a crash goes); a retry replaces them with the records it keeps.
  if (retryFailed_ && !replaceFile(commitsPath.string() + ".retry", commitsPath, retryCommits_)) {
    error = "cannot rewrite \"" + commitsPath.string() + "\": " + std::strerror(errno);
    return false;
  }
  commitsFd_ = ::open(
      commitsPath.c_str(),
      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (resuming_ ? 0 : O_TRUNC), 0644);
  if (commitsFd_ < 0 ||
      (resuming_ && !retryFailed_ && ::ftruncate(commitsFd_, off_t(commitsKept_)) != 0)) {
    error = "cannot write \"" + commitsPath.string() + "\": " + std::strerror(errno);
    return false;
  }
  retryCommits_.clear();
  // The kept values: those of the rows that run again only (a fresh run: none).
  const fs::path valuesPath = dir / "values";
  int valuesFd = -1;
  if (!checkpoints_->replaceStore(valuesPath.string()) ||
      (valuesFd = ::open(valuesPath.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)) < 0) {
    error = "cannot write \"" + valuesPath.string() + "\": " + std::strerror(errno);
    return false;
  }
  checkpoints_->attach(valuesFd);
  // The plan itself, so that a refused resume can say what changed.
  if (!replaceFile(dir_ + "/plan.new", dir / "plan", planMeaning_) ||
      !replaceFile(runPath.string() + ".new", runPath, header_)) {
    error = "cannot write the run journal \"" + runPath.string() + "\": " + std::strerror(errno);
    return false;
  }
  // Whatever a stopped retry meant to do is done; a fresh run has crashed on nothing yet.
  ::unlink((dir / "retry").c_str());
  if (!resuming_)
    ::unlink(crashedRowsPath().c_str());
  return true;
}

RunJournal::~RunJournal() {
  if (commitsFd_ >= 0)
    ::close(commitsFd_);
  if (lockFd_ >= 0)
    ::close(lockFd_); // releases the lock
}

bool RunJournal::isDone(uint32_t source, uint64_t row) const {
  return done_.count(key(source, row)) != 0;
}

const std::string *RunJournal::crashedEarlier(uint32_t source, uint64_t row) const {
  auto found = crashed_.find(key(source, row));
  return found == crashed_.end() ? nullptr : &found->second;
}

const SinkResume *RunJournal::sinkResume(size_t sink) const {
  return sink < sinkResume_.size() ? &sinkResume_[sink] : nullptr;
}

bool RunJournal::commit(const RootResult &root, const std::vector<SinkRange> &ranges,
                        uint64_t errorsSize, std::string &error) {
  const char status = root.status == RootStatus::Written   ? 'w'
                      : root.status == RootStatus::Dropped ? 'd'
                                                           : 'f';
  committedFailures_ += status == 'f';
  // The Dedup decisions the row was decided with go first (a killed run's resume indexes them).
  checkpoints_->flushDecisions();
  const off_t before = ::lseek(commitsFd_, 0, SEEK_END);
  if (writeAll(commitsFd_,
               formatCommit(Commit{root.source, root.sourceRow, status, errorsSize, ranges})))
    return true;
  error = "cannot write the run journal \"" + dir_ + "/commits\": " + std::strerror(errno);
  // A record cut short is no record.
  if (before >= 0 && ::ftruncate(commitsFd_, before) != 0)
    error += " (and a line cut short remains; resuming ignores it)";
  return false;
}

const Value *RunJournal::recall(uint32_t node, uint64_t key) const {
  return checkpoints_->recall(node, key);
}

size_t RunJournal::recallable() const { return checkpoints_->recallable(); }

void RunJournal::keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                      const Value &value) {
  checkpoints_->keep(node, key, source, sourceRow, value);
}

std::vector<DedupDecision> RunJournal::takeDedupHistory() { return checkpoints_->takeDecisions(); }

void RunJournal::keepDedupDecision(const DedupDecision &decision) {
  checkpoints_->keepDecision(decision);
}

void RunJournal::sync() {
  checkpoints_->sync();
  ::fdatasync(commitsFd_);
}

void RunJournal::complete() {
  std::string header = header_;
  const std::string running = "state running\n";
  header.replace(header.find(running), running.size(), "state complete\n");
  // Kept values serve a resume or a retry of failed rows; with no failed row, neither comes.
  if (committedFailures_ == 0 && doneFailed() == 0)
    checkpoints_->discard();
  else
    checkpoints_->flush();
  ::fdatasync(commitsFd_);
  replaceFile(dir_ + "/run.new", fs::path(dir_) / "run", header);
}

} // namespace orch::runtime
