// MinHash signatures (MinHash.h).
#include "orch/runtime/values/MinHash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <unordered_set>

namespace orch::runtime {
namespace {

constexpr uint64_t kMersennePrime = (uint64_t(1) << 61) - 1;

bool separatesWords(unsigned char c) {
  switch (c) {
  case ' ':
  case '\t':
  case '\n':
  case '\v':
  case '\f':
  case '\r':
    return true;
  default:
    // ASCII punctuation: !"#$%&'()*+,-./ :;<=>?@ [\]^_` {|}~
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
}

uint64_t splitmix64(uint64_t &state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

} // namespace

std::vector<uint32_t> shingleHashes(std::string_view text, uint32_t ngram) {
  // The normalised words, one space between them, and where each starts.
  std::string words;
  std::vector<size_t> starts;
  words.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && separatesWords(static_cast<unsigned char>(text[i])))
      ++i;
    if (i == text.size())
      break;
    if (!starts.empty())
      words += ' ';
    starts.push_back(words.size());
    for (; i < text.size() && !separatesWords(static_cast<unsigned char>(text[i])); ++i) {
      const char c = text[i];
      words += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    }
  }
  std::vector<uint32_t> hashes;
  if (starts.empty())
    return hashes;
  const size_t n = std::max<uint32_t>(ngram, 1);
  const size_t shingles = starts.size() >= n ? starts.size() - n + 1 : 1;
  hashes.reserve(shingles);
  for (size_t s = 0; s < shingles; ++s) {
    const size_t begin = starts[s];
    const size_t last = std::min(s + n, starts.size());
    const size_t end = last < starts.size() ? starts[last] - 1 : words.size();
    hashes.push_back(uint32_t(XXH3_64bits(words.data() + begin, end - begin)));
  }
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  return hashes;
}

MinHashPermutations::MinHashPermutations(const MinHashShape &shape) {
  uint64_t state = shape.seed;
  a.reserve(shape.permutations);
  b.reserve(shape.permutations);
  for (uint32_t i = 0; i < shape.permutations; ++i) {
    a.push_back(splitmix64(state) % (kMersennePrime - 1) + 1);
    b.push_back(splitmix64(state) % kMersennePrime);
  }
}

std::vector<uint32_t> minhashSignature(std::string_view text, uint32_t ngram,
                                       const MinHashPermutations &permutations) {
  const size_t count = permutations.a.size();
  std::vector<uint32_t> signature(count, 0xFFFFFFFFu);
  const std::vector<uint32_t> hashes = shingleHashes(text, ngram);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t a = permutations.a[i], b = permutations.b[i];
    uint32_t lowest = 0xFFFFFFFFu;
    // uint64 arithmetic wraps before the modulus, as datasketch's NumPy code does.
    for (uint32_t h : hashes)
      lowest = std::min(lowest, uint32_t(((a * h + b) % kMersennePrime) & 0xFFFFFFFFu));
    signature[i] = lowest;
  }
  return signature;
}

std::string encodeSignature(const std::vector<uint32_t> &signature) {
  std::string bytes;
  bytes.reserve(signature.size() * 4);
  for (uint32_t value : signature)
    for (int shift = 0; shift < 32; shift += 8)
      bytes += char((value >> shift) & 0xff);
  return bytes;
}

std::vector<uint32_t> decodeSignature(std::string_view bytes) {
  std::vector<uint32_t> values(bytes.size() / 4);
  for (size_t i = 0; i < values.size(); ++i)
    for (int k = 0; k < 4; ++k)
      values[i] |= uint32_t(uint8_t(bytes[4 * i + k])) << (8 * k);
  return values;
}

std::vector<uint8_t> sketchOf(const std::vector<uint32_t> &signature) {
  std::vector<uint8_t> sketch((signature.size() + 1) / 2, 0);
  for (size_t i = 0; i < signature.size(); ++i)
    sketch[i / 2] |= uint8_t((signature[i] & 0xF) << (4 * (i % 2)));
  return sketch;
}

double estimateSimilarity(const uint8_t *a, const uint8_t *b, size_t permutations) {
  if (permutations == 0)
    return 0;
  size_t equal = 0;
  for (size_t i = 0; i < permutations; ++i)
    equal += sketchNibble(a, i) == sketchNibble(b, i);
  constexpr double chance = 1.0 / 16;
  const double estimate = (double(equal) / double(permutations) - chance) / (1 - chance);
  return std::clamp(estimate, 0.0, 1.0);
}

} // namespace orch::runtime
