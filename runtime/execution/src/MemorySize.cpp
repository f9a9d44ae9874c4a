// Memory sizes: parsing them, the machine's (or cgroup's) memory, writing them for people.
#include "orch/runtime/execution/MemorySize.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace orch::runtime {

std::optional<uint64_t> parseMemorySize(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    double scale;
  };
  static constexpr Unit units[] = {{"", 1},
                                   {"B", 1},
                                   {"KB", 1e3},
                                   {"MB", 1e6},
                                   {"GB", 1e9},
                                   {"TB", 1e12},
                                   {"KiB", 1024.0},
                                   {"MiB", 1048576.0},
                                   {"GiB", 1073741824.0},
                                   {"TiB", 1099511627776.0}};
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  if (end == 0)
    return std::nullopt;
  const std::string number(text.substr(0, end));
  char *parsed = nullptr;
  const double amount = std::strtod(number.c_str(), &parsed);
  if (parsed != number.c_str() + number.size() || !std::isfinite(amount))
    return std::nullopt;
  const std::string_view suffix = text.substr(end);
  for (const Unit &unit : units)
    if (unit.suffix == suffix) {
      const double bytes = amount * unit.scale;
      if (bytes >= 1.8e19)
        return std::nullopt;
      return static_cast<uint64_t>(std::llround(bytes));
    }
  return std::nullopt;
}

uint64_t machineMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long pageSize = ::sysconf(_SC_PAGE_SIZE);
  uint64_t memory = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : 0;
  // A container's limit (cgroup v2) when it is lower than the machine's memory.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string limit;
  if (cgroup >> limit && limit != "max")
    if (std::optional<uint64_t> bytes = parseMemorySize(limit); bytes && *bytes > 0)
      memory = memory == 0 ? *bytes : std::min(memory, *bytes);
  return memory;
}

std::string formatMemory(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double amount = double(bytes);
  int unit = 0;
  while (amount >= 1024 && unit < 4) {
    amount /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", amount, units[unit]);
  return text;
}

} // namespace orch::runtime
