// Image records <-> pixel views.
#include "ImageValue.h"

namespace orch::stdlib {

using runtime::Value;

std::optional<ImageView> imageView(const Value &value, std::string &problem) {
  const Value *width = value.field("width"), *height = value.field("height"),
              *channels = value.field("channels"), *pixels = value.field("pixels");
  if (!width || !height || !channels || !pixels || width->kind() != Value::Kind::Int ||
      height->kind() != Value::Kind::Int || channels->kind() != Value::Kind::Int ||
      pixels->kind() != Value::Kind::Bytes) {
    problem = "not an image";
    return std::nullopt;
  }
  ImageView view{width->asInt(), height->asInt(), channels->asInt(),
                 reinterpret_cast<const uint8_t *>(pixels->asBytes().data())};
  if (view.width <= 0 || view.height <= 0 || (view.channels != 1 && view.channels != 3) ||
      int64_t(pixels->asBytes().size()) != view.width * view.height * view.channels) {
    problem = "malformed image (" + std::to_string(view.width) + "x" + std::to_string(view.height) +
              "x" + std::to_string(view.channels) + ", " +
              std::to_string(pixels->asBytes().size()) + " bytes)";
    return std::nullopt;
  }
  return view;
}

Value makeImage(int64_t width, int64_t height, int64_t channels, std::string pixels) {
  return Value::record({{"width", Value::integer(width)},
                        {"height", Value::integer(height)},
                        {"channels", Value::integer(channels)},
                        {"pixels", Value::bytes(std::move(pixels))}});
}

} // namespace orch::stdlib
