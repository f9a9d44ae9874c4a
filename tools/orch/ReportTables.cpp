// The report's paragraphs and tables (ReportTables.h).
#include "ReportTables.h"

#include "RunReports.h"

#include <sstream>

namespace orch::report {

std::string summaryParagraph(const Json &metrics) {
  std::ostringstream html;
  const Json &rows = metrics["rows"];
  html << "<p>" << rows["finished"].get<uint64_t>() << " source rows in "
       << number(metrics["wall_seconds"].get<double>()) << " s: " << rows["written"].get<uint64_t>()
       << " written, " << rows["dropped"].get<uint64_t>() << " dropped, "
       << rows["failed"].get<uint64_t>() << " failed";
  if (const std::string stopped = stoppedRowsClause(field(rows, "unfinished", uint64_t(0)),
                                                    field(rows, "not_started", uint64_t(0)),
                                                    field(metrics, "journaled", true));
      !stopped.empty())
    html << ", " << escape(stopped);
  if (const uint64_t earlier = field(rows, "done_earlier", uint64_t(0))) {
    html << "; resumed: " << earlier << " source rows were done by an earlier run";
    if (const uint64_t failedEarlier = field(rows, "failed_earlier", uint64_t(0)))
      html << " (" << failedEarlier << " of them failed; <code>--retry-failed</code> runs them "
           << "again)";
  }
  html << ". First row finished at " << number(metrics["row_finish_seconds"]["first"].get<double>())
       << " s, median " << number(metrics["row_finish_seconds"]["median"].get<double>())
       << " s, last " << number(metrics["row_finish_seconds"]["last"].get<double>()) << " s.";
  if (metrics.contains("bottleneck")) {
    const Json &busiest = metrics["bottleneck"];
    const bool bounds = field(busiest, "bounds_the_run", true);
    html << (bounds ? " <b>Bottleneck: " : " Busiest Call: <b>")
         << escape(busiest["call"].get<std::string>()) << "</b> (busy "
         << number(100 * busiest["busy_share"].get<double>(), 0) << " % of its replicas' time"
         << (bounds ? "" : "; no Call was busy half the run") << ").";
  }
  html << " Workers: " << escape(metrics["executor"].get<std::string>()) << ".</p>";
  return html.str();
}

std::string callsTable(const Json &metrics) {
  std::ostringstream html;
  html << "<table class='calls'><tr><th>call</th><th>operator</th><th>batches</th>"
          "<th>grains run</th><th>ran again</th><th>fill</th><th>mixing</th><th>retried</th>"
          "<th>lost</th><th>not run: input</th><th>not run: parent</th><th>not needed</th>"
          "<th>cancelled</th><th>busy (s)</th></tr>";
  for (const Json &call : metrics["calls"]) {
    const Json outcomes = call.value("outcomes", Json::object());
    const uint64_t lost = field(outcomes, "lost", uint64_t(0)) +
                          field(outcomes, "timed-out", uint64_t(0)) +
                          field(outcomes, "crashed", uint64_t(0));
    html << "<tr><td>" << breakable(call["name"].get<std::string>()) << "</td><td>"
         << breakable(call["op"].get<std::string>()) << "</td><td>" << call["batches"]
         << "</td><td>" << call["grains"] << "</td><td>" << field(call, "rerun_grains", uint64_t(0))
         << "</td><td>" << number(100 * call["mean_fill"].get<double>(), 0) << " %</td><td>"
         << call["mixed_batches"] << "</td><td>" << call["retries"] << "</td><td>" << lost
         << "</td><td>" << call["skipped"] << "</td><td>" << call["suppressed_by_barrier"]
         << "</td><td>" << field(call, "not_needed", uint64_t(0)) << "</td><td>"
         << field(call, "cancelled", uint64_t(0)) << "</td><td>"
         << number(call["busy_seconds"].get<double>()) << "</td></tr>";
  }
  html << "</table><p class='note'><i>Grains run</i> counts every time a grain was sent to "
          "an operator: grains of batches that were lost (a worker or an operator process "
          "died), timed out or failed as a whole ran again and count again (<i>ran again</i>). "
          "<i>Fill</i>: grains per batch over the batch size. <i>Mixing</i>: batches with "
          "grains of more than one source row. <i>Retried</i>, <i>lost</i>: batches retried "
          "after an operator error, and lost (to a lost worker, a crashed operator process or a "
          "timeout). <i>Not run</i>: grains "
          "sealed without running because an input was dropped (by a filter or an empty "
          "result) or failed, or because a GroupFailure of their parent suppressed them. "
          "<i>Not needed</i>: grains no consumer needed (the branch an <code>if</code> did not "
          "take, a <code>coalesce</code> operand after a present one, a filtered-out value), "
          "never run. <i>Cancelled</i>: grains whose source row finished (or the run stopped) "
          "first.</p>";
  return html.str();
}

std::string replicasSection(const Json &metrics) {
  std::ostringstream html;
  html << "<table class='failures replicas'><tr><th>call</th><th>replicas</th><th>changes: when, "
          "to how "
          "many, why</th></tr>";
  for (const Json &call : metrics["calls"]) {
    const bool automatic = field(call, "automatic_replicas", false);
    html << "<tr><td class='call'>" << breakable(call["name"].get<std::string>()) << "</td><td>"
         << call["replicas"] << (automatic ? " (automatic)" : " (pinned)") << "</td><td>";
    const Json changes = call.value("replica_changes", Json::array());
    if (changes.empty())
      html << (automatic ? "none: one was enough, or no core was idle" : "");
    for (const Json &change : changes)
      html << number(change["at"].get<double>(), 1) << " s: "
           << (field(change, "moved", false) ? std::string("a replica moved")
                                             : std::to_string(change["replicas"].get<uint64_t>()))
           << " (" << escape(change["why"].get<std::string>()) << ")<br>";
    html << "</td></tr>";
  }
  html << "</table><p class='note'>A Call without <code>replicas</code> starts with one and "
          "grows while it is the bottleneck and cores are idle (docs/runtime.md, \"Replicas: "
          "automatic or pinned\"); <code>replicas: N</code> pins it.</p>";
  return html.str();
}

namespace {

/// A failure's message: one line as it is; several (a Python traceback) folded under their
/// last line, the exception, with every line kept as it was written.
std::string messageCell(const std::string &message) {
  std::string trimmed = message;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' '))
    trimmed.pop_back();
  if (trimmed.find('\n') == std::string::npos)
    return escape(trimmed);
  return "<details><summary>" + escape(messageHeadline(trimmed)) + "</summary><pre>" +
         escape(trimmed) + "</pre></details>";
}

} // namespace

std::string stoppedEarly(const Json &metrics) {
  auto found = metrics.find("stopped");
  if (found == metrics.end())
    return "";
  return "<div class='warning'><b>The run stopped early:</b> " + escape(found->get<std::string>()) +
         "</div>";
}

std::string rescuedBySplitting(const Json &metrics) {
  std::ostringstream html;
  for (const Json &call : metrics["calls"]) {
    const uint64_t rescued = field(call, "rescued_grains", uint64_t(0));
    if (!field(call, "rescued_by_splitting", rescued > 0))
      continue;
    html << "<div class='warning'><b>Warning: " << escape(call["name"].get<std::string>())
         << "</b>: " << call["split_batches"] << " batch(es) failed whole and were split until "
         << "their parts ran; " << rescued << " grains were rescued this way. The first failure: "
         << messageCell(field(call, "split_cause", std::string()))
         << " The operator fails a whole batch for what it does with some of it (a result "
            "count, a shape, memory), so the Call ran below its batch size: fix the operator, "
            "or lower <code>batch</code>.</div>";
  }
  return html.str();
}

std::string failuresSection(const Json &metrics, const std::string &journalLink) {
  auto found = metrics.find("failures");
  if (found == metrics.end())
    return "<p>This metrics file does not record failures.</p>";
  const Json &failures = *found;
  const uint64_t total = failures["total"].get<uint64_t>();
  const std::string journal = failures["errors_journal"].get<std::string>();
  if (total == 0)
    return "<p>No source row failed.</p>";
  std::ostringstream html;
  html << "<p>" << total << " source row(s) failed; each is in the errors journal "
       << (journalLink.empty()
               ? "<code>" + escape(journal) + "</code>"
               : "<a href='" + escape(journalLink) + "'>" + escape(journal) + "</a>")
       << " with every failure under it.</p><table class='failures'><tr><th>source row</th>"
          "<th>path or key</th><th>where</th><th>call</th><th>kind</th><th>message</th></tr>";
  for (const Json &failure : failures["shown"])
    html << "<tr><td>" << escape(failure["source"].get<std::string>()) << " #" << failure["row"]
         << "</td><td>" << escape(failure["label"].get<std::string>()) << "</td><td>"
         << escape(field(failure, "where", std::string())) << "</td><td>"
         << "<span class='call'>" << breakable(field(failure, "call", std::string()))
         << "</span></td><td>" << escape(field(failure, "kind", std::string()))
         << "</td><td class='message'>" << messageCell(field(failure, "message", std::string()))
         << "</td></tr>";
  html << "</table>";
  if (total > failures["shown"].size())
    html << "<p>... and " << total - failures["shown"].size() << " more in " << escape(journal)
         << ".</p>";
  return html.str();
}

std::string dedupSection(const Json &metrics) {
  auto found = metrics.find("dedup");
  if (found == metrics.end() || found->empty())
    return "";
  std::ostringstream html;
  html << "<h2>Deduplication</h2><p>Each duplicate is a line of the errors journal (kind "
          "<code>duplicate</code>) naming its survivor and similarity.</p><table><tr><th>dedup"
          "</th><th>kind</th><th>decided</th><th>duplicates</th><th>survivors indexed</th>"
          "<th>index bytes</th><th>bytes per survivor</th></tr>";
  for (const Json &dedup : *found)
    html << "<tr><td>" << escape(dedup["name"].get<std::string>()) << "</td><td>"
         << escape(dedup["kind"].get<std::string>()) << "</td><td>" << dedup["decided"]
         << "</td><td>" << dedup["duplicates"] << "</td><td>" << dedup["indexed"] << "</td><td>"
         << dedup["index_bytes"] << "</td><td>" << dedup["bytes_per_survivor"] << "</td></tr>";
  html << "</table>";
  return html.str();
}

std::string modelRequestsSection(const Json &metrics) {
  auto calls = metrics.find("calls");
  if (calls == metrics.end())
    return "";
  std::ostringstream rows;
  for (const Json &call : *calls) {
    auto service = call.find("service");
    if (service == call.end())
      continue;
    const Json &latency = (*service)["latency_seconds"];
    const bool answered = (*service)["requests"] != (*service)["failed_requests"];
    auto seconds = [answered](const Json &value) {
      if (!answered)
        return std::string("n/a");
      std::ostringstream text;
      text.precision(3);
      text << std::fixed << value.get<double>();
      return text.str();
    };
    rows << "<tr><td>" << escape(call["name"].get<std::string>()) << "</td><td>"
         << (*service)["requests"] << "</td><td>" << (*service)["retries"] << "</td><td>"
         << (*service)["failed_requests"] << "</td><td>" << (*service)["prompt_tokens"]
         << "</td><td>" << (*service)["completion_tokens"] << "</td><td>" << seconds(latency["p50"])
         << "</td><td>" << seconds(latency["p90"]) << "</td><td>" << seconds(latency["p99"])
         << "</td><td>" << call["in_flight"] << "</td></tr>";
  }
  if (rows.str().empty())
    return "";
  std::ostringstream html;
  html << "<h2>Model requests</h2><p>Requests to model servers (llm.* Calls): retries after "
          "429, 503, 5xx, timeouts and dropped connections; failed requests failed their rows "
          "(the errors journal has the server's message).</p><table><tr><th>call</th><th>"
          "requests</th><th>retries</th><th>failed</th><th>prompt tokens</th><th>completion "
          "tokens</th><th>latency p50 (s)</th><th>p90</th><th>p99</th><th>in flight</th></tr>"
       << rows.str() << "</table>";
  return html.str();
}

std::string skippedMembersSection(const Json &metrics) {
  auto found = metrics.find("skipped_members");
  if (found == metrics.end() || (*found)["total"].get<uint64_t>() == 0)
    return "";
  const Json &skipped = *found;
  const uint64_t total = skipped["total"].get<uint64_t>();
  std::ostringstream html;
  html << "<p>" << total
       << " failed member(s) were left out of their rows by <code>reduce(..., failed: "
          "\"skip\")</code>; the rows were written without them, and each is in the errors "
          "journal (kind <code>skipped-member</code>).</p><table class='failures'><tr><th>source "
          "row</th><th>path or key</th><th>where</th><th>call</th><th>kind</th><th>message</th>"
          "</tr>";
  for (const Json &member : skipped["shown"]) {
    std::string path = field(member, "where", std::string());
    for (const Json &ordinal : member["path"])
      if (!member.contains("where"))
        path += (path.empty() ? "" : ".") + std::to_string(ordinal.get<uint64_t>());
    html << "<tr><td>" << escape(member["source"].get<std::string>()) << " #" << member["row"]
         << "</td><td>" << escape(member["label"].get<std::string>()) << "</td><td>" << escape(path)
         << "</td><td><span class='call'>" << breakable(member["call"].get<std::string>())
         << "</span></td><td>" << escape(member["kind"].get<std::string>())
         << "</td><td class='message'>" << messageCell(member["message"].get<std::string>())
         << "</td></tr>";
  }
  html << "</table>";
  if (total > skipped["shown"].size())
    html << "<p>... and " << total - skipped["shown"].size() << " more in the errors journal.</p>";
  return html.str();
}

std::string filtersSection(const Json &metrics) {
  auto found = metrics.find("filters");
  if (found == metrics.end() || found->empty())
    return "";
  std::ostringstream html;
  html << "<h2>Filters</h2><p>What each <code>filter</code> kept and dropped (values dropped "
          "before it, and those no consumer needed, are not counted; <i>not decided</i>: the "
          "value or its condition failed).</p><table><tr><th>filter</th><th>written at</th>"
          "<th>kept</th><th>dropped</th><th>not decided</th></tr>";
  for (const Json &filter : *found) {
    const std::string name = filter["name"].get<std::string>();
    // Line 0: a plan run without its positions (X.plan.positions) does not know where.
    const bool placed = filter["line"].is_number() && filter["line"].get<uint64_t>() > 0;
    html << "<tr><td>" << (name.empty() ? std::string("(unnamed)") : escape(name)) << "</td><td>"
         << (placed ? "line " + filter["line"].dump() + ", column " + filter["column"].dump()
                    : std::string("not known"))
         << "</td><td>" << filter["kept"] << "</td><td>" << filter["dropped"] << "</td><td>"
         << filter["failed"] << "</td></tr>";
  }
  html << "</table>";
  return html.str();
}

std::string outputsTable(const Json &metrics) {
  auto found = metrics.find("outputs");
  if (found == metrics.end() || found->empty())
    return "<p>No outputs recorded.</p>";
  std::ostringstream html;
  html << "<table><tr><th>sink</th><th>writes to</th><th>rows</th><th>bytes</th></tr>";
  for (const Json &sink : *found)
    html << "<tr><td>" << escape(sink["sink"].get<std::string>()) << "</td><td>"
         << escape(sink["target"].get<std::string>()) << "</td><td>" << sink["rows"] << "</td><td>"
         << bytes(sink["bytes"].get<double>()) << "</td></tr>";
  html << "</table>";
  return html.str();
}

} // namespace orch::report
