// pdf.pages (File -> List<PdfPage>), pdf.render (PdfPage -> Image) and pdf.text (PdfPage ->
// Text) with poppler-cpp. A page value is {index, width, height, path, dpi}: enough for any
// worker to reopen the document; each operator instance keeps the last document open, since
// batches tend to hold neighbouring pages of the same files.
#include "OperatorGroups.h"
#include "ValueFields.h"
#include "image/ImageValue.h"

#include "orch/runtime/execution/MemorySize.h"
#include "orch/runtime/operators/LibraryMessages.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <unistd.h>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// Poppler's complaints about a document ("Syntax Error (1234): ..."): many for a damaged file
/// that still renders, so only at --log-level debug, with the Call, replica and row.
void routePopplerMessages() {
  static const bool routed = [] {
    poppler::set_debug_error_function(
        [](const std::string &message, void *) {
          runtime::reportLibraryMessage("poppler", message, runtime::LogLevel::Debug);
        },
        nullptr);
    return true;
  }();
  (void)routed;
}

/// Opens documents, keeping the last one.
class DocumentCache {
public:
  /// The document at `path`, or nullptr with `problem`.
  poppler::document *open(const std::string &path, std::string &problem) {
    if (path == path_ && document_)
      return document_.get();
    document_.reset(poppler::document::load_from_file(path));
    path_ = path;
    if (!document_) {
      // Say why when the file system knows: poppler only says it could not load.
      std::error_code error;
      if (std::filesystem::is_directory(path, error))
        problem = "cannot read PDF \"" + path + "\": it is a directory";
      else if (::access(path.c_str(), R_OK) != 0)
        problem = "cannot read PDF \"" + path + "\": " + std::strerror(errno);
      else
        problem = "cannot read PDF \"" + path + "\" (corrupt or not a PDF)";
      return nullptr;
    }
    if (document_->is_locked()) {
      document_.reset();
      problem = "PDF \"" + path + "\" is encrypted";
      return nullptr;
    }
    return document_.get();
  }

private:
  std::string path_;
  std::unique_ptr<poppler::document> document_;
};

/// The page a PdfPage value names, or nullptr with `problem`.
std::unique_ptr<poppler::page> openPage(DocumentCache &cache, const Value &page,
                                        std::string &problem) {
  const std::string *path = stringField(page, "path");
  const Value *index = page.field("index");
  if (!path || !index || index->kind() != Value::Kind::Int) {
    problem = "not a PDF page: " + page.str().substr(0, 80);
    return nullptr;
  }
  poppler::document *document = cache.open(*path, problem);
  if (!document)
    return nullptr;
  if (index->asInt() < 0 || index->asInt() >= document->pages()) {
    problem = "page " + std::to_string(index->asInt()) + " is not in \"" + *path + "\"";
    return nullptr;
  }
  std::unique_ptr<poppler::page> opened(document->create_page(int(index->asInt())));
  if (!opened)
    problem = "cannot open page " + std::to_string(index->asInt()) + " of \"" + *path + "\"";
  return opened;
}

/// One result per row: `onPage(page)` for a row whose page opens, else a record failure that
/// says why (not a page, a missing or corrupt file, an index out of range).
template <typename OnPage>
void forEachPage(DocumentCache &cache, std::span<const OperatorRow> rows,
                 std::vector<RowResult> &results, OnPage &&onPage) {
  for (const OperatorRow &row : rows) {
    runtime::noteCurrentItem(results.size());
    std::string problem;
    std::unique_ptr<poppler::page> page = openPage(cache, row.inputs[0], problem);
    results.push_back(page ? onPage(*page) : RowResult::recordFailure(problem));
  }
}

class PagesOperator : public runtime::Operator {
public:
  explicit PagesOperator(const OperatorConfig &config) : dpi_(config.intConstant("dpi")) {}
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      runtime::noteCurrentItem(results.size());
      const std::string *path = stringField(row.inputs[0], "path");
      std::string problem = "not a file: " + row.inputs[0].str().substr(0, 80);
      poppler::document *document = path ? cache_.open(*path, problem) : nullptr;
      if (!document) {
        results.push_back(RowResult::recordFailure(problem));
        continue;
      }
      runtime::ValueList pages;
      for (int i = 0; i < document->pages(); ++i) {
        std::unique_ptr<poppler::page> page(document->create_page(i));
        const poppler::rectf box = page ? page->page_rect() : poppler::rectf();
        pages.push_back(Value::record({{"index", Value::integer(i)},
                                       {"width", Value::real(box.width())},
                                       {"height", Value::real(box.height())},
                                       {"path", Value::string(*path)},
                                       {"dpi", Value::integer(dpi_)}}));
      }
      results.push_back(RowResult::ok(Value::list(std::move(pages))));
    }
  }

private:
  int64_t dpi_;
  DocumentCache cache_;
};

class RenderOperator : public runtime::Operator {
public:
  /// A page image's bytes at most (poppler allocates one buffer of int size).
  static constexpr uint64_t kMaxRenderBytes = (uint64_t(1) << 31) - 1;

  explicit RenderOperator(const OperatorConfig &config) : dpi_(config.intConstant("dpi")) {
    if (dpi_ <= 0 || dpi_ > 1200)
      throw runtime::OperatorError("pdf.render: dpi must be between 1 and 1200");
    renderer_.set_render_hint(poppler::page_renderer::antialiasing, true);
    renderer_.set_render_hint(poppler::page_renderer::text_antialiasing, true);
    renderer_.set_image_format(poppler::image::format_rgb24);
  }
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    forEachPage(cache_, rows, results, [&](poppler::page &page) {
      // A renderer refuses pages too large for one allocation and answers with a 1x1 image:
      // such a page is a failure with its size, never a tiny image written as a success.
      const poppler::rectf box = page.page_rect();
      const double scale = double(dpi_) / 72.0;
      const double expectedWidth = box.width() * scale, expectedHeight = box.height() * scale;
      const std::string size = std::to_string(int64_t(expectedWidth)) + "x" +
                               std::to_string(int64_t(expectedHeight)) + " pixels at " +
                               std::to_string(dpi_) + " dpi";
      if (expectedWidth * expectedHeight * 3 > double(kMaxRenderBytes))
        return RowResult::recordFailure(
            "a page of " + std::to_string(int64_t(box.width())) + "x" +
            std::to_string(int64_t(box.height())) + " pt is " + size + " (" +
            runtime::formatMemory(uint64_t(std::min(expectedWidth * expectedHeight * 3, 9e18))) +
            "), more than a page image may take (2 GiB): render it at a lower dpi");
      poppler::image image = renderer_.render_page(&page, double(dpi_), double(dpi_));
      if (!image.is_valid() || image.format() != poppler::image::format_rgb24)
        return RowResult::recordFailure("cannot render page");
      const int width = image.width(), height = image.height(), stride = image.bytes_per_row();
      if (double(width) * double(height) < 0.25 * expectedWidth * expectedHeight)
        return RowResult::recordFailure("the renderer gave " + std::to_string(width) + "x" +
                                        std::to_string(height) + " pixels for a page of " + size +
                                        ": it could not render the page");
      std::string pixels(size_t(width) * size_t(height) * 3, '\0');
      for (int y = 0; y < height; ++y)
        std::copy_n(image.const_data() + size_t(y) * size_t(stride), size_t(width) * 3,
                    pixels.data() + size_t(y) * size_t(width) * 3);
      Value rendered = makeImage(width, height, 3, std::move(pixels));
      runtime::RecordFields fields = rendered.asRecord();
      fields.emplace_back("dpi", Value::integer(dpi_));
      return RowResult::ok(Value::record(std::move(fields)));
    });
  }

private:
  int64_t dpi_;
  DocumentCache cache_;
  poppler::page_renderer renderer_;
};

/// pdf.text: the text layer in one of poppler's three orders (pdftotext's default, -raw and
/// -layout).
class TextOperator : public runtime::Operator {
public:
  explicit TextOperator(const OperatorConfig &config) {
    const std::string mode = config.constant("mode") ? config.stringConstant("mode") : "layout";
    if (mode == "layout")
      layout_ = poppler::page::non_raw_non_physical_layout;
    else if (mode == "raw")
      layout_ = poppler::page::raw_order_layout;
    else if (mode == "physical")
      layout_ = poppler::page::physical_layout;
    else
      throw runtime::OperatorError("pdf.text: mode must be \"layout\", \"raw\" or "
                                   "\"physical\", not \"" +
                                   mode + "\"");
  }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    forEachPage(cache_, rows, results, [this](poppler::page &page) {
      const poppler::byte_array utf8 = page.text(poppler::rectf(), layout_).to_utf8();
      std::string text(utf8.begin(), utf8.end());
      // Poppler ends a page with a form feed (a page break for printers): not text.
      if (!text.empty() && text.back() == '\f')
        text.pop_back();
      return RowResult::ok(Value::string(std::move(text)));
    });
  }

private:
  poppler::page::text_layout_enum layout_ = poppler::page::non_raw_non_physical_layout;
  DocumentCache cache_;
};

} // namespace

void registerPdfOperators(runtime::OperatorRegistry &registry) {
  routePopplerMessages();
  registry.addTransform("pdf.pages", [](const OperatorConfig &config) {
    return std::make_unique<PagesOperator>(config);
  });
  registry.addTransform("pdf.render", [](const OperatorConfig &config) {
    return std::make_unique<RenderOperator>(config);
  });
  registry.addTransform("pdf.text", [](const OperatorConfig &config) {
    return std::make_unique<TextOperator>(config);
  });
}

} // namespace orch::stdlib
