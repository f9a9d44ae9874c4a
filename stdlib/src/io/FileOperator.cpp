// `file(path)`: String -> File, checked where it runs, so that a manifest's paths become the
// same File values the files source gives (docs/language.md, manifests). A path that is
// missing, not a regular file or unreadable fails its row with the path and the reason.
#include "OperatorGroups.h"
#include "io/FileIo.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class FileOperator : public runtime::Operator {
public:
  explicit FileOperator(const OperatorConfig &) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      if (row.inputs[0].kind() != Value::Kind::String) {
        results.push_back(RowResult::recordFailure("file: the path is not a String"));
        continue;
      }
      const std::string &path = row.inputs[0].asString();
      std::string problem = checkReadable(path);
      results.push_back(problem.empty()
                            ? RowResult::ok(fileValue(path))
                            : RowResult::recordFailure("file: \"" + path + "\" " + problem));
    }
  }

private:
  /// Why `path` is not a readable regular file, or "".
  static std::string checkReadable(const std::string &path) {
    if (path.empty())
      return "is empty";
    if (path.find('\0') != std::string::npos)
      return "holds a NUL character";
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0)
      return errno == ENOENT ? "does not exist"
                             : std::string("cannot be read: ") + std::strerror(errno);
    if (S_ISDIR(info.st_mode))
      return "is a directory";
    if (!S_ISREG(info.st_mode))
      return "is not a regular file";
    if (::access(path.c_str(), R_OK) != 0)
      return std::string("cannot be read: ") + std::strerror(errno);
    return "";
  }
};

} // namespace

void registerFileOperator(runtime::OperatorRegistry &registry) {
  registry.addTransform(
      "file", [](const OperatorConfig &config) { return std::make_unique<FileOperator>(config); });
}

} // namespace orch::stdlib
