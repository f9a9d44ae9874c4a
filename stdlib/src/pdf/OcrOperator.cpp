// ocr.tesseract (Image -> Text): one tesseract engine per replica, initialised with the Call's
// language (or, when `lang` is given per row, with each batch's: the engine batches by it, and
// the replica loads another language only when a batch asks for it), fed whole images (RGB or
// gray) at their rendering resolution.
#include "OperatorGroups.h"
#include "image/ImageValue.h"

#include "orch/runtime/operators/LibraryMessages.h"

#include <leptonica/allheaders.h>
#include <tesseract/baseapi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class TesseractOperator : public runtime::Operator {
public:
  explicit TesseractOperator(const OperatorConfig &config) {
    const std::vector<std::string> &labels = config.inputLabels();
    const auto found = std::find(labels.begin(), labels.end(), "lang");
    if (found != labels.end()) {
      langInput_ = size_t(found - labels.begin());
      return;
    }
    if (std::string problem = load(config.stringConstant("lang")); !problem.empty())
      throw runtime::OperatorError(problem);
  }
  ~TesseractOperator() override { engine_.End(); }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      // What leptonica prints about this image names its row.
      runtime::noteCurrentItem(results.size());
      // Per row, the engine batches by language, so a replica switches only between batches.
      if (langInput_)
        if (std::string problem = use(row.inputs[*langInput_]); !problem.empty()) {
          results.push_back(RowResult::recordFailure(problem));
          continue;
        }
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
  /// Makes `lang` the engine's language; why it cannot, or "" (a language that failed to load
  /// is not tried again).
  std::string use(const Value &lang) {
    if (lang.kind() != Value::Kind::String)
      return "ocr.tesseract: the language is not a String";
    if (loaded_ && lang.asString() == *loaded_)
      return "";
    if (auto failed = unloadable_.find(lang.asString()); failed != unloadable_.end())
      return failed->second;
    std::string problem = load(lang.asString());
    if (!problem.empty())
      unloadable_.emplace(lang.asString(), problem);
    return problem;
  }

  /// Loads `lang` ("eng", "deu+eng") into the engine; why it cannot, or "". Every language
  /// named must load: tesseract itself goes on without the ones it cannot find.
  std::string load(const std::string &lang) {
    engine_.End();
    loaded_.reset();
    if (lang.empty())
      return "ocr.tesseract: no language given (lang is \"\"; \"eng\" is English)";
    engine_.SetVariable("debug_file", "/dev/null");
    if (engine_.Init(nullptr, lang.c_str(), tesseract::OEM_LSTM_ONLY) != 0)
      return cannotLoad(lang);
    std::vector<std::string> loaded;
    engine_.GetLoadedLanguagesAsVector(&loaded);
    std::stringstream wanted(lang);
    for (std::string part; std::getline(wanted, part, '+');)
      if (std::find(loaded.begin(), loaded.end(), part) == loaded.end()) {
        engine_.End();
        return cannotLoad(part);
      }
    // Page layout analysis, as tesseract's command line does: the library's default reads a
    // page as one block of text, which runs columns and captions into each other.
    engine_.SetPageSegMode(tesseract::PSM_AUTO);
    loaded_ = lang;
    return "";
  }

  static std::string cannotLoad(const std::string &lang) {
    return "ocr.tesseract: cannot load language \"" + lang + "\" (is tesseract-ocr-" + lang +
           " installed?)";
  }

  tesseract::TessBaseAPI engine_;
  /// The input that carries each row's language, when it is given per row.
  std::optional<size_t> langInput_;
  /// The language the engine holds; none before one loads (or after one failed to).
  std::optional<std::string> loaded_;
  std::map<std::string, std::string> unloadable_;
};

} // namespace

void registerOcrOperator(runtime::OperatorRegistry &registry) {
  // Leptonica's messages ("Error in boxClipToRectangle: box outside rectangle") with the Call,
  // replica and row they came from, instead of bare lines on standard error.
  leptSetStderrHandler([](const char *message) {
    runtime::reportLibraryMessage("leptonica", message ? message : "");
  });
  registry.addTransform("ocr.tesseract", [](const OperatorConfig &config) {
    return std::make_unique<TesseractOperator>(config);
  });
}

} // namespace orch::stdlib
