// dedup.minhash: MinHash signatures of texts (runtime/values MinHash.h), the part of
// `dedup.near` that runs in batches on workers.
#include "OperatorGroups.h"

#include "orch/runtime/values/MinHash.h"

namespace orch::stdlib {
namespace {

using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class MinHashOperator : public runtime::Operator {
public:
  explicit MinHashOperator(const runtime::OperatorConfig &config)
      : ngram_(uint32_t(config.intConstant("ngram"))),
        shingles_(config.constant("shingles") && config.boolConstant("shingles")),
        permutations_(runtime::MinHashShape{ngram_, permutationsOf(config),
                                            uint64_t(config.intConstant("seed"))}) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      const std::string_view text = row.inputs[0].asString();
      std::string bytes =
          runtime::encodeSignature(runtime::minhashSignature(text, ngram_, permutations_));
      if (shingles_)
        bytes += runtime::encodeSignature(runtime::shingleHashes(text, ngram_));
      results.push_back(RowResult::ok(Value::bytes(std::move(bytes))));
    }
  }

private:
  static uint32_t permutationsOf(const runtime::OperatorConfig &config) {
    const int64_t permutations = config.intConstant("permutations");
    if (permutations < 1 || permutations > 1024)
      throw runtime::OperatorError("dedup.minhash: 'permutations' must be 1 to 1024");
    return uint32_t(permutations);
  }

  uint32_t ngram_;
  bool shingles_;
  runtime::MinHashPermutations permutations_;
};

} // namespace

void registerMinHash(runtime::OperatorRegistry &registry) {
  registry.addTransform("dedup.minhash", [](const runtime::OperatorConfig &config) {
    return std::make_unique<MinHashOperator>(config);
  });
}

} // namespace orch::stdlib
