// text.normalize: Unicode NFC (ICU), whitespace runs collapsed to one space, trimmed.
#include "OperatorGroups.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

namespace orch::stdlib {
namespace {

using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class NormalizeOperator : public runtime::Operator {
public:
  NormalizeOperator() {
    UErrorCode status = U_ZERO_ERROR;
    nfc_ = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status))
      throw runtime::OperatorError("text.normalize: ICU has no NFC data");
  }
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      UErrorCode status = U_ZERO_ERROR;
      const icu::UnicodeString normalized =
          nfc_->normalize(icu::UnicodeString::fromUTF8(row.inputs[0].asString()), status);
      if (U_FAILURE(status)) {
        results.push_back(RowResult::recordFailure("text.normalize: not valid UTF-8 text"));
        continue;
      }
      std::string nfc, collapsed;
      normalized.toUTF8String(nfc);
      bool space = false;
      for (char c : nfc) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
          space = !collapsed.empty();
          continue;
        }
        if (space)
          collapsed += ' ';
        space = false;
        collapsed += c;
      }
      results.push_back(RowResult::ok(Value::string(std::move(collapsed))));
    }
  }

private:
  const icu::Normalizer2 *nfc_ = nullptr;
};

} // namespace

void registerTextNormalize(runtime::OperatorRegistry &registry) {
  registry.addTransform("text.normalize", [](const runtime::OperatorConfig &) {
    return std::make_unique<NormalizeOperator>();
  });
}

} // namespace orch::stdlib
