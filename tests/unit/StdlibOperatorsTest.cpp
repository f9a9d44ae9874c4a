// Standard operators on small, hand-made inputs: images, Unicode text, JSON values, and how
// bad inputs become RecordFailures instead of errors.
#include "orch/runtime/Operator.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

namespace orch::runtime {
namespace {

/// Runs one row through `op` (configured with `constants`) and returns its result.
RowResult runOne(const std::string &op, std::vector<Value> inputs,
                 std::vector<plan::NamedConstant> constants = {}) {
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  const OperatorFactory *factory = registry.transform(op);
  EXPECT_TRUE(factory) << op;
  OperatorConfig config(op, op, constants, {});
  std::unique_ptr<Operator> instance = (*factory)(config);
  std::vector<OperatorRow> rows{OperatorRow{inputs, GrainLineage{}}};
  std::vector<RowResult> results;
  instance->process(rows, results);
  EXPECT_EQ(results.size(), 1u);
  return results.empty() ? RowResult{} : results[0];
}

Value image(int64_t width, int64_t height, int64_t channels,
            const std::function<uint8_t(int64_t, int64_t, int64_t)> &pixel) {
  std::string pixels;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < channels; ++c)
        pixels += char(pixel(x, y, c));
  return Value::record({{"width", Value::integer(width)},
                        {"height", Value::integer(height)},
                        {"channels", Value::integer(channels)},
                        {"pixels", Value::bytes(pixels)}});
}

TEST(StdlibOperatorsTest, SharpnessIsZeroOnFlatImagesAndHighOnEdges) {
  Value flat = image(16, 16, 3, [](int64_t, int64_t, int64_t) { return uint8_t(90); });
  Value checker = image(
      16, 16, 3, [](int64_t x, int64_t y, int64_t) { return uint8_t((x + y) % 2 ? 255 : 0); });
  EXPECT_EQ(runOne("image.sharpness", {flat}).value, Value::real(0));
  EXPECT_GT(runOne("image.sharpness", {checker}).value.asFloat(), 10000.0);
}

TEST(StdlibOperatorsTest, ResizeGrayscaleAndHash) {
  Value gradient = image(40, 20, 3, [](int64_t x, int64_t y, int64_t c) {
    return uint8_t((x * 6 + y * 3 + c * 40) % 256);
  });
  RowResult resized =
      runOne("image.resize", {gradient}, {{"width", int64_t(10)}, {"height", int64_t(5)}});
  EXPECT_EQ(*resized.value.field("width"), Value::integer(10));
  EXPECT_EQ(resized.value.field("pixels")->asBytes().size(), 10u * 5u * 3u);
  RowResult gray = runOne("image.grayscale", {gradient});
  EXPECT_EQ(*gray.value.field("channels"), Value::integer(1));
  const uint8_t r = 0, g = 40, b = 80; // pixel (0, 0)
  EXPECT_EQ(uint8_t(gray.value.field("pixels")->asBytes()[0]),
            (77 * r + 150 * g + 29 * b + 128) >> 8);
  const Value hash = runOne("image.phash", {gradient}).value;
  EXPECT_EQ(runOne("image.phash", {gradient}).value, hash) << "deterministic";
  Value other =
      image(40, 20, 3, [](int64_t x, int64_t, int64_t) { return uint8_t(x < 20 ? 0 : 255); });
  EXPECT_NE(runOne("image.phash", {other}).value, hash);
}

TEST(StdlibOperatorsTest, ABadImageIsARecordFailure) {
  RowResult result = runOne("image.sharpness", {Value::string("not an image")});
  EXPECT_EQ(result.kind, RowResultKind::RecordFailure);
  EXPECT_EQ(result.message, "not an image");
}

TEST(StdlibOperatorsTest, NormalizeComposesAndCollapsesWhitespace) {
  RowResult result = runOne("text.normalize", {Value::string("  Cafe\xCC\x81 \n\t au  lait ")});
  EXPECT_EQ(result.value, Value::string("Caf\xC3\xA9 au lait"));
}

TEST(StdlibOperatorsTest, EmptyListsAreRecordFailuresForMeanAndMax) {
  EXPECT_EQ(runOne("list.mean", {Value::list({})}).kind, RowResultKind::RecordFailure);
  EXPECT_EQ(runOne("list.max", {Value::list({Value::integer(3), Value::real(4.5)})}).value,
            Value::real(4.5));
}

TEST(StdlibOperatorsTest, MissingPdfsAndVideosAreRecordFailures) {
  Value missing = Value::record({{"path", Value::string("/nonexistent/x.pdf")}});
  RowResult pages = runOne("pdf.pages", {missing}, {{"dpi", int64_t(150)}});
  EXPECT_EQ(pages.kind, RowResultKind::RecordFailure);
  EXPECT_NE(pages.message.find("cannot read PDF"), std::string::npos);
  RowResult clips = runOne("video.clips", {missing}, {{"seconds", 2.0}});
  EXPECT_EQ(clips.kind, RowResultKind::RecordFailure);
}

} // namespace
} // namespace orch::runtime
