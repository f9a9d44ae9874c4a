// The run journal's files: `lock` (held with flock while a run writes), `run` (the fingerprint
// of the plan and its inputs, and whether the run finished) and `commits` (one line per
// committed source row: its outcome and each sink's resume record, kept as the sink wrote it).
// Lines are written whole, those of a round's roots with one write (group commit); a line cut
// short by a crash is ignored and cut off when the run resumes.
#include "orch/runtime/outputs/RunJournal.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanFingerprint.h"
#include "orch/plan/Sha256.h"
#include "orch/runtime/outputs/CrashQuarantine.h"
#include "orch/runtime/outputs/OutputFiles.h"
#include "orch/runtime/outputs/SinkExtents.h"

#include "GrainCheckpoints.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <signal.h>
#include <sstream>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

/// The journal's format: 2 keeps each sink's record as the sink wrote it. Format 1 (orch before
/// opaque records) kept an extent per sink ("BEGIN END COUNT NAME..."); such a journal is read
/// as the extent records its sinks would write now, and rewritten in format 2 when resumed
/// (each line is read in the format it is in: parseCommit).
constexpr const char *kMagic = "orch-run-journal 2";
constexpr const char *kMagicFormat1 = "orch-run-journal 1";

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
  /// Each sink's resume record (RowSink::resumeRecord).
  std::vector<std::string> records;
};

/// A record is one field: '=' and its %-escaped bytes (so that "" is a field too).
std::string formatCommit(const Commit &commit) {
  std::string line = std::to_string(commit.source) + " " + std::to_string(commit.row) + " " +
                     commit.status + " " + std::to_string(commit.errorsSize) + " " +
                     std::to_string(commit.records.size());
  for (const std::string &record : commit.records)
    line += " =" + escapeField(record);
  return line + "\n";
}

/// Format 1's field for a sink, "BEGIN END COUNT NAME...", as an extent record.
std::optional<std::string> readFormat1Range(std::istringstream &in) {
  ExtentRecord extent;
  size_t names = 0;
  if (!(in >> extent.begin >> extent.end >> names) || extent.end < extent.begin)
    return std::nullopt;
  for (size_t n = 0; n < names; ++n) {
    std::string name;
    std::optional<std::string> unescaped;
    if (!(in >> name) || !(unescaped = unescapeField(name)))
      return std::nullopt;
    extent.names.push_back(std::move(*unescaped));
  }
  return encodeExtent(extent);
}

/// A line of either format: each says which (a format-2 record starts with '=', a format-1
/// range with a number), so that a resume killed while it rewrote format-1 records in format 2
/// (before `run`'s header says 2) reads them all.
std::optional<Commit> parseCommit(const std::string &line, size_t sinks) {
  std::istringstream in(line);
  Commit commit;
  size_t count = 0;
  if (!(in >> commit.source >> commit.row >> commit.status >> commit.errorsSize >> count) ||
      count != sinks)
    return std::nullopt;
  in >> std::ws;
  const bool format1 = in.peek() != '=';
  for (size_t s = 0; s < count; ++s) {
    std::optional<std::string> record;
    if (format1) {
      record = readFormat1Range(in);
    } else if (std::string field; in >> field && field.front() == '=') {
      record = unescapeField(std::string_view(field).substr(1));
    }
    if (!record)
      return std::nullopt;
    commit.records.push_back(std::move(*record));
  }
  return commit;
}

/// What becomes of a committed row's rows in a run that takes the outputs up.
RecordFate fateOf(const Commit &commit, bool retryFailed) {
  // 'r': what a retried row had published (a shard it ended) before a retry took its rows
  // out; the row itself is in a later record, or runs again.
  if (commit.status == 'r')
    return RecordFate::Retired;
  return retryFailed && commit.status == 'f' ? RecordFate::RunsAgain : RecordFate::Kept;
}

std::map<std::string, std::string> readHeader(const fs::path &path) {
  std::map<std::string, std::string> fields;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || (line != kMagic && line != kMagicFormat1))
    return fields;
  fields["format"] = line == kMagic ? "2" : "1";
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

/// Calls `visit` with each whole record of the commits file at `path`, up to `limit` bytes,
/// and stops at the first line that is not one (cut short by a crash): the bytes read.
uint64_t forEachCommit(const fs::path &path, size_t sinks, uint64_t limit,
                       const std::function<void(const Commit &)> &visit) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  uint64_t good = 0;
  while (good < limit && std::getline(in, line) && !in.eof()) {
    std::optional<Commit> commit = parseCommit(line, sinks);
    if (!commit)
      break;
    good += line.size() + 1;
    visit(*commit);
  }
  return good;
}

/// What a user should know when the commits file at `path` holds more than its first `kept`
/// bytes of whole records: nothing when the rest is one line cut short (a crash appending it),
/// else that a line before the last is damaged and how many lines are ignored with it.
std::optional<std::string> damagedCommits(const fs::path &path, uint64_t kept) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  uint64_t offset = 0;
  uint64_t number = 0;
  uint64_t damagedAt = 0;
  uint64_t ignored = 0;
  while (std::getline(in, line) && !in.eof()) {
    ++number;
    if (offset >= kept) {
      damagedAt = damagedAt ? damagedAt : number;
      ++ignored;
    }
    offset += line.size() + 1;
  }
  // A last line without its line break is what a crash leaves: not counted.
  if (ignored == 0)
    return std::nullopt;
  return "the run journal's commits file (" + path.string() + ") is damaged at line " +
         std::to_string(damagedAt) +
         " (a crash only cuts its last line short: it was changed by hand or on disk): it and "
         "the " +
         std::to_string(ignored - 1) + " line" + (ignored == 2 ? "" : "s") +
         " after it are ignored, and the source rows they recorded run again";
}

/// One sink's records, read from the commits file each time (SinkHistory).
class SinkRecords : public SinkHistory {
public:
  SinkRecords(fs::path commits, size_t sinks, uint64_t kept, size_t sink, bool retryFailed)
      : commits_(std::move(commits)), sinks_(sinks), kept_(kept), sink_(sink),
        retryFailed_(retryFailed) {}

  void forEach(const std::function<void(const SinkRecord &)> &visit) const override {
    forEachCommit(commits_, sinks_, kept_, [&](const Commit &commit) {
      visit(SinkRecord{commit.records[sink_], fateOf(commit, retryFailed_)});
    });
  }

private:
  fs::path commits_;
  size_t sinks_;
  uint64_t kept_;
  size_t sink_;
  bool retryFailed_;
};

} // namespace

namespace {

/// Whether the run whose pid `lockPath` names is gone: no such process, or one that exited and
/// was not reaped yet (a zombie: a harness that killed it without waiting). The lock is
/// released when the last process that holds it exits or execs; a run killed as it forked a
/// worker or an operator leaves a child that holds it a moment longer (`kill -9` then an
/// immediate resume).
bool holderIsGone(const fs::path &lockPath) {
  long pid = 0;
  std::ifstream(lockPath) >> pid;
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max() || pid == long(::getpid()))
    return false;
  if (::kill(pid_t(pid), 0) != 0)
    return errno == ESRCH;
  // The state follows the command's closing parenthesis in /proc/<pid>/stat.
  std::string stat;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() &&
         (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

/// Takes the lock, waiting up to two seconds while the run that held it is gone (its children
/// are exiting); false when another run holds it (`holderGone`: the run whose pid the lock
/// names is gone, and a process it started holds it).
bool lockUnlessAnotherRunHoldsIt(int fd, const fs::path &lockPath, bool &holderGone) {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  holderGone = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    holderGone = holderIsGone(lockPath);
    if (std::chrono::steady_clock::now() >= giveUp || !holderGone)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
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
  if (bool holderGone; !lockUnlessAnotherRunHoldsIt(journal->lockFd_, lockPath, holderGone)) {
    std::string holder;
    std::ifstream(lockPath) >> holder;
    error = holderGone
                ? "the run journal \"" + options.dir + "\" of pipeline '" + plan.pipelineName +
                      "' is locked by a process that a run now gone (pid " + holder +
                      ") started; stop it (`fuser -v " + lockPath.string() +
                      "` names it), or wait for it"
                : "another orch run (pid " + (holder.empty() ? std::string("?") : holder) +
                      ") is writing the outputs of pipeline '" + plan.pipelineName +
                      "' (its journal \"" + options.dir + "\" is locked); wait for it, or stop it";
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
  journal->format_ = previous["format"] == "1" ? 1 : 2;
  journal->sinks_ = plan.sinks.size();

  if (journal->resuming_) {
    // Read the committed rows; a last line cut short by a crash is dropped. The sinks read
    // their records themselves (sinkHistory).
    journal->commitsKept_ =
        forEachCommit(commitsPath, journal->sinks_, UINT64_MAX, [&](const Commit &commit) {
          const RecordFate fate = fateOf(commit, retryFailed);
          if (fate == RecordFate::Kept)
            journal->done_.insert(sourceRowKey(commit.source, commit.row));
          if (commit.status == 'f')
            journal->failed_.insert(sourceRowKey(commit.source, commit.row));
          else
            journal->failed_.erase(sourceRowKey(commit.source, commit.row));
          journal->errorsKeep_ = retryFailed ? 0 : commit.errorsSize;
        });
    std::error_code unread;
    if (journal->commitsKept_ < fs::file_size(commitsPath, unread) && !unread)
      if (std::optional<std::string> damage = damagedCommits(commitsPath, journal->commitsKept_))
        journal->notice_ = *damage;
    for (size_t s = 0; s < plan.sinks.size(); ++s)
      journal->histories_.push_back(std::make_unique<SinkRecords>(
          commitsPath, journal->sinks_, journal->commitsKept_, s, retryFailed));
  }
  // Rows an earlier run crashed on are failed unread (a retry runs them again).
  if (journal->resuming_ && !retryFailed)
    for (const CrashedRow &row : readCrashedRows(journal->crashedRowsPath()))
      journal->crashed_.emplace(sourceRowKey(row.source, row.row), crashedRowMessage(row));
  journal->checkpoints_ = std::make_unique<GrainCheckpoints>(plan);
  if (journal->resuming_) {
    // The values finished grains had: a resumed run does not run those grains again (rows
    // that are done need none of theirs, but a failed row's stay for a later --retry-failed,
    // through any number of plain resumes).
    const RunJournal &reader = *journal;
    const auto failed = [&reader](uint32_t source, uint64_t row) {
      return reader.failed_.count(sourceRowKey(source, row)) != 0;
    };
    journal->checkpoints_->load((dir / "values").string(),
                                [&](uint32_t source, uint64_t row) {
                                  return !reader.isDone(source, row) || failed(source, row);
                                },
                                failed);
  }
  journal->header_ =
      kMagic + std::string("\nplan ") + planHash + "\ninputs " + inputsHash + "\nstate running\n";
  journal->planMeaning_ = meaning;
  journal->retryFailed_ = journal->resuming_ && retryFailed;
  return journal;
}

uint64_t RunJournal::doneFailed() const {
  return uint64_t(std::count_if(failed_.begin(), failed_.end(),
                                [this](uint64_t row) { return done_.count(row) != 0; }));
}

bool RunJournal::beginTakeUp(const std::vector<std::unique_ptr<RowSink>> &sinks,
                             std::string &error) {
  if (!retryFailed_)
    return true;
  // The failed rows run again: their old records go, and the sinks cut their rows out; each
  // sink says what its records become (the records kept move back by what was cut out before
  // them).
  forEachCommit(fs::path(dir_) / "commits", sinks_, commitsKept_, [&](Commit commit) {
    const RecordFate fate = fateOf(commit, true);
    bool published = false;
    for (size_t s = 0; s < sinks_; ++s) {
      commit.records[s] = sinks[s]->recordAfterRetry(SinkRecord{commit.records[s], fate});
      published = published || !commit.records[s].empty();
    }
    // A retried row's record goes; what it published stays as a record of its own ('r': a
    // shard it ended is still a shard), with nothing of the row in it.
    if (fate == RecordFate::RunsAgain) {
      if (!published)
        return;
      commit.status = 'r';
    }
    // The errors journal starts afresh (the failed rows' lines go; they run again).
    commit.errorsSize = 0;
    retryCommits_ += formatCommit(commit);
  });
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
  if (resuming_ && !retryFailed_ && format_ == 1) {
    // Appended records are format 2: the kept ones become format 2 too.
    forEachCommit(commitsPath, sinks_, commitsKept_,
                  [&](const Commit &commit) { retryCommits_ += formatCommit(commit); });
    commitsKept_ = retryCommits_.size();
  }
  if ((retryFailed_ || (resuming_ && format_ == 1)) &&
      !replaceFile(commitsPath.string() + ".retry", commitsPath, retryCommits_)) {
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
  // Where the next commit goes (the file is written by this run only: it holds the lock).
  commitsEnd_ = uint64_t(std::max<off_t>(::lseek(commitsFd_, 0, SEEK_END), 0));
  // Records wait for a group write where their space can be reserved first (a full disk then
  // refuses the record that does not fit, when it is made); elsewhere each is written at once.
  groupsRecords_ = reserved_.begin(commitsFd_, commitsEnd_);
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
  if (commitsFd_ >= 0) {
    // Records still waiting (the run's Outputs wrote their rows and records already, unless
    // the journal is used on its own).
    std::string unwritten;
    writeCommits(unwritten);
    reserved_.release(commitsFd_, commitsEnd_);
    ::close(commitsFd_);
  }
  if (lockFd_ >= 0)
    ::close(lockFd_); // releases the lock
}

bool RunJournal::isDone(uint32_t source, uint64_t row) const {
  return done_.count(sourceRowKey(source, row)) != 0;
}

const std::string *RunJournal::crashedEarlier(uint32_t source, uint64_t row) const {
  auto found = crashed_.find(sourceRowKey(source, row));
  return found == crashed_.end() ? nullptr : &found->second;
}

const SinkHistory *RunJournal::sinkHistory(size_t sink) const {
  return sink < histories_.size() ? histories_[sink].get() : nullptr;
}

bool RunJournal::commit(const RootResult &root, std::vector<std::string> records,
                        uint64_t errorsSize, std::string &error) {
  const char status = root.status == RootStatus::Written   ? 'w'
                      : root.status == RootStatus::Dropped ? 'd'
                                                           : 'f';
  const std::string line =
      formatCommit(Commit{root.source, root.sourceRow, status, errorsSize, std::move(records)});
  if (groupsRecords_ &&
      !reserved_.reserve(commitsFd_, commitsEnd_ + waitingCommits_.size() + line.size())) {
    error = "cannot write the run journal \"" + dir_ + "/commits\": " + std::strerror(errno);
    return false;
  }
  committedFailures_ += status == 'f';
  // The Dedup decisions the row was decided with go first (a killed run's resume indexes them).
  checkpoints_->flushDecisions();
  waitingCommits_ += line;
  ++waitingRows_;
  checkpoints_->rowCommitted(root.source, root.sourceRow, status == 'f');
  return true;
}

bool RunJournal::writeCommits(std::string &error) {
  if (waitingCommits_.empty())
    return true;
  // One write: a crash leaves whole records and at most one cut short (ignored when resumed).
  const bool written = writeAll(commitsFd_, waitingCommits_);
  const int cause = errno;
  if (written) {
    commitsEnd_ += waitingCommits_.size();
    waitingCommits_.clear();
    waitingRows_ = 0;
    return true;
  }
  error = "cannot write the run journal \"" + dir_ + "/commits\": " + std::strerror(cause);
  // A record cut short is no record (and the space reserved past it goes with it).
  if (::ftruncate(commitsFd_, off_t(commitsEnd_)) != 0)
    error += " (and a line cut short remains; resuming ignores it)";
  reserved_.cutTo(commitsEnd_);
  return false;
}

uint64_t RunJournal::dropWaiting() {
  const uint64_t rows = waitingRows_;
  waitingCommits_.clear();
  waitingRows_ = 0;
  return rows;
}

const Value *RunJournal::recall(uint32_t node, uint64_t key) const {
  return checkpoints_->recall(node, key);
}

size_t RunJournal::recallable() const { return checkpoints_->recallable(); }

void RunJournal::keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                      const Value &value, bool cheap) {
  checkpoints_->keep(node, key, source, sourceRow, value, cheap);
}

void RunJournal::flushKeptValuesIfDue(std::chrono::steady_clock::time_point now) {
  checkpoints_->flushIfDue(now);
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
  std::string unwritten;
  if (!writeCommits(unwritten))
    return; // not complete: a later run resumes
  reserved_.release(commitsFd_, commitsEnd_);
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
