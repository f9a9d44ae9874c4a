// Encodes images (ImageValue.h) to PNG, JPEG or WebP with FFmpeg's encoders: what image.encode
// does per row, and how llm.vision sends a page to a model server.
#pragma once

#include "image/ImageValue.h"

#include <cstdint>
#include <string>

struct AVCodec;
struct SwsContext;

namespace orch::stdlib {

class ImageEncoder {
public:
  /// `format`: "png", "jpeg" (or "jpg") or "webp"; `quality` 1 to 100 (JPEG and WebP).
  /// OperatorError for another format or quality, or an FFmpeg without the encoder.
  ImageEncoder(const std::string &format, int64_t quality);
  ~ImageEncoder();
  ImageEncoder(const ImageEncoder &) = delete;
  ImageEncoder &operator=(const ImageEncoder &) = delete;

  /// Appends the encoded image to `out`; false with `problem` when the encoder refuses it.
  bool encode(const ImageView &image, std::string &out, std::string &problem);
  /// "image/png", "image/jpeg" or "image/webp".
  const char *mimeType() const;

private:
  enum class Format { Png, Jpeg, Webp };
  /// The pixel format the encoder gets: PNG keeps the image's own (lossless); JPEG full-range
  /// 4:2:0; WebP BGRA (libwebp converts with its own, better, filter).
  int targetFormat(int64_t channels) const;

  Format format_ = Format::Png;
  int64_t quality_;
  const AVCodec *codec_ = nullptr;
  SwsContext *scaler_ = nullptr;
};

} // namespace orch::stdlib
