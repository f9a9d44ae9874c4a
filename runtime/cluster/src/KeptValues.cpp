// A worker's kept values (KeptValues.h).
#include "KeptValues.h"

#include <random>

namespace orch::runtime {

KeptValues::KeptValues() {
  std::random_device random;
  // 62 random bits: sessions' id ranges do not meet in practice, and ids stay far from the
  // top of MessagePack's integers.
  nextId_ = ((uint64_t(random()) << 32) ^ random()) & ((uint64_t(1) << 62) - 1);
}

uint64_t KeptValues::keep(Value value) {
  const uint64_t size = approximateBytes(value);
  std::lock_guard lock(mutex_);
  const uint64_t id = nextId_++;
  values_.emplace(id, std::move(value));
  bytes_ += size;
  return id;
}

std::optional<Value> KeptValues::find(uint64_t id) const {
  std::lock_guard lock(mutex_);
  auto found = values_.find(id);
  if (found == values_.end())
    return std::nullopt;
  return found->second;
}

BlobsMessage KeptValues::findAll(const std::vector<uint64_t> &ids) const {
  BlobsMessage blobs;
  std::lock_guard lock(mutex_);
  for (uint64_t id : ids)
    if (auto found = values_.find(id); found != values_.end()) {
      blobs.ids.push_back(id);
      blobs.values.push_back(found->second);
    }
  return blobs;
}

uint64_t KeptValues::drop(const std::vector<uint64_t> &ids) {
  std::vector<Value> released;
  uint64_t freed = 0;
  {
    std::lock_guard lock(mutex_);
    for (uint64_t id : ids) {
      auto found = values_.find(id);
      if (found == values_.end())
        continue;
      const uint64_t size = approximateBytes(found->second);
      bytes_ -= size;
      freed += size;
      released.push_back(std::move(found->second));
      values_.erase(found);
    }
  }
  // The memory goes back outside the lock.
  released.clear();
  return freed;
}

size_t KeptValues::count() const {
  std::lock_guard lock(mutex_);
  return values_.size();
}

uint64_t KeptValues::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

} // namespace orch::runtime
