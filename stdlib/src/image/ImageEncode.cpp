// image.encode (Image -> Bytes): PNG, JPEG or WebP with FFmpeg's encoders (png, mjpeg,
// libwebp), which the video operators already bring: no further library to install.
#include "OperatorGroups.h"
#include "image/FfmpegHandles.h"
#include "image/ImageEncoder.h"
#include "image/ImageValue.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cmath>
#include <memory>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorError;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

class EncodeOperator : public runtime::Operator {
public:
  explicit EncodeOperator(const OperatorConfig &config)
      : encoder_(config.constant("format") ? config.stringConstant("format") : "png",
                 config.constant("quality") ? config.intConstant("quality") : 90) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      std::string problem;
      std::optional<ImageView> image = imageView(row.inputs[0], problem);
      if (!image) {
        results.push_back(RowResult::recordFailure("image.encode: " + problem));
        continue;
      }
      std::string encoded;
      if (!encoder_.encode(*image, encoded, problem))
        results.push_back(RowResult::recordFailure("image.encode: " + problem));
      else
        results.push_back(RowResult::ok(Value::bytes(std::move(encoded))));
    }
  }

private:
  ImageEncoder encoder_;
};

} // namespace

ImageEncoder::ImageEncoder(const std::string &format, int64_t quality) : quality_(quality) {
  if (format == "png")
    format_ = Format::Png;
  else if (format == "jpeg" || format == "jpg")
    format_ = Format::Jpeg;
  else if (format == "webp")
    format_ = Format::Webp;
  else
    throw OperatorError("image.encode: format must be \"png\", \"jpeg\" or \"webp\", not \"" +
                        format + "\"");
  if (quality_ < 1 || quality_ > 100)
    throw OperatorError("image.encode: quality must be between 1 and 100");
  const AVCodecID id = format_ == Format::Png    ? AV_CODEC_ID_PNG
                       : format_ == Format::Jpeg ? AV_CODEC_ID_MJPEG
                                                 : AV_CODEC_ID_WEBP;
  codec_ = avcodec_find_encoder(id);
  if (!codec_)
    throw OperatorError("image.encode: this FFmpeg has no " + format + " encoder");
}

ImageEncoder::~ImageEncoder() { sws_freeContext(scaler_); }

const char *ImageEncoder::mimeType() const {
  switch (format_) {
  case Format::Png:
    return "image/png";
  case Format::Jpeg:
    return "image/jpeg";
  case Format::Webp:
    return "image/webp";
  }
  return "image/png";
}

/// The pixel format the encoder gets: PNG keeps the image's own (lossless); JPEG full-range
/// 4:2:0; WebP BGRA (libwebp converts with its own, better, filter).
int ImageEncoder::targetFormat(int64_t channels) const {
  switch (format_) {
  case Format::Png:
    return channels == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24;
  case Format::Jpeg:
    return AV_PIX_FMT_YUVJ420P;
  case Format::Webp:
    return AV_PIX_FMT_RGB32;
  }
  return AV_PIX_FMT_RGB24;
}

bool ImageEncoder::encode(const ImageView &image, std::string &out, std::string &problem) {
  CodecContextHandle context(avcodec_alloc_context3(codec_));
  const AVPixelFormat target = AVPixelFormat(targetFormat(image.channels));
  context->width = int(image.width);
  context->height = int(image.height);
  context->pix_fmt = target;
  context->time_base = AVRational{1, 25};
  if (format_ == Format::Jpeg) {
    // Quality 100 is the finest quantizer (2), 1 the coarsest (31).
    const int quantizer = int(std::lround(2 + (100 - quality_) * 29.0 / 99.0));
    context->flags |= AV_CODEC_FLAG_QSCALE;
    context->global_quality = FF_QP2LAMBDA * quantizer;
    context->color_range = AVCOL_RANGE_JPEG;
  } else if (format_ == Format::Webp) {
    av_opt_set_double(context->priv_data, "quality", double(quality_), 0);
  }
  if (avcodec_open2(context.get(), codec_, nullptr) < 0) {
    problem = "cannot open the encoder";
    return false;
  }
  FrameHandle frame(av_frame_alloc());
  frame->format = target;
  frame->quality = context->global_quality;
  frame->width = context->width;
  frame->height = context->height;
  if (av_frame_get_buffer(frame.get(), 0) < 0) {
    problem = "out of memory";
    return false;
  }
  const AVPixelFormat source = image.channels == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24;
  if (source == target) {
    for (int64_t y = 0; y < image.height; ++y)
      std::copy_n(image.pixels + y * image.width * image.channels, image.width * image.channels,
                  frame->data[0] + y * frame->linesize[0]);
  } else {
    scaler_ = sws_getCachedContext(scaler_, frame->width, frame->height, source, frame->width,
                                   frame->height, target, SWS_BICUBIC | SWS_ACCURATE_RND, nullptr,
                                   nullptr, nullptr);
    const uint8_t *planes[1] = {image.pixels};
    const int strides[1] = {int(image.width * image.channels)};
    sws_scale(scaler_, planes, strides, 0, frame->height, frame->data, frame->linesize);
  }
  PacketHandle packet(av_packet_alloc());
  if (avcodec_send_frame(context.get(), frame.get()) < 0 ||
      avcodec_send_frame(context.get(), nullptr) < 0) {
    problem = "the encoder refused the image";
    return false;
  }
  while (avcodec_receive_packet(context.get(), packet.get()) == 0) {
    out.append(reinterpret_cast<const char *>(packet->data), size_t(packet->size));
    av_packet_unref(packet.get());
  }
  if (out.empty()) {
    problem = "the encoder produced nothing";
    return false;
  }
  return true;
}

void registerImageEncodeOperator(runtime::OperatorRegistry &registry) {
  registry.addTransform("image.encode", [](const OperatorConfig &config) {
    return std::make_unique<EncodeOperator>(config);
  });
}

} // namespace orch::stdlib
