// Space reserved past a file's end for bytes held back (ReservedSpace.h).
#include "orch/runtime/outputs/ReservedSpace.h"

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

namespace orch::runtime {

bool ReservedSpace::begin(int fd, uint64_t end) {
  reservedTo_ = end;
  step_ = kStep;
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(end), off_t(kStep)) != 0)
    return false;
  reservedTo_ = end + kStep;
  return true;
}

bool ReservedSpace::reserve(int fd, uint64_t end) {
  if (end <= reservedTo_)
    return true;
  if (step_ > 0) {
    const uint64_t to = std::max(end, reservedTo_ + step_);
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(reservedTo_), off_t(to - reservedTo_)) == 0) {
      reservedTo_ = to;
      return true;
    }
    step_ = 0; // no room for a step: from now on only what is needed
  }
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(reservedTo_), off_t(end - reservedTo_)) != 0)
    return false;
  reservedTo_ = end;
  return true;
}

void ReservedSpace::cutTo(uint64_t size) { reservedTo_ = std::min(reservedTo_, size); }

void ReservedSpace::release(int fd, uint64_t size) {
  if (reservedTo_ > size) {
    (void)::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(size),
                      off_t(reservedTo_ - size));
    (void)::ftruncate(fd, off_t(size));
  }
  reservedTo_ = size;
}

} // namespace orch::runtime
