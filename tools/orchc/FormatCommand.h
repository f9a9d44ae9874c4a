// What `orchc fmt` does: rewrite .orch files in their canonical layout, or (--check) list the
// ones that are not.
#pragma once

#include <string>
#include <vector>

namespace orch {

struct FormatOptions {
  /// Files to format; "-" reads standard input and writes the result to standard output.
  std::vector<std::string> paths;
  /// Write nothing; list the files whose layout differs and fail if there are any.
  bool check = false;
};

/// 0 when every file was formatted (or, with --check, already was); 1 when one has syntax
/// errors, cannot be read or written, or (with --check) is not formatted.
int runFormat(const FormatOptions &options);

} // namespace orch
