// What the standard library's sinks share: their constants' checks, directories made, locked
// and probed at start, whole writes, safe names and the hidden files that wait for a commit.
#pragma once

#include "JsonValue.h"

#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/outputs/OutputFiles.h"

#include <filesystem>
#include <string>
#include <string_view>

namespace orch::stdlib {

/// `order` is "finish" or "source" (the run loop orders rows; docs/outputs.md).
void checkOrder(const runtime::OperatorConfig &config);

/// `nonfinite` is "fail" or "null".
NonFinite nonFiniteOption(const runtime::OperatorConfig &config);

/// The position of input `label` among the sink's values.
size_t labelIndex(const runtime::OperatorConfig &config, const std::string &label);

void createDirectory(const std::filesystem::path &dir, const runtime::OperatorConfig &config);

using runtime::isStandardStream;
using runtime::writeAll;

/// A file name that stays inside the output directory: separators, control characters and NUL
/// become `_`, and it never starts with a dot (no hidden files, no `..`).
std::string sanitizeFileName(const std::string &name);

/// Where a file being written waits until its root commits: hidden, and named so that a
/// resumed run can tell its own leftovers from the user's files.
inline constexpr std::string_view kPartialSuffix = ".orch-partial";

/// One run at a time writes in `dir` (a flock on the directory itself: no file of ours among
/// the outputs); the locked descriptor, kept open by the sink.
int lockDirectory(const std::filesystem::path &dir, const runtime::OperatorConfig &config);

/// Files of rows that were never committed (a run that was killed) go.
void removePartialFiles(const std::filesystem::path &dir);

/// Opens an output file with `flags` (O_CREAT included), refusing a symbolic link at `path`
/// (a link planted there would redirect the output): the file the link points to can be
/// named instead. The process's own streams, and links to devices or pipes, are opened as they
/// are. `what` names the output in messages.
int openOutputFile(const std::filesystem::path &path, int flags, const std::string &what);

/// The hidden name a file `name` waits under until its root commits (a hash of it, when the
/// plain hidden name would pass the 255-byte limit).
std::string partialName(const std::string &name);

/// Creates the partial file `partial` in the directory `dirFd`, replacing whatever is there
/// (a leftover, a planted link) without writing through it; -1 with errno otherwise.
int createPartialFile(int dirFd, const std::string &partial);

/// A directory the run cannot write in stops it before the first row.
void probeWritable(const std::filesystem::path &dir, const runtime::OperatorConfig &config);

} // namespace orch::stdlib
