// Images as values: a record {width, height, channels, pixels} with packed 8-bit pixels
// (RGB when channels is 3, gray when 1), rows without padding.
#pragma once

#include "orch/runtime/values/Value.h"
#include "orch/stdlib/ImageKernels.h"

#include <cstdint>
#include <optional>
#include <string>

namespace orch::stdlib {

/// The image in `value`, or nullopt (with `problem`) when it is not a well-formed image.
std::optional<ImageView> imageView(const runtime::Value &value, std::string &problem);

runtime::Value makeImage(int64_t width, int64_t height, int64_t channels, std::string pixels);

} // namespace orch::stdlib
