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

/// A slot of a table of any capacity (the near index's grow by a quarter, not doubling, so that
/// they are never less than 7/10 full after they grew: bytes per survivor stay even).
size_t anySlotOf(uint64_t hash, size_t capacity) {
  // The hash's high 32 bits scaled to the capacity (tables stay far below 2^32 slots).
  return size_t((uint64_t(uint32_t(hash >> 32)) * capacity) >> 32);
}

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

KeyHash hashKey(std::string_view bytes, uint64_t seed) {
  const XXH128_hash_t hash = XXH3_128bits_withSeed(bytes.data(), bytes.size(), seed);
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

NearIndex::NearIndex(uint32_t permutations, uint32_t bands, double threshold, bool exact)
    : permutations_(permutations), bands_(bands), rows_(permutations / bands),
      sketchBytes_((permutations + 1) / 2), threshold_(threshold), exact_(exact), tables_(bands),
      used_(bands, 0) {}

namespace {

/// The Jaccard similarity of two sorted sets (1 for two empty ones, as their signatures say).
double jaccard(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b) {
  if (a.empty() && b.empty())
    return 1;
  size_t both = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) {
      ++both, ++i, ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return double(both) / double(a.size() + b.size() - both);
}

} // namespace

uint64_t NearIndex::bandHash(const uint8_t *sketch, uint32_t band) const {
  uint64_t nibbles[16] = {};
  uint64_t hash = band;
  for (uint32_t r = 0, at = band * rows_; r < rows_; ++r, ++at) {
    nibbles[r % 16] = nibbles[r % 16] << 4 | sketchNibble(sketch, at);
    if (r % 16 == 15 || r + 1 == rows_)
      hash = XXH3_64bits_withSeed(nibbles, sizeof nibbles, hash);
  }
  return hash;
}

bool NearIndex::sameBand(const uint8_t *a, const uint8_t *b, uint32_t band) const {
  for (uint32_t r = 0, at = band * rows_; r < rows_; ++r, ++at)
    if (sketchNibble(a, at) != sketchNibble(b, at))
      return false;
  return true;
}

const uint8_t *NearIndex::sketchOfSurvivor(uint32_t survivor) const {
  return sketches_[survivor / kSketchBlock].data() + size_t(survivor % kSketchBlock) * sketchBytes_;
}

std::vector<NearIndex::Match> NearIndex::find(const std::vector<uint32_t> &signature,
                                              const std::vector<uint32_t> &shingles) const {
  std::vector<Match> matches;
  if (signature.size() != permutations_)
    return matches;
  const std::vector<uint8_t> sketch = sketchOf(signature);
  std::vector<uint32_t> candidates;
  for (uint32_t band = 0; band < bands_; ++band) {
    const std::vector<uint32_t> &table = tables_[band];
    if (table.empty())
      continue;
    for (size_t at = anySlotOf(bandHash(sketch.data(), band), table.size()); table[at] != 0;
         at = at + 1 == table.size() ? 0 : at + 1)
      if (sameBand(sketch.data(), sketchOfSurvivor(table[at] - 1), band))
        candidates.push_back(table[at] - 1);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (uint32_t survivor : candidates) {
    const double similarity =
        exact_ ? jaccard(shingles, shingles_[survivor])
               : estimateSimilarity(sketch.data(), sketchOfSurvivor(survivor), permutations_);
    if (similarity >= threshold_)
      matches.push_back(Match{survivor, similarity});
  }
  return matches;
}

void NearIndex::place(uint32_t band, uint32_t survivor) {
  std::vector<uint32_t> &table = tables_[band];
  size_t at = anySlotOf(bandHash(sketchOfSurvivor(survivor), band), table.size());
  while (table[at] != 0)
    at = at + 1 == table.size() ? 0 : at + 1;
  table[at] = survivor + 1;
}

void NearIndex::insert(const std::vector<uint32_t> &signature, uint32_t survivor,
                       const std::vector<uint32_t> &shingles) {
  if (exact_)
    shingles_.push_back(shingles);
  if (survivor % kSketchBlock == 0) {
    sketches_.emplace_back();
    sketches_.back().reserve(kSketchBlock * sketchBytes_);
  }
  const std::vector<uint8_t> sketch = sketchOf(signature);
  sketches_.back().insert(sketches_.back().end(), sketch.begin(), sketch.end());
  count_ = survivor + 1;
  for (uint32_t band = 0; band < bands_; ++band) {
    std::vector<uint32_t> &table = tables_[band];
    if ((used_[band] + 1) * 8 > table.size() * kMaxLoadEighths) {
      const std::vector<uint32_t> old = std::move(table);
      table.assign(std::max<size_t>(16, old.size() + old.size() / 4), 0);
      table.shrink_to_fit();
      for (uint32_t entry : old)
        if (entry != 0)
          place(band, entry - 1);
    }
    place(band, survivor);
    ++used_[band];
  }
}

size_t NearIndex::bytes() const {
  size_t bytes = 0;
  for (const std::vector<uint8_t> &block : sketches_)
    bytes += block.capacity();
  for (const std::vector<uint32_t> &table : tables_)
    bytes += table.capacity() * sizeof(uint32_t);
  for (const std::vector<uint32_t> &set : shingles_)
    bytes += sizeof set + set.capacity() * sizeof(uint32_t);
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
