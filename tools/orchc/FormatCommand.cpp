// `orchc fmt`: formats each file on its own; a file with syntax errors is reported and left as
// it is, and the others are still formatted.
#include "FormatCommand.h"

#include "orch/format/Formatter.h"
#include "orch/frontend/Parser.h"
#include "orch/ir/DiagnosticPrinter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace orch {
namespace {

/// Replaces `path` atomically (a temporary file renamed over it), keeping its permissions.
bool writeFile(const std::string &path, const std::string &text) {
  const std::string temporary = path + ".orchfmt.tmp";
  std::error_code error;
  {
    llvm::raw_fd_ostream out(temporary, error);
    if (!error) {
      out << text;
      out.close();
      error = out.error();
    }
  }
  if (!error) {
    if (llvm::ErrorOr<llvm::sys::fs::perms> permissions = llvm::sys::fs::getPermissions(path))
      llvm::sys::fs::setPermissions(temporary, *permissions);
    error = llvm::sys::fs::rename(temporary, path);
  }
  if (error) {
    llvm::sys::fs::remove(temporary);
    llvm::errs() << "orchc: error: cannot write '" << path << "': " << error.message() << "\n";
    return false;
  }
  return true;
}

/// Formats one file; false when it could not be (or, with --check, is not) formatted.
bool formatOne(const std::string &path, const FormatOptions &options) {
  llvm::SourceMgr sources;
  DiagnosticPrintOptions printOptions;
  printOptions.programName = "orchc";
  printOptions.colors = llvm::WithColor::defaultAutoDetectFunction()(llvm::errs());
  DiagnosticEngine diags([&](const Diagnostic &diagnostic) {
    printDiagnostic(sources, diagnostic, llvm::errs(), printOptions);
  });
  const bool fromStdin = path == "-";
  std::optional<uint32_t> buffer;
  if (fromStdin) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> input = llvm::MemoryBuffer::getSTDIN();
    if (!input) {
      llvm::errs() << "orchc: error: cannot read standard input\n";
      return false;
    }
    buffer = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy((*input)->getBuffer(), "<stdin>"), llvm::SMLoc());
  } else {
    buffer = frontend::loadSourceFile(sources, path, diags);
  }
  if (!buffer)
    return false;
  std::optional<std::string> formatted = format::formatSource(sources, *buffer, diags);
  if (!formatted) {
    llvm::errs() << "orchc: " << (fromStdin ? std::string("<stdin>") : path)
                 << ": not formatted (it does not parse; see the errors above)\n";
    return false;
  }
  if (fromStdin) {
    if (options.check)
      return *formatted == sources.getMemoryBuffer(*buffer)->getBuffer();
    llvm::outs() << *formatted;
    return true;
  }
  if (*formatted == sources.getMemoryBuffer(*buffer)->getBuffer())
    return true;
  llvm::outs() << path << "\n";
  return !options.check && writeFile(path, *formatted);
}

} // namespace

int runFormat(const FormatOptions &options) {
  bool ok = true;
  for (const std::string &path : options.paths)
    ok = formatOne(path, options) && ok;
  return ok ? 0 : 1;
}

} // namespace orch
