// `orch report METRICS.json -o REPORT.html`: one self-contained HTML page (no network) with
// SVG charts of a run: each Call's active window over time, batch fill, finish-time CDF.
#pragma once

#include <string>

namespace orch {

int runReport(const std::string &metricsPath, const std::string &outputPath);

} // namespace orch
