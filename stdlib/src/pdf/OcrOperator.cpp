// ocr.tesseract (Image -> Text): one tesseract engine per replica, initialised once with the
// Call's language, fed whole images (RGB or gray) at their rendering resolution.
#include "OperatorGroups.h"
#include "image/ImageValue.h"

#include <tesseract/baseapi.h>

#include <memory>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class TesseractOperator : public runtime::Operator {
public:
  explicit TesseractOperator(const OperatorConfig &config) {
    const std::string lang = config.stringConstant("lang");
    engine_.SetVariable("debug_file", "/dev/null");
    if (engine_.Init(nullptr, lang.c_str(), tesseract::OEM_LSTM_ONLY) != 0)
      throw runtime::OperatorError("ocr.tesseract: cannot load language \"" + lang +
                                   "\" (is tesseract-ocr-" + lang + " installed?)");
    // Page layout analysis, as tesseract's command line does: the library's default reads a
    // page as one block of text, which runs columns and captions into each other.
    engine_.SetPageSegMode(tesseract::PSM_AUTO);
  }
  ~TesseractOperator() override { engine_.End(); }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      std::string problem;
      std::optional<ImageView> image = imageView(row.inputs[0], problem);
      if (!image) {
        results.push_back(RowResult::recordFailure(problem));
        continue;
      }
      engine_.SetImage(image->pixels, int(image->width), int(image->height), int(image->channels),
                       int(image->width * image->channels));
      const Value *dpi = row.inputs[0].field("dpi");
      engine_.SetSourceResolution(dpi && dpi->kind() == Value::Kind::Int ? int(dpi->asInt()) : 150);
      std::unique_ptr<char[]> text(engine_.GetUTF8Text());
      if (!text) {
        results.push_back(RowResult::recordFailure("tesseract could not read the image"));
        continue;
      }
      results.push_back(RowResult::ok(Value::string(text.get())));
    }
  }

private:
  tesseract::TessBaseAPI engine_;
};

} // namespace

void registerOcrOperator(runtime::OperatorRegistry &registry) {
  registry.addTransform("ocr.tesseract", [](const OperatorConfig &config) {
    return std::make_unique<TesseractOperator>(config);
  });
}

} // namespace orch::stdlib
