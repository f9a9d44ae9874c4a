// Writes --metrics and --trace files from a run's summary and records.
#include "RunReports.h"

#include "orch/plan/OperatorCatalog.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace orch {
namespace {

using Json = nlohmann::ordered_json;

bool writeJson(const std::string &path, const Json &json, std::string &error) {
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  // A message with bytes that are not UTF-8 (a file's name) is written with U+FFFD for them.
  out << json.dump(1, ' ', false, Json::error_handler_t::replace) << '\n';
  if (!out) {
    error = "cannot write \"" + path + "\"";
    return false;
  }
  return true;
}

/// Failed source rows: the first kShownFailures with their causes, and how many there were.
constexpr size_t kShownFailures = 100;

/// The entity under a source row that `path` names, for people: "Page 5", "Clip 2, Frame 3"
/// (the entity names of the failing Call's domain and its parents), or "" for the row itself.
std::string entityLabel(const plan::Plan &plan, const std::string &callName,
                        const std::vector<uint32_t> &path) {
  if (path.empty())
    return "";
  std::vector<std::string> names; // innermost first
  for (const plan::PlanNode &node : plan.nodes)
    if (node.kind == plan::NodeKind::Invoke && node.index < plan.calls.size() &&
        plan.calls[node.index].name == callName) {
      for (uint32_t d = node.domain; d < plan.domains.size(); d = plan.domains[d].parent)
        names.push_back(plan.domains[d].name);
      break;
    }
  // Outermost first, without the source's own domain: one name per ordinal.
  std::reverse(names.begin(), names.end());
  if (!names.empty())
    names.erase(names.begin());
  const bool named = names.size() == path.size();
  std::string label;
  for (size_t i = 0; i < path.size(); ++i)
    label += (i ? ", " : "") + (named ? names[i] : std::string("member")) + " " +
             std::to_string(path[i]);
  return label;
}

Json failuresOf(const plan::Plan &plan, const runtime::RunRecorder &recorder,
                const std::string &errorsJournal) {
  Json shown = Json::array();
  uint64_t total = 0;
  for (const runtime::RootRecord &root : recorder.roots()) {
    if (root.status != runtime::RootStatus::Failed || root.unfinished)
      continue;
    if (++total > kShownFailures)
      continue;
    Json entry = {{"source", plan.sources[root.source].op},
                  {"row", root.sourceRow},
                  {"label", root.label},
                  {"finished", root.finished}};
    if (root.cause) {
      entry["call"] = root.cause->call;
      entry["kind"] = runtime::failureKindName(root.cause->kind);
      entry["message"] = root.cause->message;
      entry["path"] = root.cause->path;
      entry["where"] = entityLabel(plan, root.cause->call, root.cause->path);
    }
    shown.push_back(entry);
  }
  return {{"total", total}, {"errors_journal", errorsJournal}, {"shown", shown}};
}

/// Members `reduce(x, failed: "skip")` left out: the first ones kept, and how many there were.
Json skippedMembersOf(const plan::Plan &plan, const runtime::RunRecorder &recorder) {
  Json shown = Json::array();
  for (const runtime::SkippedMemberRecord &skipped : recorder.skippedMembers())
    shown.push_back({{"source", plan.sources[skipped.source].op},
                     {"row", skipped.sourceRow},
                     {"label", skipped.label},
                     {"path", skipped.path},
                     {"where", entityLabel(plan, skipped.cause.call, skipped.path)},
                     {"call", skipped.cause.call},
                     {"kind", runtime::failureKindName(skipped.cause.kind)},
                     {"message", skipped.cause.message}});
  return {{"total", recorder.skippedMemberCount()}, {"shown", shown}};
}

/// A source row's status as the metrics and trace name it: written, dropped, failed, or
/// unfinished (the run stopped first).
const char *statusName(const runtime::RootRecord &root) {
  return root.unfinished ? "unfinished" : runtime::rootStatusName(root.status);
}

double secondsSince(std::chrono::steady_clock::time_point start,
                    std::chrono::steady_clock::time_point at) {
  return std::chrono::duration<double>(at - start).count();
}

} // namespace

double busyShare(const runtime::CallSummary &call, double runSeconds) {
  // A concurrent Call's replica has `in_flight` batches open at once: that is its full time.
  const double replicaSeconds =
      (call.replicaSeconds > 0 ? call.replicaSeconds : double(call.replicas) * runSeconds) *
      double(std::max<int64_t>(1, call.inFlight));
  return replicaSeconds > 0 ? call.busySeconds / replicaSeconds : 0.0;
}

LatencyPercentiles latencyPercentiles(std::vector<float> latencies) {
  LatencyPercentiles result;
  if (latencies.empty())
    return result;
  std::sort(latencies.begin(), latencies.end());
  auto rank = [&](double fraction) {
    const size_t index = size_t(std::ceil(fraction * double(latencies.size())));
    return double(latencies[std::min(latencies.size() - 1, index == 0 ? 0 : index - 1)]);
  };
  result.p50 = rank(0.50);
  result.p90 = rank(0.90);
  result.p99 = rank(0.99);
  result.max = double(latencies.back());
  return result;
}

std::optional<Bottleneck> findBottleneck(const runtime::RunSummary &summary) {
  std::optional<Bottleneck> busiest;
  for (size_t c = 0; c < summary.calls.size(); ++c) {
    const runtime::CallSummary &call = summary.calls[c];
    if (call.batches == 0 || summary.seconds <= 0)
      continue;
    const double share = busyShare(call, summary.seconds);
    if (!busiest || share > busiest->busyShare)
      busiest = Bottleneck{c, share};
  }
  return busiest;
}

std::string stoppedRowsClause(uint64_t unfinished, uint64_t notStarted, bool journaled) {
  if (unfinished == 0 && notStarted == 0)
    return "";
  std::string clause = unfinished ? std::to_string(unfinished) + " unfinished" : "";
  if (notStarted)
    clause += (clause.empty() ? "" : " and ") + std::to_string(notStarted) + " not started";
  return clause + (journaled ? " (the run stopped before them; running the same command again "
                               "resumes them)"
                             : " (the run stopped before them, and kept no journal "
                               "(--no-journal): a new run starts afresh)");
}

bool rescuedBySplitting(const runtime::CallSummary &call) {
  const double splitsPerItem = std::ceil(std::log2(double(std::max<int64_t>(2, call.batchLimit))));
  return call.rescuedGrains > 0 &&
         double(call.splitBatches) > double(call.failedAlone) * splitsPerItem;
}

std::string messageHeadline(const std::string &message) {
  std::vector<std::string> lines;
  for (size_t begin = 0; begin <= message.size();) {
    size_t end = message.find('\n', begin);
    if (end == std::string::npos)
      end = message.size();
    lines.push_back(message.substr(begin, end - begin));
    begin = end + 1;
  }
  // Indentation counts the margins of exception groups ("  | ", "  +-+--") too.
  auto indent = [](const std::string &line) { return line.find_first_not_of(" |+-"); };
  auto content = [&](const std::string &line) {
    const size_t at = indent(line);
    return at == std::string::npos ? std::string() : line.substr(at);
  };
  size_t lastFrame = std::string::npos;
  for (size_t i = 0; i < lines.size(); ++i)
    if (content(lines[i]).rfind("File \"", 0) == 0)
      lastFrame = i;
  if (lastFrame != std::string::npos) {
    // The exception is the first line after the last frame that is less indented than it
    // (the frame's code and carets are indented more).
    const size_t frameIndent = indent(lines[lastFrame]);
    for (size_t i = lastFrame + 1; i < lines.size(); ++i)
      if (!content(lines[i]).empty() && indent(lines[i]) < frameIndent)
        return content(lines[i]);
  }
  for (const std::string &line : lines)
    if (!content(line).empty())
      return line;
  return message;
}

std::string workerOfPlace(const std::string &place) {
  const size_t replica = place.find("/replica");
  return replica == std::string::npos ? place : place.substr(0, replica);
}

FinishTimes finishTimes(const runtime::RunRecorder &recorder) {
  std::vector<double> times;
  // Rows the run's stop left unfinished did not finish: they only ended with it.
  for (const runtime::RootRecord &root : recorder.roots())
    if (root.finished >= 0 && !root.unfinished)
      times.push_back(root.finished);
  FinishTimes result;
  if (times.empty())
    return result;
  std::sort(times.begin(), times.end());
  result.first = times.front();
  result.median = times[times.size() / 2];
  result.last = times.back();
  return result;
}

bool writeMetrics(const std::string &path, const plan::Plan &plan,
                  const runtime::RunSummary &summary, const runtime::RunRecorder &recorder,
                  const std::string &errorsJournal, bool journaled, std::string &error) {
  Json json;
  json["format"] = "orch-metrics";
  json["version"] = 1;
  json["pipeline"] = plan.pipelineName;
  // Relative paths below (the errors journal, the outputs) are relative to it.
  std::error_code noDirectory;
  json["run_directory"] = std::filesystem::current_path(noDirectory).string();
  json["wall_seconds"] = summary.seconds;
  json["journaled"] = journaled;
  if (summary.error)
    json["stopped"] = *summary.error;
  json["executor"] = summary.executor;
  if (!summary.executorCounters.empty()) {
    Json counters = Json::object();
    for (const auto &[name, count] : summary.executorCounters)
      counters[name] = count;
    json["executor_counters"] = counters;
  }
  if (std::optional<Bottleneck> bottleneck = findBottleneck(summary))
    json["bottleneck"] = {{"call", summary.calls[bottleneck->call].name},
                          {"busy_share", bottleneck->busyShare},
                          {"bounds_the_run", bottleneck->boundsTheRun()}};
  // Per worker (or thread): its batches and busy time, from the batch records.
  std::map<std::string, std::pair<uint64_t, double>> byWorker;
  for (const runtime::BatchRecord &batch : recorder.batches())
    if (!batch.place.empty()) {
      auto &[count, busy] = byWorker[workerOfPlace(batch.place)];
      ++count;
      busy += batch.busy;
    }
  json["workers"] = Json::array();
  for (const runtime::WorkerIdentity &worker : summary.workers) {
    Json entry = {{"name", worker.name},
                  {"host", worker.host},
                  {"key", worker.key},
                  {"joined", std::max(0.0, secondsSince(summary.startedAt, worker.joined))},
                  {"batches", byWorker[worker.name].first},
                  {"busy_seconds", byWorker[worker.name].second}};
    if (worker.lost) {
      entry["lost"] = secondsSince(summary.startedAt, *worker.lost);
      entry["lost_reason"] = worker.lostReason;
    }
    json["workers"].push_back(entry);
  }
  json["rows"] = {{"finished", summary.rows},
                  {"written", summary.written},
                  {"dropped", summary.dropped},
                  {"failed", summary.failed},
                  {"unfinished", summary.unfinished},
                  {"not_started", summary.notStarted},
                  {"done_earlier", summary.resumedRows},
                  {"failed_earlier", summary.resumedFailed},
                  {"sink_rows", summary.sinkRows}};
  json["failures"] = failuresOf(plan, recorder, errorsJournal);
  json["skipped_members"] = skippedMembersOf(plan, recorder);
  json["dedup"] = Json::array();
  for (const runtime::DedupProgress &dedup : summary.dedups)
    json["dedup"].push_back(
        {{"name", dedup.name},
         {"kind", dedup.kind},
         {"decided", dedup.decided},
         {"duplicates", dedup.duplicates},
         {"indexed", dedup.indexed},
         {"retracted", dedup.retracted},
         {"index_bytes", dedup.indexBytes},
         {"bytes_per_survivor", dedup.indexed ? dedup.indexBytes / dedup.indexed : 0}});
  json["filters"] = Json::array();
  for (const runtime::FilterProgress &filter : summary.filters)
    json["filters"].push_back({{"name", filter.name},
                               {"line", filter.line},
                               {"column", filter.column},
                               {"kept", filter.kept},
                               {"dropped", filter.dropped},
                               {"failed", filter.failed}});
  json["outputs"] = Json::array();
  for (size_t s = 0; s < summary.sinks.size() && s < plan.sinks.size(); ++s)
    json["outputs"].push_back({{"sink", summary.sinks[s].name},
                               {"target", plan::sinkTarget(plan.sinks[s])},
                               {"rows", summary.sinks[s].rows},
                               {"bytes", summary.sinks[s].bytes}});
  const FinishTimes finish = finishTimes(recorder);
  json["row_finish_seconds"] = {
      {"first", finish.first}, {"median", finish.median}, {"last", finish.last}};
  json["values_held"] = {{"budget_bytes", summary.valueBudget},
                         {"peak_bytes", summary.peakBytesHeld},
                         {"largest_row_bytes", summary.largestRowBytes},
                         {"largest_batch_copies_bytes", summary.largestBatchCopies},
                         {"computed_bytes_at_peak", summary.computedBytesAtPeak},
                         {"batches_past_budget", summary.batchesPastBudget}};
  json["bytes_held"] = Json::array();
  for (const auto &[seconds, bytes] : summary.bytesHeld)
    json["bytes_held"].push_back({seconds, bytes});
  const runtime::EngineStats &engine = summary.engine;
  json["engine"] = {{"grain_transitions", engine.grainTransitions},
                    {"grains_run", engine.grainsRun},
                    {"grains_skipped", engine.grainsSkipped},
                    {"grains_suppressed_by_barrier", engine.grainsSuppressedByBarrier},
                    {"grains_cancelled", engine.grainsCancelled},
                    {"grains_not_needed", engine.grainsNotNeeded},
                    {"members_skipped", engine.membersSkipped},
                    {"duplicates", engine.duplicates},
                    {"batches_dispatched", engine.batchesDispatched},
                    {"batches_committed", engine.batchesCommitted},
                    {"stale_reports", engine.staleReports},
                    {"contract_violations", engine.contractViolations},
                    {"batch_errors", engine.batchErrors},
                    {"batch_retries", engine.batchRetries},
                    {"batch_splits", engine.batchSplits},
                    {"lost_batches", engine.infrastructureFailures},
                    {"crashed_batches", engine.batchCrashes},
                    {"timed_out_batches", engine.batchTimeouts},
                    {"entities_created", engine.entitiesCreated}};
  // Per Call, and per replica within it, from the batch records.
  std::vector<std::map<std::string, std::pair<uint64_t, double>>> replicas(plan.calls.size());
  std::vector<std::map<std::string, uint64_t>> outcomes(plan.calls.size());
  // Grains that ran again: those of batches lost, timed out or failed as a whole (retried).
  std::vector<uint64_t> rerun(plan.calls.size(), 0);
  for (const runtime::BatchRecord &batch : recorder.batches()) {
    ++outcomes[batch.call][batch.outcome.empty() ? "unfinished" : batch.outcome];
    if (batch.outcome == "lost" || batch.outcome == "timed-out" || batch.outcome == "crashed" ||
        batch.outcome == "batch-error")
      rerun[batch.call] += batch.grains;
    if (!batch.place.empty()) {
      auto &[count, busy] = replicas[batch.call][batch.place];
      ++count;
      busy += batch.busy;
    }
  }
  Json calls = Json::array();
  for (size_t c = 0; c < summary.calls.size(); ++c) {
    const runtime::CallSummary &call = summary.calls[c];
    Json changes = Json::array();
    for (const runtime::CallSummary::ReplicaChange &change : call.replicaChanges)
      changes.push_back({{"at", change.at},
                         {"replicas", change.replicas},
                         {"why", change.why},
                         {"moved", change.moved}});
    Json replicaList = Json::array();
    for (const auto &[place, usage] : replicas[c])
      replicaList.push_back(
          {{"place", place}, {"batches", usage.first}, {"busy_seconds", usage.second}});
    Json outcomeMap = Json::object();
    for (const auto &[outcome, count] : outcomes[c])
      outcomeMap[outcome] = count;
    calls.push_back({{"name", call.name},
                     {"op", plan.calls[c].op},
                     {"batch_limit", call.batchLimit},
                     {"batches", call.batches},
                     {"grains", call.grains},
                     {"mean_fill", call.batches ? double(call.grains) / double(call.batches) /
                                                      double(std::max<int64_t>(1, call.batchLimit))
                                                : 0.0},
                     {"mixed_batches", call.mixedBatches},
                     {"retries", call.retries},
                     {"skipped", call.skipped},
                     {"suppressed_by_barrier", call.suppressedByBarrier},
                     {"cancelled", call.cancelled},
                     {"not_needed", call.notNeeded},
                     {"busy_seconds", call.busySeconds},
                     {"replicas", call.replicas},
                     {"automatic_replicas", call.automaticReplicas},
                     {"replica_changes", changes},
                     {"rerun_grains", rerun[c]},
                     {"busy_share", busyShare(call, summary.seconds)},
                     {"active_seconds", call.activeSeconds},
                     {"saturated_seconds", call.saturatedSeconds},
                     {"starved_seconds", call.starvedSeconds},
                     {"held_back_seconds", call.heldBackSeconds},
                     {"in_flight", call.inFlight},
                     {"split_batches", call.splitBatches},
                     {"rescued_grains", call.rescuedGrains},
                     {"split_cause", call.splitCause},
                     {"failed_alone", call.failedAlone},
                     {"rescued_by_splitting", rescuedBySplitting(call)},
                     {"outcomes", outcomeMap},
                     {"replica_places", replicaList}});
    if (!call.service.empty()) {
      const runtime::ServiceUsage &usage = call.service;
      const LatencyPercentiles latency = latencyPercentiles(usage.latencies);
      calls.back()["service"] = {{"requests", usage.requests},
                                 {"retries", usage.retries},
                                 {"failed_requests", usage.failedRequests},
                                 {"prompt_tokens", usage.promptTokens},
                                 {"completion_tokens", usage.completionTokens},
                                 {"latency_seconds",
                                  {{"p50", latency.p50},
                                   {"p90", latency.p90},
                                   {"p99", latency.p99},
                                   {"max", latency.max}}}};
    }
  }
  json["calls"] = calls;
  uint64_t promptTokens = 0, completionTokens = 0, requests = 0;
  for (const runtime::CallSummary &call : summary.calls) {
    promptTokens += call.service.promptTokens;
    completionTokens += call.service.completionTokens;
    requests += call.service.requests;
  }
  json["tokens"] = {{"requests", requests},
                    {"prompt", promptTokens},
                    {"completion", completionTokens},
                    {"total", promptTokens + completionTokens}};
  Json batches = Json::array();
  for (const runtime::BatchRecord &batch : recorder.batches())
    batches.push_back({{"id", batch.id},
                       {"call", batch.call},
                       {"grains", batch.grains},
                       {"mixed", batch.mixed},
                       {"dispatched", batch.dispatched},
                       {"finished", batch.finished},
                       {"busy", batch.busy},
                       {"place", batch.place},
                       {"outcome", batch.outcome.empty() ? "unfinished" : batch.outcome}});
  json["batches"] = batches;
  Json roots = Json::array();
  for (const runtime::RootRecord &root : recorder.roots())
    roots.push_back({{"admission", root.admission},
                     {"source", root.source},
                     {"row", root.sourceRow},
                     {"admitted", root.admitted},
                     {"finished", root.finished},
                     {"status", statusName(root)}});
  json["source_rows"] = roots;
  return writeJson(path, json, error);
}

bool writeTrace(const std::string &path, const plan::Plan &plan,
                const runtime::RunRecorder &recorder, std::string &error) {
  Json events = Json::array();
  auto metadata = [&](const char *what, int pid, int tid, const std::string &name) {
    Json event = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
    if (tid >= 0)
      event["tid"] = tid;
    events.push_back(event);
  };
  metadata("process_name", 1, -1, "batches by replica");
  metadata("process_name", 2, -1, "source rows");
  std::map<std::string, int> lanes;
  for (const runtime::BatchRecord &batch : recorder.batches()) {
    if (batch.finished < 0)
      continue;
    // Replicas are numbered within their Call: a worker's "replica 0" of two Calls are two lanes.
    const std::string place =
        (batch.place.empty() ? "(lost)" : batch.place) + " (" + plan.calls[batch.call].name + ")";
    auto [lane, added] = lanes.try_emplace(place, int(lanes.size()));
    if (added)
      metadata("thread_name", 1, lane->second, place);
    // The operator's own time, ending when the report arrived; the whole round trip for
    // batches that never reported.
    const double duration = batch.busy > 0 ? batch.busy : batch.finished - batch.dispatched;
    events.push_back(
        {{"name", plan.calls[batch.call].name},
         {"cat", "batch"},
         {"ph", "X"},
         {"pid", 1},
         {"tid", lane->second},
         {"ts", (batch.finished - duration) * 1e6},
         {"dur", duration * 1e6},
         {"args", {{"batch", batch.id}, {"grains", batch.grains}, {"outcome", batch.outcome}}}});
  }
  // Source rows on as few lanes as their spans allow.
  std::vector<double> laneFree;
  for (const runtime::RootRecord &root : recorder.roots()) {
    if (root.finished < 0)
      continue;
    size_t lane = 0;
    while (lane < laneFree.size() && laneFree[lane] > root.admitted)
      ++lane;
    if (lane == laneFree.size()) {
      laneFree.push_back(0);
      metadata("thread_name", 2, int(lane), "lane " + std::to_string(lane));
    }
    laneFree[lane] = root.finished;
    events.push_back({{"name", "row " + std::to_string(root.sourceRow)},
                      {"cat", "source-row"},
                      {"ph", "X"},
                      {"pid", 2},
                      {"tid", int(lane)},
                      {"ts", root.admitted * 1e6},
                      {"dur", (root.finished - root.admitted) * 1e6},
                      {"args", {{"status", statusName(root)}}}});
  }
  Json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return writeJson(path, trace, error);
}

} // namespace orch
