// The report's text and tables, drawn from a metrics file (docs/observability.md).
#pragma once

#include "ReportHtml.h"

#include <string>

namespace orch::report {

/// Rows, times, the bottleneck and the workers in a paragraph.
std::string summaryParagraph(const Json &metrics);
/// Per Call: batches, grains (and how many ran again), fill, and what did not run, plainly.
std::string callsTable(const Json &metrics);
/// Per Call: its replicas (automatic or pinned), and each change with its time and reason.
std::string replicasSection(const Json &metrics);
/// The failed source rows with their causes (the first 100), or a line saying there were none.
/// `journalLink`: the errors journal as the report links it (relative to the report's folder).
std::string failuresSection(const Json &metrics, const std::string &journalLink);
/// Why the run stopped before its end (interrupted, aborted, an output that failed), if it did.
std::string stoppedEarly(const Json &metrics);
/// A warning for each Call whose batches failed whole and were rescued by splitting them.
std::string rescuedBySplitting(const Json &metrics);
/// Members `reduce(x, failed: "skip")` left out (nothing when there were none).
std::string skippedMembersSection(const Json &metrics);
/// Per dedup node: entities decided, duplicates dropped, survivors indexed and their bytes.
std::string dedupSection(const Json &metrics);
/// Requests, retries, tokens and latencies of the Calls that use model servers (llm.*).
std::string modelRequestsSection(const Json &metrics);
/// Per filter: the values it kept, dropped and could not decide (nothing without filters).
std::string filtersSection(const Json &metrics);
/// Per sink: where it wrote, rows and bytes.
std::string outputsTable(const Json &metrics);

} // namespace orch::report
