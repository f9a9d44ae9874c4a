// Renders a metrics file (RunReports.cpp) as one self-contained HTML page with inline SVG: the
// sections in ReportTables.cpp and ReportCharts.cpp, assembled here.
#include "ReportCommand.h"

#include "ReportCharts.h"
#include "ReportTables.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace orch {

using report::Json;

namespace {

/// The errors journal as a link from the report, which may be written anywhere (-o): the
/// journal's place is the run's folder (run_directory) and its path there, and the link is
/// that place relative to the report's folder. Older metrics files, without run_directory:
/// beside the metrics file.
std::string errorsJournalLink(const Json &metrics, const std::string &metricsPath,
                              const std::string &reportPath) {
  namespace fs = std::filesystem;
  auto failures = metrics.find("failures");
  if (failures == metrics.end() || !failures->contains("errors_journal"))
    return "";
  const fs::path journal = (*failures)["errors_journal"].get<std::string>();
  // A journal written to a standard stream is no file to link.
  if (journal.string().rfind("/dev/", 0) == 0)
    return "";
  const std::string runDirectory = report::field(metrics, "run_directory", std::string());
  std::error_code error;
  const fs::path base = runDirectory.empty()
                            ? fs::absolute(fs::path(metricsPath), error).parent_path()
                            : fs::path(runDirectory);
  const fs::path absolute = journal.is_absolute() ? journal : base / journal;
  const fs::path reportFolder = fs::absolute(fs::path(reportPath), error).parent_path();
  const fs::path relative = absolute.lexically_normal().lexically_relative(reportFolder);
  // A URL: '#', '%', spaces and the like percent-encoded, '/' kept.
  const std::string path =
      relative.empty() ? absolute.lexically_normal().string() : relative.string();
  std::string link;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-._~", c)) {
      link += char(c);
    } else {
      char encoded[4];
      std::snprintf(encoded, sizeof encoded, "%%%02X", c);
      link += encoded;
    }
  }
  return link;
}

} // namespace

int runReport(const std::string &metricsPath, const std::string &outputPath) {
  std::ifstream input(metricsPath);
  if (!input) {
    std::cerr << "orch: error: cannot read \"" << metricsPath << "\"\n";
    return 1;
  }
  Json metrics = Json::parse(input, nullptr, false);
  if (metrics.is_discarded() || !metrics.is_object() ||
      metrics.value("format", "") != "orch-metrics") {
    std::cerr << "orch: error: \"" << metricsPath
              << "\" is not an Orch metrics file (write one with orch run --metrics)\n";
    return 1;
  }
  try {
    using namespace report; // the sections and their helpers
    std::ostringstream html;
    const std::string title = "Orch run: " + metrics["pipeline"].get<std::string>();
    html
        << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" << escape(title)
        << "</title><style>body{font-family:sans-serif;margin:24px;max-width:940px}"
           "table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid #ddd;"
           "padding:3px 8px;text-align:right}td:first-child,th:first-child,td:nth-child(2),"
           "th:nth-child(2){text-align:left}table.failures td,table.failures th{text-align:left}"
           "table.calls{font-size:90%}table.calls td{white-space:nowrap}table.calls "
           "td,table.calls th{"
           "padding:3px 5px}table.failures{width:100%}table.failures td{white-space:nowrap}"
           "table.failures td:nth-child(2),table.failures td.message{white-space:normal;"
           "overflow-wrap:anywhere}details pre{white-space:break-spaces;font-size:85%;margin:4px 0}"
           "table.replicas td:nth-child(3){white-space:normal}table "
           "td.call,span.call{white-space:normal;"
           "overflow-wrap:anywhere}.warning,details pre{overflow-wrap:anywhere}"
           ".note{color:#555;font-size:90%}h2{margin-top:28px}.warning{background:#fff4e0;"
           "border-left:4px solid #f28e2b;padding:6px 10px}"
           "@media (max-width:1000px){table.calls{font-size:75%}table.calls td,table.calls "
           "th{padding:2px 3px}table.calls td:nth-child(-n+2){white-space:normal;"
           "overflow-wrap:anywhere}}"
           "@media print{body{margin:0;max-width:none}h2{break-after:avoid}svg{break-inside:"
           "avoid}}</style></head><body><h1>"
        << escape(title) << "</h1>" << summaryParagraph(metrics) << "<h2>What went wrong</h2>"
        << stoppedEarly(metrics) << rescuedBySplitting(metrics)
        << failuresSection(metrics, errorsJournalLink(metrics, metricsPath, outputPath))
        << skippedMembersSection(metrics) << dedupSection(metrics) << modelRequestsSection(metrics)
        << "<h2>Calls</h2>" << callsTable(metrics) << filtersSection(metrics) << "<h2>Replicas</h2>"
        << replicasSection(metrics)
        << "<h2>Where the time went</h2><p>Each Call's wall time: <i>active</i> while batches "
           "ran and no input waited, <i>saturated</i> while input waited for a free replica, "
           "<i>starved</i> while it had nothing to do before its last batch (waiting for "
           "upstream Calls or admission), <i>done</i> after. <i>Busy</i> is the operator's own "
           "time over the replica-seconds it had; the busiest Call bounded the run.</p>"
        << timeChart(metrics)
        << "<h2>Each Call's activity over time</h2><p>One mark per batch while its operator "
           "ran. Overlapping windows mean that parents finish independently, without a "
           "regroup barrier.</p>"
        << activityChart(metrics);
    if (const std::string lanes = workerLanes(metrics); !lanes.empty())
      html << "<h2>Workers</h2><p>One lane per worker (or thread) with its batches, coloured "
              "by Call; on the right how many, and the share of its replicas' time they were "
              "busy (two replicas busy all the time: 100 %). A green tick when it joined, a red "
              "cross when it was lost, an orange ring where an operator's process crashed or "
              "ran past its timeout and was restarted (hover for the reason).</p>"
           << lanes;
    if (const std::string held = bytesHeldChart(metrics); !held.empty())
      html << "<h2>Bytes held</h2><p>Bytes of values the run held over time, and the byte "
              "budget (<code>--value-budget</code>) as a dashed red line.</p>"
           << held;
    html << "<h2>Outputs</h2>" << outputsTable(metrics)
         << "<h2>Batch fill</h2><p>Batches by how full they were.</p>" << fillChart(metrics)
         << "<h2>Source rows finished over time</h2><p>The share of source rows whose outputs "
            "were written by each moment.</p>"
         << finishCdf(metrics) << "</body></html>\n";
    std::ofstream out(outputPath, std::ios::out | std::ios::trunc);
    out << html.str();
    if (!out) {
      std::cerr << "orch: error: cannot write \"" << outputPath << "\"\n";
      return 1;
    }
  } catch (const Json::exception &error) {
    std::cerr << "orch: error: \"" << metricsPath << "\" is incomplete: " << error.what() << "\n";
    return 1;
  }
  std::cerr << "orch: report written to " << outputPath << "\n";
  return 0;
}

} // namespace orch
