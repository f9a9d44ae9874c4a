// Standard operators on small, hand-made inputs: images, Unicode text, JSON values, and how
// bad inputs become RecordFailures instead of errors.
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/ImageKernels.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

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

TEST(StdlibOperatorsTest, PerceptualHashesAreSixteenHexDigitsAndHammingCountsTheirBits) {
  // Light on the right half: the hash sets the bits of the horizontal DCT terms above the
  // median, whatever their number.
  Value halves =
      image(64, 64, 1, [](int64_t x, int64_t, int64_t) { return uint8_t(x < 32 ? 0 : 255); });
  const Value hash = runOne("image.phash", {halves}).value;
  ASSERT_EQ(hash.kind(), Value::Kind::String);
  const std::string hex = hash.asString();
  EXPECT_EQ(hex.size(), 16u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  // The kernel's 64-bit integer, every bit of it (an Int above 2^53 loses bits in JSON).
  EXPECT_EQ(std::stoull(hex, nullptr, 16),
            uint64_t(stdlib::perceptualHash(stdlib::ImageView{
                64, 64, 1,
                reinterpret_cast<const uint8_t *>(halves.field("pixels")->asBytes().data())})));

  auto hamming = [](const char *a, const char *b) {
    return runOne("image.hamming", {Value::string(a), Value::string(b)});
  };
  EXPECT_EQ(hamming("0000000000000000", "0000000000000000").value, Value::integer(0));
  EXPECT_EQ(hamming("0000000000000000", "000000000000000f").value, Value::integer(4));
  EXPECT_EQ(hamming("ffffffffffffffff", "0000000000000000").value, Value::integer(64));
  EXPECT_EQ(hamming("8000000000000001", "0000000000000001").value, Value::integer(1));
  EXPECT_EQ(hamming(hex.c_str(), hex.c_str()).value, Value::integer(0));
  RowResult bad = hamming("12345", "0000000000000000");
  EXPECT_EQ(bad.kind, RowResultKind::RecordFailure);
  EXPECT_NE(bad.message.find("16 hex digits"), std::string::npos) << bad.message;
  EXPECT_EQ(hamming("zzzzzzzzzzzzzzzz", "0000000000000000").kind, RowResultKind::RecordFailure);
}

/// Runs every row through one instance of `op` in one batch, asking for `gpus` per replica.
std::vector<RowResult> runBatch(const std::string &op, const std::vector<Value> &inputs,
                                std::vector<plan::NamedConstant> constants, double gpus) {
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  plan::CallOptions options;
  options.gpus = gpus;
  OperatorConfig config(op, op, constants, {});
  config.withOptions(options).withGpuDevice(0);
  std::unique_ptr<Operator> instance = (*registry.transform(op))(config);
  std::vector<OperatorRow> rows;
  for (const Value &input : inputs)
    rows.push_back(OperatorRow{std::span<const Value>(&input, 1), GrainLineage{}});
  std::vector<RowResult> results;
  instance->process(rows, results);
  return results;
}

TEST(StdlibOperatorsTest, TensorIsAFloatChwRecord) {
  Value white = image(8, 4, 3, [](int64_t, int64_t, int64_t) { return uint8_t(255); });
  RowResult tensor =
      runOne("image.tensor", {white}, {{"width", int64_t(3)}, {"height", int64_t(2)}});
  ASSERT_EQ(tensor.kind, RowResultKind::Value) << tensor.message;
  EXPECT_EQ(*tensor.value.field("channels"), Value::integer(3));
  EXPECT_EQ(*tensor.value.field("height"), Value::integer(2));
  EXPECT_EQ(*tensor.value.field("width"), Value::integer(3));
  const std::string &data = tensor.value.field("data")->asBytes();
  ASSERT_EQ(data.size(), 3u * 2u * 3u * sizeof(float));
  std::vector<float> values(18);
  std::memcpy(values.data(), data.data(), data.size());
  EXPECT_NEAR(values[0], (1.0f - 0.485f) / 0.229f, 1e-6);  // red plane first
  EXPECT_NEAR(values[17], (1.0f - 0.406f) / 0.225f, 1e-6); // blue plane last
}

TEST(StdlibOperatorsTest, MotionScoresFrameDifferencesPerClip) {
  auto level = [](uint8_t value) {
    return image(6, 4, 1, [value](int64_t, int64_t, int64_t) { return value; });
  };
  const Value still = Value::list({level(10), level(10), level(10)});
  const Value moving = Value::list({level(0), level(100), level(0), level(60)});
  const Value single = Value::list({level(5)});
  const Value mixed =
      Value::list({level(5), image(3, 3, 1, [](int64_t, int64_t, int64_t) { return uint8_t(5); })});
  std::vector<RowResult> results =
      runBatch("image.motion", {still, moving, single, mixed, Value::string("x")}, {}, 0);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0].value, Value::real(0));
  EXPECT_EQ(results[1].value, Value::real((100.0 + 100.0 + 60.0) / 3.0));
  EXPECT_EQ(results[2].value, Value::real(0)) << "fewer than two frames";
  EXPECT_EQ(results[3].kind, RowResultKind::RecordFailure);
  EXPECT_NE(results[3].message.find("different sizes"), std::string::npos) << results[3].message;
  EXPECT_EQ(results[4].kind, RowResultKind::RecordFailure);
}

TEST(StdlibOperatorsTest, AskingForAGpuGivesTheCpuResultsWhereverTheBatchRuns) {
  // On a machine without a usable GPU the operators fall back to the CPU; with one, the batch
  // runs on it. Either way the values are those of the CPU implementation, row for row, and a
  // row that is not an image still fails alone.
  std::vector<Value> images;
  for (int64_t i = 0; i < 12; ++i)
    images.push_back(image(17 + i, 9 + 2 * i, i % 3 ? 3 : 1, [i](int64_t x, int64_t y, int64_t c) {
      return uint8_t((x * (7 + i) + y * 13 + c * 50 + (x * y) % 11) % 256);
    }));
  images.insert(images.begin() + 5, Value::string("not an image"));
  const std::vector<plan::NamedConstant> size = {{"width", int64_t(8)}, {"height", int64_t(6)}};
  for (const char *op :
       {"image.grayscale", "image.sharpness", "image.phash", "image.resize", "image.tensor"}) {
    const bool sized = std::string(op) == "image.resize" || std::string(op) == "image.tensor";
    std::vector<RowResult> cpu =
        runBatch(op, images, sized ? size : std::vector<plan::NamedConstant>{}, 0);
    std::vector<RowResult> gpu =
        runBatch(op, images, sized ? size : std::vector<plan::NamedConstant>{}, 1);
    ASSERT_EQ(cpu.size(), images.size()) << op;
    ASSERT_EQ(gpu.size(), images.size()) << op;
    for (size_t i = 0; i < images.size(); ++i) {
      EXPECT_EQ(gpu[i].kind, cpu[i].kind) << op << " row " << i;
      EXPECT_EQ(gpu[i].value, cpu[i].value) << op << " row " << i;
    }
    EXPECT_EQ(cpu[5].kind, RowResultKind::RecordFailure) << op;
    EXPECT_EQ(cpu[4].kind, RowResultKind::Value) << op;
  }
  const Value clip = Value::list({images[0], images[0]});
  EXPECT_EQ(runBatch("image.motion", {clip}, {}, 1)[0].value, Value::real(0));
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

/// A PDF whose pages have these MediaBox sides (pt) and UserUnits, written by hand.
std::string pdfWithPages(const std::vector<std::pair<int, int>> &pages) {
  std::vector<std::string> objects = {"<< /Type /Catalog /Pages 2 0 R >>", ""};
  std::string kids;
  for (size_t i = 0; i < pages.size(); ++i) {
    kids += std::to_string(3 + i) + " 0 R ";
    objects.push_back("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 " +
                      std::to_string(pages[i].first) + " " + std::to_string(pages[i].first) +
                      "] /UserUnit " + std::to_string(pages[i].second) + " >>");
  }
  objects[1] =
      "<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(pages.size()) + " >>";
  std::string pdf = "%PDF-1.6\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(i + 1) + " 0 obj " + objects[i] + " endobj\n";
  }
  const size_t xref = pdf.size();
  pdf += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t offset : offsets) {
    char line[32];
    std::snprintf(line, sizeof line, "%010zu 00000 n \n", offset);
    pdf += line;
  }
  pdf += "trailer << /Root 1 0 R /Size " + std::to_string(objects.size() + 1) + " >>\nstartxref\n" +
         std::to_string(xref) + "\n%%EOF\n";
  return pdf;
}

TEST(StdlibOperatorsTest, APageTooLargeToRenderIsARecordFailureNotATinyImage) {
  // Before: poppler printed "Bogus memory allocation size" and a 1x1 image was written.
  const std::string path = std::filesystem::temp_directory_path() /
                           ("orch-huge-pages-" + std::to_string(::getpid()) + ".pdf");
  std::ofstream(path, std::ios::binary) << pdfWithPages({{14400, 1}, {200, 1}});
  auto page = [&](int64_t index) {
    return Value::record({{"index", Value::integer(index)}, {"path", Value::string(path)}});
  };
  const RowResult huge = runOne("pdf.render", {page(0)}, {{"dpi", int64_t(600)}});
  ASSERT_EQ(huge.kind, RowResultKind::RecordFailure);
  EXPECT_NE(huge.message.find("a page of 14400x14400 pt is 120000x120000 pixels at 600 dpi"),
            std::string::npos)
      << huge.message;
  const RowResult fine = runOne("pdf.render", {page(1)}, {{"dpi", int64_t(72)}});
  ASSERT_EQ(fine.kind, RowResultKind::Value) << fine.message;
  EXPECT_EQ(fine.value.field("width")->asInt(), 200);
  std::filesystem::remove(path);
}

TEST(StdlibOperatorsTest, MissingPdfsAndVideosAreRecordFailures) {
  Value missing = Value::record({{"path", Value::string("/nonexistent/x.pdf")}});
  RowResult pages = runOne("pdf.pages", {missing}, {{"dpi", int64_t(150)}});
  EXPECT_EQ(pages.kind, RowResultKind::RecordFailure);
  EXPECT_NE(pages.message.find("cannot read PDF"), std::string::npos);
  RowResult clips = runOne("video.clips", {missing}, {{"seconds", 2.0}});
  EXPECT_EQ(clips.kind, RowResultKind::RecordFailure);
}

TEST(StdlibOperatorsTest, DecodingAClipsFramesInOneBatchGivesWhatSeekingToEachGives) {
  for (const char *video : {"circles.mp4", "bars.mp4"}) {
    const Value file = Value::record(
        {{"path", Value::string(std::string(ORCH_EXAMPLES_DIR "/samples/videos/") + video)}});
    RowResult clips = runOne("video.clips", {file}, {{"seconds", 1.0}});
    ASSERT_EQ(clips.kind, RowResultKind::Value) << clips.message;
    std::vector<Value> frames;
    for (const Value &clip : clips.value.asList()) {
      RowResult sampled = runOne("video.frames", {clip}, {{"per_clip", int64_t(5)}});
      for (const Value &frame : sampled.value.asList())
        frames.push_back(frame);
    }
    ASSERT_GE(frames.size(), 10u);
    // One batch, in a scrambled order across clips: decoded in time order, one pass per clip.
    std::vector<Value> scrambled = frames;
    std::reverse(scrambled.begin(), scrambled.end());
    std::swap(scrambled[1], scrambled[scrambled.size() / 2]);
    OperatorRegistry registry;
    stdlib::registerStandardOperators(registry);
    OperatorConfig config("video.decode", "video.decode", {}, {});
    std::unique_ptr<Operator> batched = (*registry.transform("video.decode"))(config);
    std::vector<OperatorRow> rows;
    for (const Value &frame : scrambled)
      rows.push_back(OperatorRow{std::span<const Value>(&frame, 1), GrainLineage{}});
    std::vector<RowResult> results;
    batched->process(rows, results);
    ASSERT_EQ(results.size(), scrambled.size());
    for (size_t i = 0; i < scrambled.size(); ++i) {
      // Each frame on its own, by a fresh instance: a seek to its time, as before batching.
      RowResult alone = runOne("video.decode", {scrambled[i]});
      ASSERT_EQ(results[i].kind, RowResultKind::Value) << results[i].message;
      EXPECT_TRUE(results[i].value == alone.value)
          << video << " frame at " << scrambled[i].field("time")->asFloat() << " s";
    }
  }
}

TEST(StdlibOperatorsTest, FramesPastTheEndOfATruncatedVideoAreFailuresNotTheLastFrameAgain) {
  // A fast-start MP4 (its index first) cut to 30 % (its index is a tenth of it): its header
  // promises 4 s, about 20 frames (0.8 s) decode. Before, every frame past the cut came back
  // as the last frame that decoded.
  const std::string dir =
      std::filesystem::temp_directory_path() / ("orch-truncated-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string whole = dir + "/faststart.mp4", cut = dir + "/cut.mp4";
  const std::string remux = "ffmpeg -loglevel error -y -i " ORCH_EXAMPLES_DIR
                            "/samples/videos/bars.mp4 -c copy -movflags +faststart " +
                            whole;
  ASSERT_EQ(std::system(remux.c_str()), 0) << remux;
  const uintmax_t size = std::filesystem::file_size(whole);
  std::filesystem::copy_file(whole, cut);
  std::filesystem::resize_file(cut, size * 3 / 10);
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  OperatorConfig config("video.decode", "video.decode", {}, {});
  std::unique_ptr<Operator> decode = (*registry.transform("video.decode"))(config);
  std::vector<Value> frames;
  for (int i = 0; i < 12; ++i)
    frames.push_back(Value::record(
        {{"path", Value::string(cut)}, {"time", Value::real(0.15 + i * (3.7 / 11))}}));
  std::vector<OperatorRow> rows;
  for (const Value &frame : frames)
    rows.push_back(OperatorRow{std::span<const Value>(&frame, 1), GrainLineage{}});
  std::vector<RowResult> results;
  decode->process(rows, results);
  ASSERT_EQ(results.size(), 12u);
  size_t failed = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind != RowResultKind::Value) {
      ++failed;
      EXPECT_NE(results[i].message.find("4.000 s"), std::string::npos) << results[i].message;
      EXPECT_NE(results[i].message.find("truncated?"), std::string::npos) << results[i].message;
      continue;
    }
    EXPECT_EQ(failed, 0u) << "frames decode up to the cut, then fail";
    if (i > 0 && results[i - 1].kind == RowResultKind::Value) {
      EXPECT_FALSE(results[i].value == results[i - 1].value) << "frame " << i << " repeats";
    }
  }
  EXPECT_GE(failed, 8u);
  EXPECT_LT(failed, 12u);
  std::filesystem::remove_all(dir);
}

TEST(StdlibOperatorsTest, FileMakesTheFileAPathNamesAndSaysWhyItCannot) {
  const std::string pdf = ORCH_EXAMPLES_DIR "/samples/pdfs/memo.pdf";
  RowResult found = runOne("file", {Value::string(pdf)});
  ASSERT_EQ(found.kind, RowResultKind::Value) << found.message;
  EXPECT_EQ(found.value.field("path")->asString(), pdf);
  EXPECT_EQ(found.value.field("name")->asString(), "memo.pdf");
  EXPECT_EQ(found.value.field("stem")->asString(), "memo");
  EXPECT_GT(found.value.field("size")->asInt(), 0);
  const std::string fifo = ::testing::TempDir() + "orch-file-test.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> bad[] = {
      {"/nonexistent/a.pdf", "file: \"/nonexistent/a.pdf\" does not exist"},
      {ORCH_EXAMPLES_DIR, "is a directory"},
      {"", "is empty"},
      {fifo, "is not a regular file"}};
  for (const auto &[path, why] : bad) {
    RowResult result = runOne("file", {Value::string(path)});
    EXPECT_EQ(result.kind, RowResultKind::RecordFailure) << path;
    EXPECT_NE(result.message.find(why), std::string::npos) << result.message;
  }
  ::unlink(fifo.c_str());
}

} // namespace
} // namespace orch::runtime
