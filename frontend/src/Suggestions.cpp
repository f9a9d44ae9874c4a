// "Did you mean ...?": the nearest known spelling to a misspelt name.
#include "orch/frontend/Sema.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>

namespace orch::frontend {

std::string closestSpelling(const std::string &name, const std::vector<std::string> &candidates) {
  std::vector<std::string> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  // Allow about one edit per three characters: `bach` -> `batch`, not `x` -> `y`.
  unsigned bestDistance = unsigned(std::max<size_t>(1, name.size() / 3)) + 1;
  std::string best;
  for (const std::string &candidate : sorted) {
    unsigned distance = llvm::StringRef(name).edit_distance(candidate, true, bestDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  const std::string suggestion = closestSpelling(name, candidates);
  return suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?";
}

} // namespace orch::frontend
