// Runs one pipeline with the embedded runtime: .orch files are compiled first (diagnostics as
// orchc prints them), .plan files loaded and validated.
#include "RunCommand.h"

#include "ErrorsJournal.h"
#include "ProcessControl.h"
#include "ProgressDisplay.h"
#include "RunReports.h"

#include "orch/driver/CompileDriver.h"
#include "orch/ir/DiagnosticPrinter.h"
#include "orch/plan/OperatorCatalog.h"
#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPositions.h"
#include "orch/runtime/execution/MemorySize.h"
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/StandardOperators.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

namespace orch {
namespace {

using tools::allDevices;
using tools::logLine;
using tools::standardRegistry;
using tools::stopRequested;

/// Reads the coordinator's keys (or takes --insecure) for `--listen`; false after an error.
bool applyListenSecurity(RunCommandOptions &options) {
  runtime::CoordinatorOptions &coordinator = options.settings.coordinator;
  options.security.listen = coordinator.endpoint;
  std::optional<ListenSecurity> security = chooseListenSecurity(options.security);
  if (!security)
    return false;
  coordinator.curveKey = std::move(security->key);
  coordinator.authorizedKeys = std::move(security->workers);
  coordinator.loopbackOnly = security->loopbackOnly;
  if (!coordinator.endpoint.empty())
    // Peers take file descriptors: allow as many as the hard limit lets us (the coordinator
    // keeps half for sinks, sources and operators).
    tools::raiseFileDescriptorLimit(65536);
  return true;
}

/// This machine's usable CUDA devices (and, in `memory`, each one's bytes), looked up only when
/// a Call asks for GPUs. Where there
/// are none, such Calls get one line naming them all (they run their CPU implementations), or
/// an error for `require_gpu` (nullopt). In cluster mode the workers have the GPUs, so nothing
/// is reported here.
std::optional<int64_t> localGpuCount(const plan::Plan &plan, const RunCommandOptions &options,
                                     std::vector<uint64_t> &memory) {
  const std::string &listen = options.settings.coordinator.endpoint;
  std::vector<const plan::PlanCall *> wanting;
  for (const plan::PlanCall &call : plan.calls)
    if (call.gpu && (call.options.gpus > 0 || call.options.requireGpu))
      wanting.push_back(&call);
  if (wanting.empty())
    return 0;
  const stdlib::CudaDeviceCount devices = stdlib::countCudaDevices();
  memory = devices.memoryBytes;
  if (devices.count > 0 || !listen.empty())
    return devices.count;
  for (const plan::PlanCall *call : wanting)
    if (call->options.requireGpu) {
      llvm::errs() << "orch: error: call '" << call->name
                   << "' requires a GPU, but none is usable here (" << devices.reason << ")\n";
      return std::nullopt;
    }
  std::string names, ops;
  for (size_t i = 0; i < wanting.size(); ++i) {
    const char *separator = i == 0 ? "" : (i + 1 == wanting.size() ? " and " : ", ");
    names += separator + ("'" + wanting[i]->name + "'");
    ops += separator + wanting[i]->op;
  }
  llvm::errs() << "orch: " << (wanting.size() == 1 ? "call " : "calls ") << names
               << (wanting.size() == 1 ? " asks" : " ask")
               << " for a GPU, but none is usable here (" << devices.reason << "): " << ops
               << (wanting.size() == 1 ? " runs" : " run") << " on the CPU\n";
  return 0;
}

std::optional<plan::Plan> compileSource(const RunCommandOptions &options) {
  llvm::SourceMgr sources;
  DiagnosticPrintOptions printOptions;
  printOptions.programName = "orch";
  printOptions.colors = llvm::WithColor::defaultAutoDetectFunction()(llvm::errs());
  DiagnosticEngine diags([&](const Diagnostic &diagnostic) {
    printDiagnostic(sources, diagnostic, llvm::errs(), printOptions);
  });
  driver::CompileRequest request;
  request.frontend.overrides = options.overrides;
  std::optional<driver::Compilation> compiled =
      driver::compileFile(sources, options.inputPath, diags, request);
  return compiled ? std::move(compiled->plan) : std::nullopt;
}

std::optional<plan::Plan> loadPlan(const RunCommandOptions &options) {
  const std::string &path = options.inputPath;
  if (path.size() < 5 || path.compare(path.size() - 5, 5, ".plan") != 0)
    return compileSource(options);
  if (!options.overrides.empty()) {
    llvm::errs() << "orch: error: --set needs the .orch source; a compiled plan has its "
                    "params fixed\n";
    return std::nullopt;
  }
  auto loaded = plan::loadPlanFile(path);
  if (auto *error = std::get_if<plan::PlanDecodeError>(&loaded)) {
    llvm::errs() << "orch: error: " << error->message << "\n";
    return std::nullopt;
  }
  return std::get<plan::Plan>(std::move(loaded));
}

/// "orch:     replicas 1 -> 2 at 3.1 s: busy 98 % of 1 replica, ..." for each change that
/// automatic replicas made (docs/runtime.md, "Replicas").
/// A service-backed Call's requests (docs/models.md): how many, retried and failed, its tokens
/// and latencies.
void printServiceUsage(llvm::raw_ostream &out, const runtime::CallSummary &call) {
  const runtime::ServiceUsage &usage = call.service;
  const LatencyPercentiles latency = latencyPercentiles(usage.latencies);
  out << "orch:     requests: " << usage.requests << " (" << usage.retries << " retries, "
      << usage.failedRequests << " failed), up to " << call.inFlight
      << " batches open per replica; tokens " << usage.promptTokens << " prompt + "
      << usage.completionTokens << " completion; ";
  if (usage.latencies.empty())
    out << "no request was answered\n";
  else
    out << "latency p50 " << llvm::format("%.3f", latency.p50) << " s, p90 "
        << llvm::format("%.3f", latency.p90) << " s, p99 " << llvm::format("%.3f", latency.p99)
        << " s\n";
}

void printReplicaChanges(llvm::raw_ostream &out, const runtime::CallSummary &call) {
  uint32_t before = 1;
  for (const runtime::CallSummary::ReplicaChange &change : call.replicaChanges) {
    if (change.moved)
      out << "orch:     a replica moved at " << llvm::format("%.1f", change.at)
          << " s: " << change.why << "\n";
    else
      out << "orch:     replicas " << before << " -> " << change.replicas << " at "
          << llvm::format("%.1f", change.at) << " s: " << change.why << "\n";
    before = change.replicas;
  }
}

/// "orch:   dedup 'kept' (near): 120 decided, 14 duplicates dropped; 106 survivors indexed in
/// 33.1 KiB (320 B each)" for each Dedup node.
void printDedups(llvm::raw_ostream &out, const runtime::RunSummary &summary) {
  for (const runtime::DedupProgress &dedup : summary.dedups) {
    out << "orch:   dedup '" << dedup.name << "' (" << dedup.kind << "): " << dedup.decided
        << " decided, " << dedup.duplicates << " duplicate(s) dropped; " << dedup.indexed
        << " survivor(s) indexed in " << runtime::formatMemory(dedup.indexBytes);
    if (dedup.indexed)
      out << " (" << dedup.indexBytes / dedup.indexed << " B each)";
    if (dedup.retracted)
      out << "; " << dedup.retracted << " of them retracted (their rows failed)";
    out << "\n";
  }
}

/// "orch:   filter 'long' (p.orch:4:8): 27 kept, 50 dropped" for each filter.
void printFilters(llvm::raw_ostream &out, const plan::Plan &plan,
                  const runtime::RunSummary &summary) {
  for (const runtime::FilterProgress &filter : summary.filters) {
    out << "orch:   filter";
    if (!filter.name.empty())
      out << " '" << filter.name << "'";
    out << " (" << plan::sourceLocation(plan, filter.line, filter.column) << "): " << filter.kept
        << " kept, " << filter.dropped << " dropped";
    if (filter.failed)
      out << ", " << filter.failed << " not decided (the value or its condition failed)";
    out << "\n";
  }
}

/// A Call whose batches failed whole and whose grains then ran in split parts: it worked, but
/// at a fraction of its batch size, and the operator is probably at fault.
std::string rescuedBySplittingWarning(const runtime::CallSummary &call) {
  // A traceback's exception is enough for one line of the summary.
  const std::string cause = messageHeadline(call.splitCause);
  return "call '" + call.name + "': " + std::to_string(call.splitBatches) +
         " batch(es) failed whole and were split until their parts ran; " +
         std::to_string(call.rescuedGrains) +
         " grains were rescued this way (the first failure: " + cause +
         "). The operator fails a whole batch for what it does with some of it (a result "
         "count, a shape, memory), so the Call ran below its batch size: fix the operator, or "
         "lower `batch`";
}

/// Why the values held went more than a tenth over the budget (docs/runtime.md, "The value
/// budget"), or "" when they did not.
std::string overBudgetWarning(const runtime::RunSummary &summary) {
  const double budget = double(summary.valueBudget);
  const double peak = double(summary.peakBytesHeld);
  if (summary.valueBudget == 0 || peak <= 1.1 * budget)
    return "";
  using runtime::formatMemory;
  std::string text;
  llvm::raw_string_ostream out(text);
  out << "values held reached " << formatMemory(summary.peakBytesHeld) << ", "
      << llvm::format("%.2f", peak / budget) << " times the budget: ";
  // Each cause that took a large part of the excess is named.
  const double computed = double(summary.computedBytesAtPeak);
  const bool expressions = computed > 0 && computed >= (peak - budget) / 2;
  const bool batches = summary.batchesPastBudget > 0 && peak - computed > 1.1 * budget;
  const bool rowOverBudget = summary.largestRowBytes > summary.valueBudget;
  if (expressions)
    out << "values that expressions made (which the budget does not hold back) were "
        << formatMemory(summary.computedBytesAtPeak) << " of it";
  if (batches) {
    out << (expressions ? "; " : "") << summary.batchesPastBudget
        << " batch(es) went past it so that the run could go on (nothing else could): one source "
           "row held up to "
        << formatMemory(summary.largestRowBytes) << " and one batch's inputs took "
        << formatMemory(summary.largestBatchCopies) << " in copies";
  }
  if (!expressions && !batches)
    out << "batches sent before their results' sizes were known, and the rows admitted before "
           "any row's size was, held more than it";
  if (rowOverBudget && !batches) {
    out << "; one source row alone held " << formatMemory(summary.largestRowBytes)
        << ", more than the budget";
  } else if (!batches) {
    out << "; --max-live-roots bounds the rows that hold such values at once";
  } else if (!expressions) {
    // The promise holds where the budget has room for a row and a batch's copies, and a
    // batch's copies are at most a tenth of it (one may go past it).
    const uint64_t needed = std::max(summary.largestRowBytes + summary.largestBatchCopies,
                                     10 * summary.largestBatchCopies);
    out << "; a budget of about " << formatMemory(needed)
        << " holds a row and keeps a batch's copies within a tenth of it";
  }
  return out.str();
}

void printSummary(const plan::Plan &plan, const runtime::RunSummary &summary,
                  const runtime::RunRecorder &recorder, const ErrorsJournal &errors, bool quiet,
                  bool journaled) {
  llvm::raw_ostream &out = llvm::errs();
  out << "orch: pipeline '" << plan.pipelineName << "': " << summary.rows << " rows in "
      << llvm::format("%.2f", summary.seconds) << " s: " << summary.written << " written, "
      << summary.dropped << " dropped, " << summary.failed << " failed";
  if (summary.engine.membersSkipped)
    out << "; " << summary.engine.membersSkipped
        << " failed member(s) left out by reduce(..., failed: \"skip\")";
  if (summary.engine.duplicates)
    out << "; " << summary.engine.duplicates << " duplicate(s) dropped";
  if (errors.recorded() && errors.writeError().empty())
    out << " (see " << errors.path() << ")";
  if (const std::string stopped =
          stoppedRowsClause(summary.unfinished, summary.notStarted, journaled);
      !stopped.empty())
    out << "; " << stopped;
  if (summary.resumed) {
    out << "; resumed: " << summary.resumedRows << " source rows done by an earlier run were "
        << "skipped";
    if (summary.resumedFailed)
      out << " (" << summary.resumedFailed
          << " of them had failed and are still failed: --retry-failed runs them again)";
    if (summary.engine.grainsRecalled > 0)
      out << ", and " << summary.engine.grainsRecalled
          << " finished grains of the others were reused";
  }
  out << "\n";
  // Even with --quiet: the failed rows are counted, but their causes are not in the journal.
  if (!errors.writeError().empty())
    out << "orch: warning: the errors journal \"" << errors.path() << "\" could not be written ("
        << errors.writeError() << "): the failed rows counted above are not all listed there\n";
  if (quiet)
    return;
  printDedups(out, summary);
  printFilters(out, plan, summary);
  const FinishTimes finish = finishTimes(recorder);
  if (finish.first >= 0)
    out << "orch:   source rows finished: first at " << llvm::format("%.2f", finish.first)
        << " s, median " << llvm::format("%.2f", finish.median) << " s, last "
        << llvm::format("%.2f", finish.last) << " s\n";
  // Per Call and replica: busy seconds; per Call: reports that came back stale.
  std::vector<std::map<std::string, double>> busyByReplica(summary.calls.size());
  std::vector<uint64_t> stale(summary.calls.size(), 0);
  for (const runtime::BatchRecord &batch : recorder.batches()) {
    if (!batch.place.empty())
      busyByReplica[batch.call][batch.place] += batch.busy;
    stale[batch.call] += batch.outcome == "stale";
  }
  for (size_t c = 0; c < summary.calls.size(); ++c) {
    const runtime::CallSummary &call = summary.calls[c];
    if (call.batches == 0) {
      if (call.notNeeded)
        out << "orch:   call '" << call.name << "': no grains run, " << call.notNeeded
            << " not needed\n";
      continue;
    }
    out << "orch:   call '" << call.name << "': " << call.grains << " grains in " << call.batches
        << " batches (" << llvm::format("%.1f", double(call.grains) / double(call.batches))
        << " of " << call.batchLimit << " per batch, " << call.mixedBatches
        << " mixing source rows), busy " << llvm::format("%.2f", call.busySeconds) << " s";
    if (busyByReplica[c].size() > 1) {
      auto [least, most] =
          std::minmax_element(busyByReplica[c].begin(), busyByReplica[c].end(),
                              [](const auto &a, const auto &b) { return a.second < b.second; });
      out << " (" << llvm::format("%.2f", least->second) << "-"
          << llvm::format("%.2f", most->second) << " s on each of " << busyByReplica[c].size()
          << " replicas"
          // A replica moved to another worker (a late or replacement worker, its inputs) ran
          // in two places: each counts here.
          << (int64_t(busyByReplica[c].size()) > call.replicas
                  ? ", counted on each worker it ran on"
                  : "")
          << ")";
    }
    out << "; saturated " << llvm::format("%.2f", call.saturatedSeconds) << " s, starved "
        << llvm::format("%.2f", call.starvedSeconds) << " s";
    if (call.heldBackSeconds >= 0.005)
      out << ", held back by the value budget " << llvm::format("%.2f", call.heldBackSeconds)
          << " s";
    if (call.retries || call.skipped || call.suppressedByBarrier || call.cancelled || stale[c])
      out << ", " << call.retries << " retries, " << stale[c] << " stale, " << call.skipped
          << " skipped, " << call.suppressedByBarrier << " suppressed, " << call.cancelled
          << " cancelled";
    if (call.notNeeded)
      out << ", " << call.notNeeded << " not needed";
    out << "\n";
    if (!call.service.empty())
      printServiceUsage(out, call);
    printReplicaChanges(out, call);
  }
  uint64_t promptTokens = 0, completionTokens = 0;
  for (const runtime::CallSummary &call : summary.calls) {
    promptTokens += call.service.promptTokens;
    completionTokens += call.service.completionTokens;
  }
  if (promptTokens || completionTokens)
    out << "orch:   tokens: " << promptTokens + completionTokens << " (" << promptTokens
        << " prompt, " << completionTokens << " completion)\n";
  if (std::optional<Bottleneck> bottleneck = findBottleneck(summary))
    out << "orch:   " << (bottleneck->boundsTheRun() ? "bottleneck: " : "busiest call: ")
        << summary.calls[bottleneck->call].name << " (busy "
        << llvm::format("%.0f", 100 * bottleneck->busyShare) << " % of its "
        << summary.calls[bottleneck->call].replicas << " replica(s)' time"
        << (bottleneck->boundsTheRun() ? "" : "; no Call was busy half the run") << ")\n";
  const runtime::EngineStats &engine = summary.engine;
  out << "orch:   engine: " << engine.grainTransitions << " grain transitions, "
      << engine.grainsSkipped << " grains skipped, " << engine.grainsSuppressedByBarrier
      << " suppressed by barriers, " << engine.grainsCancelled << " cancelled, "
      << engine.grainsNotNeeded << " not needed, " << engine.batchRetries << " retries, "
      << engine.infrastructureFailures << " lost batches, " << engine.batchCrashes << " crashed, "
      << engine.batchTimeouts << " timed out, " << engine.staleReports << " stale reports\n";
  for (const runtime::CallSummary &call : summary.calls)
    if (rescuedBySplitting(call))
      out << "orch:   warning: " << rescuedBySplittingWarning(call) << "\n";
  if (engine.contractViolations)
    out << "orch:   warning: " << engine.contractViolations
        << " batch(es) broke their operator's contract (a wrong count or type of results); "
           "their rows failed as contract-violation, with the cause, in the errors journal\n";
  if (!summary.executor.empty())
    out << "orch:   workers: " << summary.executor << "\n";
  out << "orch:   values held: at most " << runtime::formatMemory(summary.peakBytesHeld);
  if (summary.valueBudget > 0)
    out << " (budget " << runtime::formatMemory(summary.valueBudget) << ")";
  out << "\n";
  if (const std::string over = overBudgetWarning(summary); !over.empty())
    out << "orch:   warning: " << over << "\n";
  if (summary.reorderPeakRows > 0)
    out << "orch:   source order: at most " << summary.reorderPeakRows
        << " finished source rows waited for an earlier one (about "
        << llvm::format("%.1f", double(summary.reorderPeakBytes) / (1024 * 1024))
        << " MiB of rows)\n";
  if (summary.startupSeconds > 0)
    out << "orch:   operator processes ready after " << llvm::format("%.2f", summary.startupSeconds)
        << " s (loading models)\n";
}

/// Where the sinks wrote: "out/*.md, out/docs.jsonl".
std::string describeOutputs(const plan::Plan &plan) {
  std::string text;
  for (const plan::PlanSink &sink : plan.sinks) {
    const std::string where = plan::sinkTarget(sink);
    if (!where.empty())
      text += (text.empty() ? "" : ", ") + where;
  }
  return text;
}

} // namespace

int runPipeline(RunCommandOptions options) {
  // First of all: a background job of a script starts with SIGINT ignored, and a signal that
  // came while the program compiled would be lost (the run then stops once it begins).
  tools::installStopHandlers(kRunInterrupted);
  std::optional<plan::Plan> plan = loadPlan(options);
  if (!plan)
    return kRunCannotRun;
  if (stopRequested.load()) {
    // Before any output is touched: a previous run's outputs stay as they are.
    llvm::errs() << "orch: interrupted before the run began; no output was touched\n";
    return kRunInterrupted;
  }
  std::vector<uint64_t> gpuMemory;
  const std::optional<int64_t> gpuCount = localGpuCount(*plan, options, gpuMemory);
  if (!gpuCount || (!options.settings.inProcess && !applyListenSecurity(options)))
    return kRunCannotRun;
  const runtime::OperatorRegistry registry = standardRegistry();
  ErrorsJournal errors(*plan, options.errorsPath.empty() ? plan->pipelineName + ".errors.jsonl"
                                                         : options.errorsPath);
  runtime::RunSettings &settings = options.settings;
  settings.gpuCount = *gpuCount;
  settings.gpuMemory = std::move(gpuMemory);
  settings.workerProgram = tools::siblingProgram("orch-worker");
  settings.log = logLine;
  runtime::RunOptions &runOptions = settings.run;
  runOptions.onRootFinished = [&](const runtime::RootResult &root,
                                  const std::function<void()> &keepAlive) {
    errors.record(root, keepAlive);
  };
  runOptions.openErrorsJournal = [&](uint64_t keep,
                                     bool retryingFailed) -> std::optional<std::string> {
    std::string problem;
    if (errors.open(keep, retryingFailed, problem))
      return std::nullopt;
    return problem;
  };
  runOptions.errorsJournalSize = [&] { return errors.size(); };
  runOptions.stopRequested = &stopRequested;
  ProgressDisplay display(llvm::errs().is_displayed());
  if (!options.quiet) {
    runOptions.onProgress = [&display](const runtime::RunProgress &progress) {
      display.show(progress);
    };
    runOptions.progressInterval = display.interval();
  }
  runtime::RunRecorder recorder;
  runOptions.recorder = &recorder;
  for (const std::string &note : runtime::notesBeforeRun(*plan, settings))
    llvm::errs() << "orch: note: " << note << "\n";
  const bool journaled = settings.journal;
  runtime::RunSummary summary = runtime::drivePlan(*plan, registry, std::move(settings));
  if (!summary.started) {
    llvm::errs() << "orch: error: " << *summary.error << "\n";
    return stopRequested.load() ? kRunInterrupted : kRunCannotRun;
  }
  display.finish();
  for (const std::string &note : summary.notes)
    llvm::errs() << "orch: note: " << note << "\n";
  printSummary(*plan, summary, recorder, errors, options.quiet, journaled);
  std::string reportError;
  if (summary.started && !options.metricsPath.empty() &&
      !writeMetrics(options.metricsPath, *plan, summary, recorder, errors.path(), journaled,
                    reportError))
    llvm::errs() << "orch: error: " << reportError << "\n";
  if (summary.started && !options.tracePath.empty() &&
      !writeTrace(options.tracePath, *plan, recorder, reportError))
    llvm::errs() << "orch: error: " << reportError << "\n";
  if (summary.started && !describeOutputs(*plan).empty())
    llvm::errs() << "orch: outputs: " << describeOutputs(*plan) << "\n";
  if (summary.error) {
    llvm::errs() << "orch: error: " << *summary.error << "\n";
    return stopRequested.load() ? kRunInterrupted : kRunCannotRun;
  }
  // Rows an earlier run failed are still failed: the job as a whole has failed rows.
  return summary.failed + summary.resumedFailed ? kRunRowsFailed : kRunOk;
}

} // namespace orch
