// CPU reference implementation of RGB8 -> gray8.
#include "orch/stdlib/Grayscale.h"

namespace orch::stdlib {

void grayscaleRgb8(const uint8_t *rgb, size_t pixelCount, uint8_t *gray) {
  for (size_t i = 0; i < pixelCount; ++i) {
    const uint8_t *pixel = rgb + 3 * i;
    gray[i] = uint8_t((77u * pixel[0] + 150u * pixel[1] + 29u * pixel[2] + 128u) >> 8);
  }
}

} // namespace orch::stdlib
