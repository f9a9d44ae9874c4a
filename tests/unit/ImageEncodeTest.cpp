// image.encode's files, decoded back with FFmpeg's decoders: PNG equals the image pixel for
// pixel (a rendered PDF page among them), JPEG and WebP come close, and each has its format's
// signature. image.decode turns each back into the image (round trips), and says why it cannot.
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
}

#include <cmath>
#include <memory>

namespace orch::runtime {
namespace {

/// Runs `rows` through one instance of `op`.
std::vector<RowResult> run(const std::string &op, const std::vector<Value> &inputs,
                           std::vector<plan::NamedConstant> constants = {}) {
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  OperatorConfig config(op, op, constants, {});
  std::unique_ptr<Operator> instance = (*registry.transform(op))(config);
  std::vector<OperatorRow> rows;
  for (const Value &input : inputs)
    rows.push_back(OperatorRow{std::span<const Value>(&input, 1), GrainLineage{}});
  std::vector<RowResult> results;
  instance->process(rows, results);
  return results;
}

Value encode(const Value &image, const std::string &format, int64_t quality = 90) {
  std::vector<RowResult> results =
      run("image.encode", {image}, {{"format", format}, {"quality", quality}});
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].kind, RowResultKind::Value) << results[0].message;
  return results[0].value;
}

/// A file decoded by FFmpeg to packed RGB: {width, height, pixels}.
struct Decoded {
  int width = 0, height = 0;
  std::string rgb;
};

Decoded decode(const std::string &file, AVCodecID codecId) {
  const AVCodec *codec = avcodec_find_decoder(codecId);
  AVCodecContext *context = avcodec_alloc_context3(codec);
  EXPECT_EQ(avcodec_open2(context, codec, nullptr), 0);
  AVPacket *packet = av_packet_alloc();
  packet->data = reinterpret_cast<uint8_t *>(const_cast<char *>(file.data()));
  packet->size = int(file.size());
  AVFrame *frame = av_frame_alloc();
  Decoded decoded;
  if (avcodec_send_packet(context, packet) == 0 && avcodec_receive_frame(context, frame) == 0) {
    decoded.width = frame->width;
    decoded.height = frame->height;
    decoded.rgb.resize(size_t(frame->width) * size_t(frame->height) * 3);
    SwsContext *scaler =
        sws_getContext(frame->width, frame->height, AVPixelFormat(frame->format), frame->width,
                       frame->height, AV_PIX_FMT_RGB24, SWS_POINT, nullptr, nullptr, nullptr);
    uint8_t *planes[1] = {reinterpret_cast<uint8_t *>(decoded.rgb.data())};
    const int strides[1] = {frame->width * 3};
    sws_scale(scaler, frame->data, frame->linesize, 0, frame->height, planes, strides);
    sws_freeContext(scaler);
  }
  av_frame_free(&frame);
  packet->data = nullptr;
  packet->size = 0;
  av_packet_free(&packet);
  avcodec_free_context(&context);
  return decoded;
}

Value gradient(int64_t width, int64_t height, int64_t channels) {
  std::string pixels;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < channels; ++c)
        pixels += char((x * 3 + y * 2 + c * 60) % 256);
  return Value::record({{"width", Value::integer(width)},
                        {"height", Value::integer(height)},
                        {"channels", Value::integer(channels)},
                        {"pixels", Value::bytes(pixels)}});
}

/// Mean absolute difference between two RGB buffers.
double meanError(const std::string &a, const std::string &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += std::abs(int(uint8_t(a[i])) - int(uint8_t(b[i])));
  return sum / double(a.size());
}

TEST(ImageEncodeTest, APngOfARenderedPageDecodesToItPixelForPixel) {
  const Value file =
      Value::record({{"path", Value::string(ORCH_EXAMPLES_DIR "/samples/pdfs/letter.pdf")}});
  std::vector<RowResult> pages = run("pdf.pages", {file}, {{"dpi", int64_t(100)}});
  ASSERT_EQ(pages[0].kind, RowResultKind::Value) << pages[0].message;
  std::vector<RowResult> rendered =
      run("pdf.render", {pages[0].value.asList()[0]}, {{"dpi", int64_t(100)}});
  ASSERT_EQ(rendered[0].kind, RowResultKind::Value) << rendered[0].message;
  const Value &page = rendered[0].value;
  const std::string png = encode(page, "png").asBytes();
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const Decoded decoded = decode(png, AV_CODEC_ID_PNG);
  EXPECT_EQ(decoded.width, page.field("width")->asInt());
  EXPECT_EQ(decoded.height, page.field("height")->asInt());
  EXPECT_TRUE(decoded.rgb == page.field("pixels")->asBytes()) << "PNG is lossless";
}

TEST(ImageEncodeTest, AGrayPngStaysGrayAndExact) {
  const Value gray = gradient(37, 21, 1);
  const std::string png = encode(gray, "png").asBytes();
  const Decoded decoded = decode(png, AV_CODEC_ID_PNG);
  ASSERT_EQ(decoded.rgb.size(), 37u * 21u * 3u);
  const std::string &pixels = gray.field("pixels")->asBytes();
  for (size_t i = 0; i < pixels.size(); ++i)
    for (size_t c = 0; c < 3; ++c)
      ASSERT_EQ(decoded.rgb[i * 3 + c], pixels[i]) << "pixel " << i;
}

TEST(ImageEncodeTest, JpegAndWebpComeCloseAndQualityTradesSizeForError) {
  const Value image = gradient(96, 64, 3);
  const std::string &pixels = image.field("pixels")->asBytes();
  const std::string fine = encode(image, "jpeg", 95).asBytes();
  const std::string coarse = encode(image, "jpeg", 20).asBytes();
  EXPECT_EQ(fine.substr(0, 3), std::string("\xff\xd8\xff", 3));
  const Decoded fineDecoded = decode(fine, AV_CODEC_ID_MJPEG);
  const Decoded coarseDecoded = decode(coarse, AV_CODEC_ID_MJPEG);
  ASSERT_EQ(fineDecoded.rgb.size(), pixels.size());
  EXPECT_LT(meanError(fineDecoded.rgb, pixels), 6.0);
  EXPECT_LT(coarse.size(), fine.size());
  EXPECT_GT(meanError(coarseDecoded.rgb, pixels), meanError(fineDecoded.rgb, pixels));

  const std::string webp = encode(image, "webp", 90).asBytes();
  EXPECT_EQ(webp.substr(0, 4), "RIFF");
  EXPECT_EQ(webp.substr(8, 4), "WEBP");
  const Decoded webpDecoded = decode(webp, AV_CODEC_ID_WEBP);
  ASSERT_EQ(webpDecoded.rgb.size(), pixels.size());
  EXPECT_LT(meanError(webpDecoded.rgb, pixels), 6.0);
}

TEST(ImageEncodeTest, BadFormatsAndImagesSayWhy) {
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  const std::vector<plan::NamedConstant> gif = {{"format", std::string("gif")}};
  OperatorConfig config("image.encode", "image.encode", gif, {});
  try {
    (*registry.transform("image.encode"))(config);
    FAIL() << "gif was accepted";
  } catch (const OperatorError &error) {
    EXPECT_NE(std::string(error.what()).find("\"png\", \"jpeg\" or \"webp\", not \"gif\""),
              std::string::npos)
        << error.what();
  }
  std::vector<RowResult> rgba = run("image.encode", {gradient(4, 4, 4)});
  EXPECT_EQ(rgba[0].kind, RowResultKind::RecordFailure);
  EXPECT_NE(rgba[0].message.find("malformed image (4x4x4"), std::string::npos) << rgba[0].message;
  std::vector<RowResult> notImage = run("image.encode", {Value::string("x")});
  EXPECT_EQ(notImage[0].kind, RowResultKind::RecordFailure);
}

TEST(ImageEncodeTest, ImageDecodeRoundTripsEveryFormatImageEncodeWrites) {
  for (int64_t channels : {1, 3}) {
    const Value image = gradient(53, 29, channels);
    const std::string &pixels = image.field("pixels")->asBytes();
    for (const char *format : {"png", "jpeg", "webp"}) {
      std::vector<RowResult> decoded = run("image.decode", {encode(image, format, 95)});
      ASSERT_EQ(decoded[0].kind, RowResultKind::Value) << format << ": " << decoded[0].message;
      const Value &back = decoded[0].value;
      EXPECT_EQ(back.field("width")->asInt(), 53) << format;
      EXPECT_EQ(back.field("height")->asInt(), 29) << format;
      // PNG keeps gray gray; JPEG (4:2:0) and WebP come back as RGB.
      const int64_t backChannels = back.field("channels")->asInt();
      if (std::string(format) == "png") {
        EXPECT_EQ(backChannels, channels);
        EXPECT_TRUE(back.field("pixels")->asBytes() == pixels) << "PNG is lossless";
      } else {
        ASSERT_EQ(backChannels, 3) << format;
        std::string rgb = pixels;
        if (channels == 1) {
          rgb.clear();
          for (char value : pixels)
            rgb.append(3, value);
        }
        EXPECT_LT(meanError(back.field("pixels")->asBytes(), rgb), 8.0) << format;
      }
    }
  }
}

TEST(ImageEncodeTest, ImageDecodeSaysWhatItCannotDecode) {
  const std::string png = encode(gradient(8, 8, 3), "png").asBytes();
  std::vector<RowResult> results =
      run("image.decode", {Value::bytes("GIF89a...."), Value::bytes(png.substr(0, 40)),
                           Value::bytes(""), Value::bytes(png)});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].kind, RowResultKind::RecordFailure);
  EXPECT_NE(results[0].message.find("not a PNG, JPEG or WebP image (10 bytes)"), std::string::npos)
      << results[0].message;
  EXPECT_EQ(results[1].kind, RowResultKind::RecordFailure);
  EXPECT_NE(results[1].message.find("corrupt PNG image"), std::string::npos) << results[1].message;
  EXPECT_EQ(results[2].kind, RowResultKind::RecordFailure);
  EXPECT_EQ(results[3].kind, RowResultKind::Value) << "a bad row does not spoil the next";
}

} // namespace
} // namespace orch::runtime
