// Renders a metrics file (RunReports.cpp) as an HTML page with inline SVG.
#include "ReportCommand.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace orch {
namespace {

using Json = nlohmann::json;

const char *kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string number(double value, int decimals = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// Each Call's lane, with one mark per batch where the operator was busy: the overlap picture.
std::string activityChart(const Json &metrics) {
  const Json &calls = metrics["calls"];
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const int left = 170, width = 720, lane = 26, top = 10;
  const int height = top + lane * int(calls.size()) + 30;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 20 << "' height='"
      << height << "' font-family='sans-serif' font-size='12'>";
  for (size_t c = 0; c < calls.size(); ++c) {
    const int y = top + lane * int(c);
    svg << "<text x='" << left - 8 << "' y='" << y + 16 << "' text-anchor='end'>"
        << escape(calls[c]["name"].get<std::string>()) << "</text>";
    svg << "<rect x='" << left << "' y='" << y + 3 << "' width='" << width << "' height='"
        << lane - 6 << "' fill='#f3f3f3'/>";
  }
  for (const Json &batch : metrics["batches"]) {
    const double finished = batch["finished"].get<double>();
    if (finished < 0)
      continue;
    const double busy = batch["busy"].get<double>();
    const double start = busy > 0 ? finished - busy : batch["dispatched"].get<double>();
    const size_t c = batch["call"].get<size_t>();
    const double x = left + width * std::max(0.0, start) / wall;
    const double w = std::max(0.7, width * (finished - std::max(0.0, start)) / wall);
    svg << "<rect x='" << number(x) << "' y='" << top + lane * int(c) + 5 << "' width='"
        << number(w) << "' height='" << lane - 10 << "' fill='" << kPalette[c % 10]
        << "' fill-opacity='0.55'/>";
  }
  const int axis = top + lane * int(calls.size()) + 4;
  svg << "<line x1='" << left << "' y1='" << axis << "' x2='" << left + width << "' y2='" << axis
      << "' stroke='#555'/>";
  for (int tick = 0; tick <= 4; ++tick)
    svg << "<text x='" << left + width * tick / 4 << "' y='" << axis + 16
        << "' text-anchor='middle'>" << number(wall * tick / 4, wall < 4 ? 2 : 1) << " s</text>";
  svg << "</svg>";
  return svg.str();
}

/// For each Call, how full its batches were (grains / batch limit), in ten buckets.
std::string fillChart(const Json &metrics) {
  const Json &calls = metrics["calls"];
  std::vector<std::vector<int>> buckets(calls.size(), std::vector<int>(10, 0));
  for (const Json &batch : metrics["batches"]) {
    const size_t c = batch["call"].get<size_t>();
    const double limit = std::max<int64_t>(1, calls[c]["batch_limit"].get<int64_t>());
    const int bucket = std::min(9, int(batch["grains"].get<double>() / limit * 10 - 1e-9));
    ++buckets[c][size_t(std::max(0, bucket))];
  }
  const int cellWidth = 150, cellHeight = 110;
  int shown = 0;
  std::ostringstream cells;
  for (size_t c = 0; c < calls.size(); ++c) {
    const int most = *std::max_element(buckets[c].begin(), buckets[c].end());
    if (most == 0)
      continue;
    const int x0 = (shown % 5) * (cellWidth + 20), y0 = (shown / 5) * (cellHeight + 40);
    cells << "<text x='" << x0 << "' y='" << y0 + 12 << "'>"
          << escape(calls[c]["name"].get<std::string>()) << " (batch "
          << calls[c]["batch_limit"].get<int64_t>() << ")</text>";
    for (int b = 0; b < 10; ++b) {
      const double h = double(cellHeight - 30) * buckets[c][size_t(b)] / most;
      cells << "<rect x='" << x0 + b * (cellWidth / 10) << "' y='" << number(y0 + cellHeight - h)
            << "' width='" << cellWidth / 10 - 2 << "' height='" << number(h) << "' fill='"
            << kPalette[c % 10] << "'><title>" << b * 10 << "-" << (b + 1) * 10
            << "% full: " << buckets[c][size_t(b)] << " batches</title></rect>";
    }
    cells << "<text x='" << x0 << "' y='" << y0 + cellHeight + 14 << "' fill='#555'>0%</text>"
          << "<text x='" << x0 + cellWidth - 30 << "' y='" << y0 + cellHeight + 14
          << "' fill='#555'>100%</text>";
    ++shown;
  }
  const int rows = std::max(1, (shown + 4) / 5);
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << 5 * (cellWidth + 20) << "' height='"
      << rows * (cellHeight + 40) << "' font-family='sans-serif' font-size='11'>" << cells.str()
      << "</svg>";
  return svg.str();
}

/// The share of source rows finished by each moment of the run.
std::string finishCdf(const Json &metrics) {
  std::vector<double> times;
  for (const Json &row : metrics["source_rows"])
    if (row["finished"].get<double>() >= 0)
      times.push_back(row["finished"].get<double>());
  std::sort(times.begin(), times.end());
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const int left = 50, width = 600, height = 220, top = 10;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 30 << "' height='"
      << height + top + 40 << "' font-family='sans-serif' font-size='12'>";
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width << "' height='" << height
      << "' fill='#f7f7f7' stroke='#ccc'/>";
  std::ostringstream points;
  points << left << "," << top + height;
  for (size_t i = 0; i < times.size(); ++i) {
    const double x = left + width * times[i] / wall;
    const double before = top + height - height * double(i) / double(times.size());
    const double after = top + height - height * double(i + 1) / double(times.size());
    points << " " << number(x) << "," << number(before) << " " << number(x) << "," << number(after);
  }
  points << " " << left + width << "," << (times.empty() ? top + height : top);
  svg << "<polyline fill='none' stroke='#4e79a7' stroke-width='2' points='" << points.str()
      << "'/>";
  for (int tick = 0; tick <= 4; ++tick) {
    svg << "<text x='" << left + width * tick / 4 << "' y='" << top + height + 16
        << "' text-anchor='middle'>" << number(wall * tick / 4, wall < 4 ? 2 : 1) << " s</text>";
    svg << "<text x='" << left - 6 << "' y='" << top + height - height * tick / 4 + 4
        << "' text-anchor='end'>" << tick * 25 << "%</text>";
  }
  svg << "</svg>";
  return svg.str();
}

std::string summaryTable(const Json &metrics) {
  std::ostringstream html;
  const Json &rows = metrics["rows"];
  html << "<p>" << rows["finished"].get<uint64_t>() << " source rows in "
       << number(metrics["wall_seconds"].get<double>()) << " s: " << rows["written"].get<uint64_t>()
       << " written, " << rows["dropped"].get<uint64_t>() << " dropped, "
       << rows["failed"].get<uint64_t>() << " failed. First row finished at "
       << number(metrics["row_finish_seconds"]["first"].get<double>()) << " s, median "
       << number(metrics["row_finish_seconds"]["median"].get<double>()) << " s, last "
       << number(metrics["row_finish_seconds"]["last"].get<double>()) << " s. "
       << escape(metrics["executor"].get<std::string>()) << ".</p>";
  html << "<table><tr><th>call</th><th>operator</th><th>batches</th><th>grains</th>"
          "<th>mean fill</th><th>mixing rows</th><th>retries</th><th>suppressed</th>"
          "<th>busy (s)</th></tr>";
  for (const Json &call : metrics["calls"])
    html << "<tr><td>" << escape(call["name"].get<std::string>()) << "</td><td>"
         << escape(call["op"].get<std::string>()) << "</td><td>" << call["batches"] << "</td><td>"
         << call["grains"] << "</td><td>" << number(100 * call["mean_fill"].get<double>(), 0)
         << "%</td><td>" << call["mixed_batches"] << "</td><td>" << call["retries"] << "</td><td>"
         << call["suppressed_by_barrier"] << "</td><td>"
         << number(call["busy_seconds"].get<double>()) << "</td></tr>";
  html << "</table>";
  return html.str();
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
    std::ostringstream html;
    const std::string title = "Orch run: " + metrics["pipeline"].get<std::string>();
    html << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" << escape(title)
         << "</title><style>body{font-family:sans-serif;margin:24px;max-width:1000px}"
            "table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:3px 8px;"
            "text-align:right}td:first-child,th:first-child,td:nth-child(2),th:nth-child(2){text-"
            "align:left}"
            "h2{margin-top:28px}</style></head><body><h1>"
         << escape(title) << "</h1>" << summaryTable(metrics)
         << "<h2>Each Call's activity over time</h2><p>One mark per batch while its operator "
            "ran. Overlapping windows mean that parents finish independently, without a "
            "regroup barrier.</p>"
         << activityChart(metrics) << "<h2>Batch fill</h2><p>Batches by how full they were.</p>"
         << fillChart(metrics)
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
