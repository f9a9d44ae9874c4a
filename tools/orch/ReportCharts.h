// The report's charts, each one inline SVG drawn from a metrics file (docs/observability.md).
#pragma once

#include "ReportHtml.h"

#include <string>

namespace orch::report {

/// Each Call's lane with one mark per batch while its operator ran.
std::string activityChart(const Json &metrics);
/// For each Call, how full its batches were, in ten buckets.
std::string fillChart(const Json &metrics);
/// The share of source rows finished by each moment of the run.
std::string finishCdf(const Json &metrics);
/// For each Call, its wall time split into active, saturated, starved and done.
std::string timeChart(const Json &metrics);
/// One lane per worker (or thread) with its batches, and when it joined and was lost.
std::string workerLanes(const Json &metrics);
/// Bytes of values held over time, when the metrics have them ("" otherwise).
std::string bytesHeldChart(const Json &metrics);

} // namespace orch::report
