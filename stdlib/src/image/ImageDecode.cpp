// image.decode (Bytes -> Image): a PNG, JPEG or WebP file's bytes (what image.encode writes, what
// a WebDataset shard holds) back to an image, with FFmpeg's decoders, so that images read back
// from shards can feed the image operators. Gray images stay gray (1 channel); everything else
// becomes RGB (an alpha channel is dropped).
#include "OperatorGroups.h"
#include "image/FfmpegHandles.h"
#include "image/ImageValue.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// The codec of an image file, from its first bytes (its signature).
std::optional<AVCodecID> codecOf(std::string_view data) {
  if (data.size() >= 8 && data.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8))
    return AV_CODEC_ID_PNG;
  if (data.size() >= 3 && data.substr(0, 3) == "\xFF\xD8\xFF")
    return AV_CODEC_ID_MJPEG;
  if (data.size() >= 12 && data.substr(0, 4) == "RIFF" && data.substr(8, 4) == "WEBP")
    return AV_CODEC_ID_WEBP;
  return std::nullopt;
}

/// The file format's name for messages (FFmpeg calls JPEG "mjpeg").
const char *formatName(AVCodecID id) {
  return id == AV_CODEC_ID_PNG ? "PNG" : id == AV_CODEC_ID_MJPEG ? "JPEG" : "WebP";
}

bool isGray(AVPixelFormat format) {
  return format == AV_PIX_FMT_GRAY8 || format == AV_PIX_FMT_GRAY16BE ||
         format == AV_PIX_FMT_GRAY16LE || format == AV_PIX_FMT_YA8 || format == AV_PIX_FMT_YA16BE ||
         format == AV_PIX_FMT_YA16LE;
}

class DecodeOperator : public runtime::Operator {
public:
  explicit DecodeOperator(const OperatorConfig &) {}
  ~DecodeOperator() override { sws_freeContext(scaler_); }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      std::string problem;
      if (row.inputs[0].kind() != Value::Kind::Bytes) {
        results.push_back(RowResult::recordFailure("image.decode: not Bytes"));
        continue;
      }
      std::optional<Value> image = decode(row.inputs[0].asBytes(), problem);
      results.push_back(image ? RowResult::ok(std::move(*image))
                              : RowResult::recordFailure("image.decode: " + problem));
    }
  }

private:
  std::optional<Value> decode(const std::string &data, std::string &problem) {
    const std::optional<AVCodecID> id = codecOf(data);
    if (!id) {
      problem = "not a PNG, JPEG or WebP image (" + std::to_string(data.size()) + " bytes)";
      return std::nullopt;
    }
    const AVCodec *codec = avcodec_find_decoder(*id);
    if (!codec) {
      problem = std::string("this FFmpeg has no ") + avcodec_get_name(*id) + " decoder";
      return std::nullopt;
    }
    CodecContextHandle context(avcodec_alloc_context3(codec));
    PacketHandle packet(av_packet_alloc());
    FrameHandle frame(av_frame_alloc());
    if (!context || !packet || !frame || avcodec_open2(context.get(), codec, nullptr) < 0 ||
        av_new_packet(packet.get(), int(data.size())) < 0) {
      problem = "cannot open the decoder";
      return std::nullopt;
    }
    std::memcpy(packet->data, data.data(), data.size());
    if (avcodec_send_packet(context.get(), packet.get()) < 0 ||
        avcodec_send_packet(context.get(), nullptr) < 0 ||
        avcodec_receive_frame(context.get(), frame.get()) < 0 || frame->width <= 0 ||
        frame->height <= 0) {
      problem = std::string("a corrupt ") + formatName(*id) + " image";
      return std::nullopt;
    }
    const AVPixelFormat source = AVPixelFormat(frame->format);
    const int64_t channels = isGray(source) ? 1 : 3;
    const AVPixelFormat target = channels == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24;
    scaler_ = sws_getCachedContext(scaler_, frame->width, frame->height, source, frame->width,
                                   frame->height, target, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr,
                                   nullptr, nullptr);
    if (!scaler_) {
      problem = std::string("cannot convert pixels of format ") +
                (av_get_pix_fmt_name(source) ? av_get_pix_fmt_name(source) : "?");
      return std::nullopt;
    }
    std::string pixels(size_t(frame->width) * size_t(frame->height) * size_t(channels), '\0');
    uint8_t *planes[1] = {reinterpret_cast<uint8_t *>(pixels.data())};
    const int strides[1] = {int(frame->width * channels)};
    sws_scale(scaler_, frame->data, frame->linesize, 0, frame->height, planes, strides);
    return makeImage(frame->width, frame->height, channels, std::move(pixels));
  }

  SwsContext *scaler_ = nullptr;
};

} // namespace

void registerImageDecodeOperator(runtime::OperatorRegistry &registry) {
  registry.addTransform("image.decode", [](const OperatorConfig &config) {
    return std::make_unique<DecodeOperator>(config);
  });
}

} // namespace orch::stdlib
