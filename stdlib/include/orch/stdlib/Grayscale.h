// Grayscale conversion of packed RGB8 pixels (ITU-R BT.601 luma, integer weights). The CPU
// implementation is the reference the CUDA kernel must match exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace orch::stdlib {

/// gray[i] = (77 R + 150 G + 29 B + 128) >> 8 for each of `pixelCount` RGB8 pixels.
void grayscaleRgb8(const uint8_t *rgb, size_t pixelCount, uint8_t *gray);

/// The same on the current CUDA device. Returns false and sets `error` when CUDA is unavailable
/// (built without it, no device) or a CUDA call failed.
bool grayscaleRgb8OnGpu(const uint8_t *rgb, size_t pixelCount, uint8_t *gray, std::string &error);

} // namespace orch::stdlib
