// The worker's rule for starting declared operators' programs, and its allow-list file
// (ProgramPermissions.h).
#include "orch/runtime/operators/ProgramPermissions.h"

#include "orch/runtime/operators/TrustedFiles.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace orch::runtime {
namespace {

/// `path` with every link and `..` resolved, or "" when it names nothing.
std::string realPath(const std::string &path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) ? std::string(resolved) : std::string();
}

} // namespace

std::optional<std::string> ProgramPermissions::refusal(const plan::PlanExternalOperator &op) const {
  const std::string what = "operator " + op.name + " (" + op.runner + " " + op.path + ")";
  if (allowed) {
    // Paths compare as the files they name ("/opt/ops/../ops/x.py" is "/opt/ops/x.py").
    const std::string real = realPath(op.path);
    const bool listed = std::any_of(allowed->begin(), allowed->end(), [&](const auto &entry) {
      return entry.first == op.runner &&
             (entry.second == op.path || (!real.empty() && realPath(entry.second) == real));
    });
    if (!listed)
      return "this worker does not run " + what + ": it is not in the worker's --allow-operators " +
             allowedFrom + " (add the line '" + op.runner + " " + op.path + "' to allow it)";
    // A listed program that someone else could change is not the program that was allowed.
    if (std::optional<std::string> problem = untrustedFileProblem(op.path, "the program"))
      return "this worker does not run " + what + ": " + *problem;
    return std::nullopt;
  }
  if (coordinatorAuthenticated)
    return std::nullopt;
  return "this worker does not run " + what +
         " for a coordinator it has not authenticated (it runs with --insecure): a plan that "
         "names a program is code. Give the worker --key and --server-key (orch keygen), or "
         "list the programs it may run in --allow-operators FILE";
}

std::variant<std::set<std::pair<std::string, std::string>>, std::string>
readAllowedOperators(const std::string &path) {
  std::string contents;
  if (auto problem = readTrustedFile(path, "the allowed-operators file", contents))
    return *problem;
  std::istringstream in(contents);
  std::set<std::pair<std::string, std::string>> allowed;
  std::string text;
  for (unsigned number = 1; std::getline(in, text); ++number) {
    std::istringstream words(text);
    std::vector<std::string> line;
    for (std::string word; words >> word;)
      line.push_back(word);
    if (line.empty() || line.front()[0] == '#')
      continue;
    if (line.size() != 2 || (line[0] != "exec" && line[0] != "python") || line[1][0] != '/')
      return path + ":" + std::to_string(number) +
             ": expected 'exec /absolute/program' or 'python /absolute/script.py'";
    allowed.emplace(line[0], line[1]);
  }
  return allowed;
}

} // namespace orch::runtime
