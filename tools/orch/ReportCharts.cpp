// The report's SVG charts (ReportCharts.h).
#include "ReportCharts.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace orch::report {
namespace {

/// Time axis ticks under a chart whose time runs from `left` to `left + width`.
std::string timeAxis(int left, int width, int y, double wall) {
  std::ostringstream svg;
  svg << "<line x1='" << left << "' y1='" << y << "' x2='" << left + width << "' y2='" << y
      << "' stroke='#555'/>";
  for (int tick = 0; tick <= 4; ++tick)
    svg << "<text x='" << left + width * tick / 4 << "' y='" << y + 16 << "' text-anchor='middle'>"
        << number(wall * tick / 4, wall < 4 ? 2 : 1) << " s</text>";
  return svg.str();
}

} // namespace

/// Each Call's lane, with one mark per batch where the operator was busy: the overlap picture.
std::string activityChart(const Json &metrics) {
  const Json &calls = metrics["calls"];
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const int left = 170, width = 720, lane = 26, top = 10;
  const int height = top + lane * int(calls.size()) + 30;
  std::ostringstream svg;
  svg << svgStart(left + width + 20, height, 12);
  for (size_t c = 0; c < calls.size(); ++c) {
    const int y = top + lane * int(c);
    svg << "<text x='" << left - 8 << "' y='" << y + 16 << "' text-anchor='end'>"
        << fitted(calls[c]["name"].get<std::string>(), left - 12, 12) << "</text>";
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
        << number(w) << "' height='" << lane - 10 << "' fill='" << paletteColor(c)
        << "' fill-opacity='0.55'/>";
  }
  svg << timeAxis(left, width, top + lane * int(calls.size()) + 4, wall) << "</svg>";
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
    const std::string batch =
        " (batch " + std::to_string(calls[c]["batch_limit"].get<int64_t>()) + ")";
    cells << "<text x='" << x0 << "' y='" << y0 + 12 << "'>"
          << fitted(calls[c]["name"].get<std::string>(), cellWidth - textWidth(batch, 11), 11)
          << escape(batch) << "</text>";
    for (int b = 0; b < 10; ++b) {
      const double h = double(cellHeight - 30) * buckets[c][size_t(b)] / most;
      cells << "<rect x='" << x0 + b * (cellWidth / 10) << "' y='" << number(y0 + cellHeight - h)
            << "' width='" << cellWidth / 10 - 2 << "' height='" << number(h) << "' fill='"
            << paletteColor(c) << "'><title>" << b * 10 << "-" << (b + 1) * 10
            << "% full: " << buckets[c][size_t(b)] << " batches</title></rect>";
    }
    cells << "<text x='" << x0 << "' y='" << y0 + cellHeight + 14 << "' fill='#555'>0%</text>"
          << "<text x='" << x0 + cellWidth - 30 << "' y='" << y0 + cellHeight + 14
          << "' fill='#555'>100%</text>";
    ++shown;
  }
  const int rows = std::max(1, (shown + 4) / 5);
  std::ostringstream svg;
  svg << svgStart(5 * (cellWidth + 20), rows * (cellHeight + 40), 11) << cells.str() << "</svg>";
  return svg.str();
}

/// The share of source rows finished by each moment of the run.
std::string finishCdf(const Json &metrics) {
  // Of all the source rows this run had: those a stop left unfinished never finished.
  std::vector<double> times;
  for (const Json &row : metrics["source_rows"])
    if (row["finished"].get<double>() >= 0 && row.value("status", "") != "unfinished")
      times.push_back(row["finished"].get<double>());
  std::sort(times.begin(), times.end());
  const double rows = double(std::max<size_t>(1, metrics["source_rows"].size()));
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const int left = 50, width = 600, height = 220, top = 10;
  std::ostringstream svg;
  svg << svgStart(left + width + 30, height + top + 40, 12);
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width << "' height='" << height
      << "' fill='#f7f7f7' stroke='#ccc'/>";
  std::ostringstream points;
  points << left << "," << top + height;
  for (size_t i = 0; i < times.size(); ++i) {
    const double x = left + width * times[i] / wall;
    const double before = top + height - height * double(i) / rows;
    const double after = top + height - height * double(i + 1) / rows;
    points << " " << number(x) << "," << number(before) << " " << number(x) << "," << number(after);
  }
  points << " " << left + width << ","
         << number(top + height - height * double(times.size()) / rows);
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

std::string timeChart(const Json &metrics) {
  const Json &calls = metrics["calls"];
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const std::string bottleneck =
      metrics.contains("bottleneck") && field(metrics["bottleneck"], "bounds_the_run", true)
          ? metrics["bottleneck"]["call"].get<std::string>()
          : "";
  struct Part {
    const char *key, *label, *color;
  };
  const Part parts[] = {{"active_seconds", "active", "#59a14f"},
                        {"saturated_seconds", "saturated", "#e15759"},
                        {"starved_seconds", "starved", "#edc948"},
                        {"held_back_seconds", "held back (value budget)", "#b07aa1"}};
  const int left = 170, width = 560, lane = 26, top = 28;
  std::ostringstream svg;
  svg << svgStart(left + width + 200, top + lane * int(calls.size()) + 10, 12);
  // The legend: each label as wide as its text, so that none runs into the next.
  int x = left;
  for (const Part &part : parts) {
    svg << "<rect x='" << x << "' y='4' width='10' height='10' fill='" << part.color << "'/>"
        << "<text x='" << x + 14 << "' y='13'>" << part.label << "</text>";
    x += 14 + textWidth(part.label, 12) + 18;
  }
  svg << "<rect x='" << x << "' y='4' width='10' height='10' fill='#e6e6e6'/><text x='" << x + 14
      << "' y='13'>done</text>";
  for (size_t c = 0; c < calls.size(); ++c) {
    const Json &call = calls[c];
    const std::string name = call["name"].get<std::string>();
    const int y = top + lane * int(c);
    const bool isBottleneck = name == bottleneck;
    svg << "<text x='" << left - 8 << "' y='" << y + 16 << "' text-anchor='end'"
        << (isBottleneck ? " font-weight='bold'" : "") << ">"
        << fitted(name, isBottleneck ? left - 24 : left - 12, 12) << "</text>";
    svg << "<rect x='" << left << "' y='" << y + 3 << "' width='" << width << "' height='"
        << lane - 6 << "' fill='#e6e6e6'/>";
    double offset = 0;
    for (const Part &part : parts) {
      const double seconds = field(call, part.key, 0.0);
      const double w = width * std::min(1.0, seconds / wall);
      if (w <= 0)
        continue;
      svg << "<rect x='" << number(left + width * offset / wall) << "' y='" << y + 3 << "' width='"
          << number(w) << "' height='" << lane - 6 << "' fill='" << part.color << "'><title>"
          << escape(name) << ": " << part.label << " " << number(seconds) << " s</title></rect>";
      offset += seconds;
    }
    svg << "<text x='" << left + width + 8 << "' y='" << y + 16 << "'>busy "
        << number(100 * field(call, "busy_share", 0.0), 0) << " %"
        << (isBottleneck ? " (bottleneck)" : "") << "</text>";
  }
  svg << "</svg>";
  return svg.str();
}

std::string workerLanes(const Json &metrics) {
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  const Json &calls = metrics["calls"];
  // Lanes: the workers that joined, in order, then any other place batches ran (threads).
  std::vector<std::string> lanes;
  std::map<std::string, size_t> laneOf;
  auto lane = [&](const std::string &name) {
    auto [found, added] = laneOf.try_emplace(name, lanes.size());
    if (added)
      lanes.push_back(name);
    return found->second;
  };
  for (const Json &worker : metrics.value("workers", Json::array()))
    lane(worker["name"].get<std::string>());
  for (const Json &batch : metrics["batches"]) {
    std::string place = batch["place"].get<std::string>();
    if (!place.empty())
      lane(place.substr(0, place.find("/replica")));
  }
  if (lanes.empty())
    return "";
  const int left = 120, width = 640, height = 26, top = 10;
  std::ostringstream svg;
  svg << svgStart(left + width + 260, top + height * int(lanes.size()) + 30, 12);
  // Per lane: batches, busy seconds (a concurrent Call's batch counts 1/in_flight of its time:
  // its replica runs that many at once) and the replicas it hosted.
  struct Usage {
    uint64_t batches = 0;
    double busy = 0;
    std::set<std::string> replicas;
  };
  std::vector<Usage> usage(lanes.size());
  std::ostringstream restarts;
  for (const Json &batch : metrics["batches"]) {
    const std::string place = batch["place"].get<std::string>();
    const double finished = batch["finished"].get<double>();
    if (place.empty() || finished < 0)
      continue;
    const size_t l = laneOf[place.substr(0, place.find("/replica"))];
    const size_t call = batch["call"].get<size_t>();
    const double busy = batch["busy"].get<double>();
    const double inFlight =
        call < calls.size() ? std::max<double>(1, field(calls[call], "in_flight", 1.0)) : 1.0;
    ++usage[l].batches;
    usage[l].busy += busy / inFlight;
    // Replicas are numbered within their Call: the Call tells two "replica 0" apart.
    usage[l].replicas.insert(std::to_string(call) + " " + place);
    const double start =
        std::max(0.0, busy > 0 ? finished - busy : batch["dispatched"].get<double>());
    svg << "<rect x='" << number(left + width * start / wall) << "' y='"
        << top + height * int(l) + 5 << "' width='"
        << number(std::max(0.7, width * (finished - start) / wall)) << "' height='" << height - 10
        << "' fill='" << paletteColor(call) << "' fill-opacity='0.55'/>";
    // A replica whose operator process crashed or ran past its timeout was restarted there.
    const std::string outcome = batch["outcome"].get<std::string>();
    if (outcome == "crashed" || outcome == "timed-out") {
      const double x = left + width * std::min(finished, wall) / wall;
      const int y = top + height * int(l) + height / 2;
      restarts << "<circle cx='" << number(x) << "' cy='" << y
               << "' r='5' fill='#fff' stroke='#f28e2b' stroke-width='2'><title>" << escape(place)
               << ": "
               << (outcome == "crashed" ? "its operator's process crashed"
                                        : "its operator ran past the timeout")
               << " on batch " << batch["id"] << " of '"
               << escape(call < calls.size() ? calls[call]["name"].get<std::string>() : "")
               << "' at " << number(finished) << " s; the replica was restarted</title></circle>";
    }
  }
  svg << restarts.str();
  // Busy share over the time it was there (joined to lost, or the whole run for threads), and
  // over the replicas it hosted: a worker with two replicas busy all the time is 100 %.
  std::vector<double> present(lanes.size(), wall);
  for (const Json &worker : metrics.value("workers", Json::array()))
    present[laneOf[worker["name"].get<std::string>()]] =
        field(worker, "lost", wall) - field(worker, "joined", 0.0);
  for (size_t l = 0; l < lanes.size(); ++l) {
    const int y = top + height * int(l);
    const size_t replicas = std::max<size_t>(1, usage[l].replicas.size());
    const double share =
        std::min(1.0, usage[l].busy / std::max(1e-6, present[l] * double(replicas)));
    svg << "<text x='" << left - 8 << "' y='" << y + 16 << "' text-anchor='end'>"
        << fitted(lanes[l], left - 12, 12) << "</text><text x='" << left + width + 8 << "' y='"
        << y + 16 << "'>";
    if (usage[l].batches == 0)
      svg << "no batches";
    else
      svg << usage[l].batches << " batches, busy " << number(100 * share, 0) << " % of " << replicas
          << (replicas == 1 ? " replica" : " replicas");
    svg << "</text>";
  }
  for (const Json &worker : metrics.value("workers", Json::array())) {
    const size_t l = laneOf[worker["name"].get<std::string>()];
    const int y = top + height * int(l);
    const double joined = field(worker, "joined", 0.0);
    svg << "<line x1='" << number(left + width * joined / wall) << "' y1='" << y + 2 << "' x2='"
        << number(left + width * joined / wall) << "' y2='" << y + height - 2
        << "' stroke='#59a14f' stroke-width='2'><title>"
        << escape(worker["name"].get<std::string>()) << " joined at " << number(joined)
        << " s</title></line>";
    if (worker.contains("lost")) {
      const double lost = worker["lost"].get<double>();
      const double x = left + width * std::min(lost, wall) / wall;
      svg << "<g stroke='#c00' stroke-width='2'><line x1='" << number(x - 5) << "' y1='" << y + 6
          << "' x2='" << number(x + 5) << "' y2='" << y + height - 6 << "'/><line x1='"
          << number(x + 5) << "' y1='" << y + 6 << "' x2='" << number(x - 5) << "' y2='"
          << y + height - 6 << "'/><title>" << escape(worker["name"].get<std::string>())
          << " lost at " << number(lost)
          << " s: " << escape(field(worker, "lost_reason", std::string())) << "</title></g>";
    }
  }
  svg << timeAxis(left, width, top + height * int(lanes.size()) + 4, wall) << "</svg>";
  return svg.str();
}

std::string bytesHeldChart(const Json &metrics) {
  auto found = metrics.find("bytes_held");
  if (found == metrics.end() || !found->is_array() || found->empty())
    return "";
  const double wall = std::max(1e-6, metrics["wall_seconds"].get<double>());
  double most = 1;
  for (const Json &point : *found)
    most = std::max(most, point[1].get<double>());
  // The byte budget as a dashed line when it is near enough to be drawn with the values; far
  // above them, it is named at the top instead (the values would be a flat line at the bottom).
  // Metrics of orch before --value-budget had it as memory.limit_bytes.
  const double limit =
      metrics.contains("values_held")
          ? field(metrics.value("values_held", Json::object()), "budget_bytes", 0.0)
          : field(metrics.value("memory", Json::object()), "limit_bytes", 0.0);
  const bool limitDrawn = limit > 0 && limit <= 10 * most;
  const double scale = limitDrawn ? std::max(most, limit) * 1.05 : most;
  const int left = 90, width = 600, height = 160, top = 24;
  auto yOf = [&](double value) { return top + height - height * value / scale; };
  std::ostringstream points;
  for (const Json &point : *found)
    points << number(left + width * point[0].get<double>() / wall) << ","
           << number(yOf(point[1].get<double>())) << " ";
  std::ostringstream svg;
  svg << svgStart(left + width + 30, top + height + 30, 12) << "<rect x='" << left << "' y='" << top
      << "' width='" << width << "' height='" << height
      << "' fill='#f7f7f7' stroke='#ccc'/><polyline fill='none' stroke='#b07aa1' "
         "stroke-width='2' points='"
      << points.str() << "'/><text x='" << left - 6 << "' y='" << number(yOf(most) + 4)
      << "' text-anchor='end'>" << bytes(most) << "</text>";
  if (limitDrawn)
    svg << "<line x1='" << left << "' y1='" << number(yOf(limit)) << "' x2='" << left + width
        << "' y2='" << number(yOf(limit)) << "' stroke='#c00' stroke-dasharray='6 4'/><text x='"
        << left + width << "' y='" << number(yOf(limit) - 4)
        << "' text-anchor='end' fill='#c00'>budget " << bytes(limit) << "</text>";
  else if (limit > 0)
    svg << "<text x='" << left + width << "' y='" << top - 8 << "' text-anchor='end' fill='#555'>"
        << "budget " << bytes(limit) << ", far above the most held: off this scale</text>";
  else
    svg << "<text x='" << left + width << "' y='" << top - 8
        << "' text-anchor='end' fill='#555'>no budget (--value-budget 0)</text>";
  svg << timeAxis(left, width, top + height, wall) << "</svg>";
  return svg.str();
}

} // namespace orch::report
