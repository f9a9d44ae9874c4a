// Launches of the batched image kernels (ImageKernels.cu) on a stream, for the engine
// (CudaImageEngine.cu). Every image of a chunk has a descriptor; pixel offsets are relative to
// the chunk's pixel area, output offsets count output elements.
#pragma once

#include "orch/stdlib/ImageKernels.h"

#include <cuda_runtime.h>

namespace orch::stdlib::cuda {

struct ImageDescriptor {
  unsigned long long input = 0;
  /// For frame pairs: the second frame's pixels.
  unsigned long long secondInput = 0;
  unsigned long long output = 0;
  int width = 0;
  int height = 0;
  int channels = 0;
  /// For frame pairs: the second frame's channels.
  int secondChannels = 0;
};

/// Uploads the DCT cosine table to the current device's constant memory.
cudaError_t uploadDctCosines(const double *cosines);

/// Grid: one row of blocks per image, enough blocks per row for `largestPixels`.
void launchGrayscale(cudaStream_t stream, const ImageDescriptor *images, int count,
                     long long largestPixels, const unsigned char *pixels, unsigned char *out);
/// out: 2 long long per image (sum, sum of squares), zeroed by the launch.
void launchLaplacian(cudaStream_t stream, const ImageDescriptor *images, int count,
                     long long largestPixels, const unsigned char *pixels, long long *out);
void launchResize(cudaStream_t stream, const ImageDescriptor *images, int count, int width,
                  int height, const unsigned char *pixels, unsigned char *out);
void launchResizeNormalize(cudaStream_t stream, const ImageDescriptor *images, int count, int width,
                           int height, const unsigned char *pixels, float *out);
/// out: 64 doubles per image.
void launchPhash(cudaStream_t stream, const ImageDescriptor *images, int count,
                 const unsigned char *pixels, double *out);
/// out: one sum per pair, zeroed by the launch.
void launchDifferences(cudaStream_t stream, const ImageDescriptor *pairs, int count,
                       long long largestPixels, const unsigned char *pixels,
                       unsigned long long *out);

} // namespace orch::stdlib::cuda
