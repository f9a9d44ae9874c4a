// The indexes deduplication decides with (docs/runtime.md, "Deduplication"): the survivors so
// far of one Dedup node, in the order they were decided, and what identifies each. Exact: a
// table of 128-bit hashes of the survivors' values. Near: per LSH band, a table of the band's
// survivors, placed by a hash of the band's nibbles in their sketches (the low 4 bits of each
// MinHash minimum: b-bit MinHash) and told apart by those nibbles; the sketches also confirm a
// candidate by its estimated similarity. Flat open-addressing
// tables: bytes per survivor stay near what they hold (bench/dedup reports them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::runtime {

/// Where each survivor is: its root's source row and its ordinal path below the root.
class SurvivorPositions {
public:
  uint32_t add(uint64_t sourceRow, const std::vector<uint32_t> &path);
  size_t size() const { return rows_.size(); }
  uint64_t row(uint32_t survivor) const { return rows_[survivor]; }
  std::vector<uint32_t> path(uint32_t survivor) const;
  size_t bytes() const;

private:
  std::vector<uint64_t> rows_;
  std::vector<uint32_t> pathStarts_;
  std::vector<uint32_t> pathOrdinals_;
};

/// A 128-bit hash of a key's bytes (XXH3).
struct KeyHash {
  uint64_t low = 0, high = 0;
  friend bool operator==(const KeyHash &, const KeyHash &) = default;
};
KeyHash hashKey(std::string_view bytes, uint64_t seed = 0);

class ExactIndex {
public:
  /// The survivors with an equal key (several when survivors were retracted: their rows
  /// failed), in the order they were inserted.
  std::vector<uint32_t> find(const KeyHash &key) const;
  void insert(const KeyHash &key, uint32_t survivor);
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
  struct Slot {
    KeyHash key;
    uint32_t survivor = UINT32_MAX;
  };
  void grow();
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

class NearIndex {
public:
  /// `exact`: candidates are confirmed by the Jaccard similarity of their shingle sets
  /// (confirm: "exact"), which the index then keeps; otherwise by their sketches' estimate.
  NearIndex(uint32_t permutations, uint32_t bands, double threshold, bool exact = false);

  struct Match {
    uint32_t survivor = 0;
    double similarity = 0;
  };
  /// The survivors that share a band with `signature` and whose estimated similarity reaches
  /// the threshold, by survivor number.
  std::vector<Match> find(const std::vector<uint32_t> &signature,
                          const std::vector<uint32_t> &shingles = {}) const;
  /// `survivor` must be the next one (0, 1, 2, ...); `shingles` (sorted hashes) when exact.
  void insert(const std::vector<uint32_t> &signature, uint32_t survivor,
              const std::vector<uint32_t> &shingles = {});
  bool exact() const { return exact_; }
  size_t bytes() const;
  uint32_t permutations() const { return permutations_; }

private:
  /// A hash of the sketch's nibbles in `band`, and whether two sketches have the same ones.
  uint64_t bandHash(const uint8_t *sketch, uint32_t band) const;
  bool sameBand(const uint8_t *a, const uint8_t *b, uint32_t band) const;
  const uint8_t *sketchOfSurvivor(uint32_t survivor) const;
  void place(uint32_t band, uint32_t survivor);

  uint32_t permutations_, bands_, rows_, sketchBytes_;
  double threshold_;
  bool exact_;
  /// confirm: "exact": each survivor's sorted shingle hashes.
  std::vector<std::vector<uint32_t>> shingles_;
  /// Per band: survivor + 1, 0 when empty, linear probing from the band's hash.
  std::vector<std::vector<uint32_t>> tables_;
  std::vector<size_t> used_;
  /// Sketches in blocks of kSketchBlock survivors: no doubling slack.
  static constexpr size_t kSketchBlock = 256;
  std::vector<std::vector<uint8_t>> sketches_;
  uint32_t count_ = 0;
};

/// 64-bit perceptual hashes within a Hamming distance: split into distance + 1 segments, two
/// hashes that close share one segment exactly (pigeonhole), so one table per segment finds
/// every candidate, and the stored hash confirms it.
class HammingIndex {
public:
  explicit HammingIndex(uint32_t distance);

  struct Match {
    uint32_t survivor = 0;
    uint32_t distance = 0;
  };
  /// The survivors within the distance, by survivor number.
  std::vector<Match> find(uint64_t hash) const;
  /// `survivor` must be the next one (0, 1, 2, ...).
  void insert(uint64_t hash, uint32_t survivor);
  size_t bytes() const;

private:
  uint64_t segment(uint64_t hash, uint32_t index) const;
  uint32_t distance_;
  /// Per segment: survivor + 1, 0 when empty, linear probing by the segment's bits.
  std::vector<std::vector<uint32_t>> tables_;
  std::vector<size_t> used_;
  std::vector<uint64_t> hashes_;
};

/// A perceptual hash as `image.phash` writes it (hex digits), or nullopt.
std::optional<uint64_t> parseHexHash(std::string_view text);

} // namespace orch::runtime
