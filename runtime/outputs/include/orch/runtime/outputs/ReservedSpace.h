// Space reserved in a file for bytes a writer holds back to write together (group commit: a
// jsonl sink's lines, the run journal's records): the file's blocks past its end
// (fallocate with FALLOC_FL_KEEP_SIZE; its size does not move), so that writing the held bytes
// later cannot fail for want of room, and a full disk fails the row that did not fit when it
// is prepared, as a write of it would have.
#pragma once

#include <cstdint>

namespace orch::runtime {

class ReservedSpace {
public:
  /// Starts at the file's end `end`, reserving a first step: false when the file system
  /// cannot reserve space (no such call: NFS, ZFS) or has no room for a step (the writer then
  /// writes each row at once).
  bool begin(int fd, uint64_t end);
  /// Space up to `end` at least: a step ahead while the steps find room, then only what is
  /// needed (a disk nearly full keeps no more than it must from other writers); false with
  /// errno (ENOSPC) when even that cannot be had.
  bool reserve(int fd, uint64_t end);
  /// The file was cut back to `size`: what was reserved past it went with it.
  void cutTo(uint64_t size);
  /// Gives back what is reserved past `size`, the file's end: a hole punched there (tmpfs,
  /// XFS), and a truncation to that size (ext4 ignores holes past a file's end).
  void release(int fd, uint64_t size);

  static constexpr uint64_t kStep = 16 * 1024;

private:
  uint64_t reservedTo_ = 0;
  uint64_t step_ = kStep;
};

} // namespace orch::runtime
