// The indexes deduplication decides with (DedupIndex.h).
#include "DedupIndex.h"

#include "orch/runtime/values/MinHash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

namespace orch::runtime {
namespace {

/// Tables grow (double) at this load, in eighths.
constexpr size_t kMaxLoadEighths = 7;

size_t slotOf(uint64_t hash, size_t capacity) { return size_t(hash) & (capacity - 1); }

} // namespace

uint32_t SurvivorPositions::add(uint64_t sourceRow, const std::vector<uint32_t> &path) {
  rows_.push_back(sourceRow);
  pathStarts_.push_back(uint32_t(pathOrdinals_.size()));
  pathOrdinals_.insert(pathOrdinals_.end(), path.begin(), path.end());
  return uint32_t(rows_.size() - 1);
}

std::vector<uint32_t> SurvivorPositions::path(uint32_t survivor) const {
  const uint32_t begin = pathStarts_[survivor];
  const uint32_t end = survivor + 1 < pathStarts_.size() ? pathStarts_[survivor + 1]
                                                         : uint32_t(pathOrdinals_.size());
  return {pathOrdinals_.begin() + begin, pathOrdinals_.begin() + end};
}

size_t SurvivorPositions::bytes() const {
  return rows_.capacity() * sizeof(uint64_t) + pathStarts_.capacity() * sizeof(uint32_t) +
         pathOrdinals_.capacity() * sizeof(uint32_t);
}

KeyHash hashKey(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  return KeyHash{hash.low64, hash.high64};
}

std::vector<uint32_t> ExactIndex::find(const KeyHash &key) const {
  std::vector<uint32_t> found;
  if (slots_.empty())
    return found;
  for (size_t at = slotOf(key.low, slots_.size()); slots_[at].survivor != UINT32_MAX;
       at = (at + 1) & (slots_.size() - 1))
    if (slots_[at].key == key)
      found.push_back(slots_[at].survivor);
  std::sort(found.begin(), found.end());
  return found;
}

void ExactIndex::insert(const KeyHash &key, uint32_t survivor) {
  if ((used_ + 1) * 8 > slots_.size() * kMaxLoadEighths)
    grow();
  size_t at = slotOf(key.low, slots_.size());
  while (slots_[at].survivor != UINT32_MAX)
    at = (at + 1) & (slots_.size() - 1);
  slots_[at] = Slot{key, survivor};
  ++used_;
}

void ExactIndex::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), Slot{});
  used_ = 0;
  for (const Slot &slot : old)
    if (slot.survivor != UINT32_MAX)
      insert(slot.key, slot.survivor);
}

NearIndex::NearIndex(uint32_t permutations, uint32_t bands, double threshold)
    : permutations_(permutations), bands_(bands), rows_(permutations / bands),
      threshold_(threshold), tables_(bands), used_(bands, 0) {}

uint32_t NearIndex::bandFingerprint(const std::vector<uint32_t> &signature, uint32_t band) const {
  return uint32_t(XXH3_64bits_withSeed(signature.data() + size_t(band) * rows_,
                                       size_t(rows_) * sizeof(uint32_t), band));
}

std::vector<NearIndex::Match> NearIndex::find(const std::vector<uint32_t> &signature) const {
  std::vector<Match> matches;
  if (signature.size() != permutations_)
    return matches;
  std::vector<uint32_t> candidates;
  for (uint32_t band = 0; band < bands_; ++band) {
    const std::vector<uint64_t> &table = tables_[band];
    if (table.empty())
      continue;
    const uint32_t fingerprint = bandFingerprint(signature, band);
    const uint64_t hash = XXH3_64bits_withSeed(&fingerprint, sizeof fingerprint, 0);
    for (size_t at = slotOf(hash, table.size()); table[at] != 0; at = (at + 1) & (table.size() - 1))
      if (uint32_t(table[at] >> 32) == fingerprint)
        candidates.push_back(uint32_t(table[at]) - 1);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<uint8_t> sketch(permutations_);
  for (uint32_t i = 0; i < permutations_; ++i)
    sketch[i] = uint8_t(signature[i]);
  for (uint32_t survivor : candidates) {
    const double similarity = estimateSimilarity(
        sketch.data(), sketches_.data() + size_t(survivor) * permutations_, permutations_);
    if (similarity >= threshold_)
      matches.push_back(Match{survivor, similarity});
  }
  return matches;
}

void NearIndex::insertInto(std::vector<uint64_t> &table, size_t &used, uint64_t entry) {
  if ((used + 1) * 8 > table.size() * kMaxLoadEighths) {
    std::vector<uint64_t> old = std::move(table);
    table.assign(std::max<size_t>(16, old.size() * 2), 0);
    used = 0;
    for (uint64_t kept : old)
      if (kept != 0)
        insertInto(table, used, kept);
  }
  const uint32_t fingerprint = uint32_t(entry >> 32);
  size_t at = slotOf(XXH3_64bits_withSeed(&fingerprint, sizeof fingerprint, 0), table.size());
  while (table[at] != 0)
    at = (at + 1) & (table.size() - 1);
  table[at] = entry;
  ++used;
}

void NearIndex::insert(const std::vector<uint32_t> &signature, uint32_t survivor) {
  for (uint32_t band = 0; band < bands_; ++band)
    insertInto(tables_[band], used_[band],
               uint64_t(bandFingerprint(signature, band)) << 32 | (uint64_t(survivor) + 1));
  for (uint32_t i = 0; i < permutations_; ++i)
    sketches_.push_back(uint8_t(signature[i]));
}

size_t NearIndex::bytes() const {
  size_t bytes = sketches_.capacity();
  for (const std::vector<uint64_t> &table : tables_)
    bytes += table.capacity() * sizeof(uint64_t);
  return bytes;
}

HammingIndex::HammingIndex(uint32_t distance)
    : distance_(distance), tables_(distance + 1), used_(distance + 1, 0) {}

uint64_t HammingIndex::segment(uint64_t hash, uint32_t index) const {
  const uint32_t segments = distance_ + 1;
  const uint32_t begin = index * 64 / segments, end = (index + 1) * 64 / segments;
  const uint64_t mask = end - begin >= 64 ? ~uint64_t(0) : (uint64_t(1) << (end - begin)) - 1;
  return (hash >> begin) & mask;
}

std::vector<HammingIndex::Match> HammingIndex::find(uint64_t hash) const {
  std::vector<uint32_t> candidates;
  for (uint32_t s = 0; s < tables_.size(); ++s) {
    const std::vector<uint32_t> &table = tables_[s];
    if (table.empty())
      continue;
    const uint64_t bits = segment(hash, s);
    const uint64_t key = XXH3_64bits_withSeed(&bits, sizeof bits, s);
    for (size_t at = slotOf(key, table.size()); table[at] != 0; at = (at + 1) & (table.size() - 1))
      if (segment(hashes_[table[at] - 1], s) == bits)
        candidates.push_back(table[at] - 1);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<Match> matches;
  for (uint32_t survivor : candidates)
    if (const int apart = __builtin_popcountll(hashes_[survivor] ^ hash); apart <= int(distance_))
      matches.push_back(Match{survivor, uint32_t(apart)});
  return matches;
}

void HammingIndex::insert(uint64_t hash, uint32_t survivor) {
  hashes_.push_back(hash);
  for (uint32_t s = 0; s < tables_.size(); ++s) {
    std::vector<uint32_t> &table = tables_[s];
    if ((used_[s] + 1) * 8 > table.size() * kMaxLoadEighths) {
      std::vector<uint32_t> old = std::move(table);
      table.assign(std::max<size_t>(16, old.size() * 2), 0);
      for (uint32_t entry : old)
        if (entry != 0) {
          const uint64_t bits = segment(hashes_[entry - 1], s);
          size_t at = slotOf(XXH3_64bits_withSeed(&bits, sizeof bits, s), table.size());
          while (table[at] != 0)
            at = (at + 1) & (table.size() - 1);
          table[at] = entry;
        }
    }
    const uint64_t bits = segment(hash, s);
    size_t at = slotOf(XXH3_64bits_withSeed(&bits, sizeof bits, s), table.size());
    while (table[at] != 0)
      at = (at + 1) & (table.size() - 1);
    table[at] = survivor + 1;
    ++used_[s];
  }
}

size_t HammingIndex::bytes() const {
  size_t bytes = hashes_.capacity() * sizeof(uint64_t);
  for (const std::vector<uint32_t> &table : tables_)
    bytes += table.capacity() * sizeof(uint32_t);
  return bytes;
}

std::optional<uint64_t> parseHexHash(std::string_view text) {
  if (text.empty() || text.size() > 16)
    return std::nullopt;
  uint64_t hash = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0)
      return std::nullopt;
    hash = hash << 4 | uint64_t(digit);
  }
  return hash;
}

} // namespace orch::runtime
