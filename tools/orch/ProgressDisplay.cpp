// Formats RunProgress for a terminal (ANSI redraw) or a log (plain lines).
#include "ProgressDisplay.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace orch {
namespace {

std::string duration(double seconds) {
  const long total = long(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ldh%02ldm", total / 3600, (total / 60) % 60);
  else if (total >= 60)
    std::snprintf(text, sizeof text, "%ldm%02lds", total / 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%lds", total);
  return text;
}

std::string rowsLine(const runtime::RunProgress &progress) {
  // A resumed run counts the rows an earlier run finished as done from the start.
  // Rows the run's stop left unfinished are not done.
  const uint64_t done = progress.finished - progress.unfinished + progress.doneEarlier;
  std::string line =
      "orch: " + std::to_string(done) + " of " +
      (progress.total ? std::to_string(*progress.total)
                      : std::to_string(progress.admitted + progress.doneEarlier) + " admitted") +
      " source rows done (" + std::to_string(progress.written) + " written, " +
      std::to_string(progress.failed) + " failed";
  if (progress.unfinished)
    line += ", " + std::to_string(progress.unfinished) + " unfinished";
  if (progress.doneEarlier)
    line +=
        "; resumed: " + std::to_string(progress.doneEarlier) +
        (progress.total ? " of " + std::to_string(*progress.total) : std::string()) +
        " rows done earlier" +
        (progress.failedEarlier ? ", " + std::to_string(progress.failedEarlier) + " of them failed"
                                : std::string());
  line += "), " + duration(progress.seconds);
  // Time left at this run's own pace (the rows done earlier took none of its time).
  // None once the run stopped: what is left will not run.
  if (progress.total && progress.finished > 0 && done < *progress.total && !progress.unfinished)
    line +=
        ", about " +
        duration(progress.seconds * double(*progress.total - done) / double(progress.finished)) +
        " left";
  return line;
}

} // namespace

ProgressDisplay::ProgressDisplay(bool terminal, std::chrono::milliseconds plainInterval)
    : terminal_(terminal), plainInterval_(plainInterval) {}

std::chrono::milliseconds ProgressDisplay::interval() const {
  return terminal_ ? std::chrono::milliseconds(250) : plainInterval_;
}

void ProgressDisplay::show(const runtime::RunProgress &progress) {
  llvm::raw_ostream &out = llvm::errs();
  if (!progress.phase.empty()) {
    // Before the first row: one line, which the rows' display then draws over.
    out << (terminal_ ? "\x1b[2K" : "") << "orch: " << progress.phase << "\n";
    out.flush();
    linesDrawn_ = terminal_ ? 1 : 0;
    return;
  }
  if (!terminal_) {
    out << rowsLine(progress) << ", " << progress.grainsRun << " grains run\n";
    out.flush();
    return;
  }
  // Back to the top of the previous drawing, then redraw every line.
  if (linesDrawn_)
    out << "\x1b[" << linesDrawn_ << "F";
  unsigned lines = 0;
  out << "\x1b[2K" << rowsLine(progress) << "\n";
  ++lines;
  for (const runtime::CallProgress &call : progress.calls) {
    if (call.known == 0)
      continue;
    out << "\x1b[2K"
        << "orch:   " << call.name << ": " << call.done << "/" << call.known << " grains, "
        << llvm::format("%.0f", double(call.done) / std::max(1e-3, progress.seconds)) << "/s";
    if (call.batches)
      out << ", batches "
          << llvm::format("%.0f", 100.0 * double(call.grains) / double(call.batches) /
                                      double(std::max<int64_t>(1, call.batchLimit)))
          << "% full";
    out << "\n";
    ++lines;
  }
  linesDrawn_ = lines;
  out.flush();
}

void ProgressDisplay::finish() { llvm::errs().flush(); }

} // namespace orch
