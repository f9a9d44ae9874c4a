// MinHash signatures of text (the datasketch / DataTrove method): what `dedup.minhash` computes
// on workers and `dedup.near` compares in the engine (docs/operators.md, "dedup"). Word n-gram
// shingles of the normalised text, each hashed (XXH3, low 32 bits) and put through
// `permutations` universal hashes (a*h + b) mod (2^61 - 1), keeping each one's minimum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orch::runtime {

struct MinHashShape {
  uint32_t ngram = 5;
  uint32_t permutations = 128;
  uint64_t seed = 1;
};

/// The shingles' hashes of `text`, each once, in no particular order: words are maximal runs of
/// bytes other than ASCII whitespace and punctuation, ASCII letters lowercased; a shingle is
/// `ngram` consecutive words joined by one space (all the words when there are fewer).
std::vector<uint32_t> shingleHashes(std::string_view text, uint32_t ngram);

/// The universal hashes' coefficients (a, b) for `shape`, from a splitmix64 stream of its seed.
struct MinHashPermutations {
  explicit MinHashPermutations(const MinHashShape &shape);
  std::vector<uint64_t> a, b;
};

/// One 32-bit minimum per permutation; all 0xFFFFFFFF for a text without words.
std::vector<uint32_t> minhashSignature(std::string_view text, uint32_t ngram,
                                       const MinHashPermutations &permutations);

/// The signature as `dedup.minhash` returns it: little-endian uint32s.
std::string encodeSignature(const std::vector<uint32_t> &signature);
/// The minima of an encoded signature (nullopt-free: a size not a multiple of 4 gives fewer).
std::vector<uint32_t> decodeSignature(std::string_view bytes);

/// A signature's sketch: the low 4 bits of each minimum, two to a byte (b-bit MinHash, b = 4),
/// what the index keeps of a survivor.
std::vector<uint8_t> sketchOf(const std::vector<uint32_t> &signature);
/// Minimum `i` of a sketch.
inline uint8_t sketchNibble(const uint8_t *sketch, size_t i) {
  return uint8_t(sketch[i / 2] >> (4 * (i % 2))) & 0xF;
}

/// The Jaccard similarity two sketches estimate: the share of equal nibbles, less the 1/16 of
/// chance agreement, in [0, 1].
double estimateSimilarity(const uint8_t *a, const uint8_t *b, size_t permutations);

} // namespace orch::runtime
