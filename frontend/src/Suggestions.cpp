// "Did you mean ...?": the nearest known spelling to a misspelt name.
#include "orch/frontend/Sema.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>

namespace orch::frontend {

namespace {

/// Edits from `name` to `candidate`, where swapping two neighbours (`pagse` -> `pages`) and
/// adding or dropping a whole suffix to a known word of four letters or more (`batchsize` ->
/// `batch`, `replica` -> `replicas`) count as one.
unsigned spellingDistance(const std::string &name, const std::string &candidate, unsigned limit) {
  if (name.size() == candidate.size())
    for (size_t i = 0; i + 1 < name.size(); ++i)
      if (name[i] != name[i + 1] && name[i] == candidate[i + 1] && name[i + 1] == candidate[i] &&
          name.compare(0, i, candidate, 0, i) == 0 &&
          name.compare(i + 2, std::string::npos, candidate, i + 2, std::string::npos) == 0)
        return 1;
  const std::string &shorter = name.size() < candidate.size() ? name : candidate;
  const std::string &longer = name.size() < candidate.size() ? candidate : name;
  if (shorter.size() >= 4 && shorter != longer && longer.compare(0, shorter.size(), shorter) == 0)
    return 1;
  return llvm::StringRef(name).edit_distance(candidate, true, limit);
}

} // namespace

std::string closestSpelling(const std::string &name, const std::vector<std::string> &candidates) {
  std::vector<std::string> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  // Allow about one edit per three characters: `bach` -> `batch`, not `x` -> `y`.
  unsigned bestDistance = unsigned(std::max<size_t>(1, name.size() / 3)) + 1;
  std::string best;
  for (const std::string &candidate : sorted) {
    unsigned distance = spellingDistance(name, candidate, bestDistance);
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
