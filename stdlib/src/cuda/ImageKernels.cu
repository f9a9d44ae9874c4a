// The batched image kernels. Each repeats its CPU reference (image/ImageKernelsCpu.cpp)
// operation for operation; the library is compiled with --fmad=false so that no multiply-add
// is fused, which makes the floating-point results equal, not just close.
#include "ImageKernelLaunch.h"

namespace orch::stdlib::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocksPerImage = 512;

__constant__ double dctCosines[8 * kHashSide];

__device__ inline unsigned char grayOf(const unsigned char *pixels, int channels, long long index) {
  if (channels == 1)
    return pixels[index];
  const unsigned char *p = pixels + 3 * index;
  return (unsigned char)((77u * p[0] + 150u * p[1] + 29u * p[2] + 128u) >> 8);
}

/// std::clamp's definition, so that -0.0 and the bounds behave as on the CPU.
__device__ inline double clampTo(double value, double low, double high) {
  return value < low ? low : (high < value ? high : value);
}

/// The bilinear sample of channel `c` (or of the gray level, when `gray`) at output (x, y).
__device__ double bilinearSample(const unsigned char *pixels, int width, int height, int channels,
                                 bool gray, double scaleX, double scaleY, int x, int y, int c) {
  const double sy = clampTo(((double)y + 0.5) * scaleY - 0.5, 0.0, (double)(height - 1));
  const long long y0 = (long long)sy;
  const long long y1 = y0 + 1 < height - 1 ? y0 + 1 : height - 1;
  const double fy = sy - (double)y0;
  const double sx = clampTo(((double)x + 0.5) * scaleX - 0.5, 0.0, (double)(width - 1));
  const long long x0 = (long long)sx;
  const long long x1 = x0 + 1 < width - 1 ? x0 + 1 : width - 1;
  const double fx = sx - (double)x0;
  auto at = [&](long long px, long long py) {
    const long long index = py * width + px;
    return gray ? (double)grayOf(pixels, channels, index) : (double)pixels[index * channels + c];
  };
  const double top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
  const double bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
  return top * (1 - fy) + bottom * fy;
}

/// Adds the block's values into *target (blockDim.x == kThreads).
template <typename T> __device__ void blockSumInto(T value, T *target) {
  __shared__ T partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    atomicAdd(reinterpret_cast<unsigned long long *>(target),
              static_cast<unsigned long long>(partial[0]));
}

__global__ void grayscaleKernel(const ImageDescriptor *images, const unsigned char *pixels,
                                unsigned char *out) {
  const ImageDescriptor image = images[blockIdx.y];
  const long long count = (long long)image.width * image.height;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x)
    out[image.output + i] = grayOf(pixels + image.input, image.channels, i);
}

__global__ void laplacianKernel(const ImageDescriptor *images, const unsigned char *pixels,
                                long long *out) {
  const ImageDescriptor image = images[blockIdx.y];
  const int w = image.width, h = image.height;
  long long sum = 0, squares = 0;
  if (w >= 3 && h >= 3) {
    const unsigned char *p = pixels + image.input;
    const long long interior = (long long)(w - 2) * (h - 2);
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < interior;
         k += (long long)gridDim.x * blockDim.x) {
      const long long i = (1 + k / (w - 2)) * w + 1 + k % (w - 2);
      const long long value = (long long)grayOf(p, image.channels, i - 1) +
                              grayOf(p, image.channels, i + 1) + grayOf(p, image.channels, i - w) +
                              grayOf(p, image.channels, i + w) - 4LL * grayOf(p, image.channels, i);
      sum += value;
      squares += value * value;
    }
  }
  blockSumInto(sum, &out[2 * blockIdx.y]);
  __syncthreads();
  blockSumInto(squares, &out[2 * blockIdx.y + 1]);
}

template <bool Normalize>
__global__ void resizeKernel(const ImageDescriptor *images, const unsigned char *pixels, int width,
                             int height, TensorNormalization rgb, TensorNormalization gray,
                             unsigned char *out8, float *outFloat) {
  const ImageDescriptor image = images[blockIdx.y];
  const double scaleX = (double)image.width / (double)width;
  const double scaleY = (double)image.height / (double)height;
  const TensorNormalization &normalization = image.channels == 1 ? gray : rgb;
  const long long count = (long long)width * height;
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < count;
       k += (long long)gridDim.x * blockDim.x) {
    const int y = (int)(k / width), x = (int)(k % width);
    for (int c = 0; c < image.channels; ++c) {
      const double value = bilinearSample(pixels + image.input, image.width, image.height,
                                          image.channels, false, scaleX, scaleY, x, y, c);
      if (Normalize)
        outFloat[image.output + ((long long)c * height + y) * width + x] =
            ((float)value / 255.0f - normalization.mean[c]) / normalization.std[c];
      else
        out8[image.output + k * image.channels + c] = (unsigned char)llround(value);
    }
  }
}

/// One block per image: its gray levels resized to 32x32, then the 8x8 DCT coefficients.
__global__ void phashKernel(const ImageDescriptor *images, const unsigned char *pixels,
                            double *out) {
  __shared__ unsigned char small[kHashSide * kHashSide];
  const ImageDescriptor image = images[blockIdx.x];
  const double scaleX = (double)image.width / (double)kHashSide;
  const double scaleY = (double)image.height / (double)kHashSide;
  for (int k = threadIdx.x; k < kHashSide * kHashSide; k += blockDim.x)
    small[k] = (unsigned char)llround(bilinearSample(pixels + image.input, image.width,
                                                     image.height, image.channels, true, scaleX,
                                                     scaleY, k % kHashSide, k / kHashSide, 0));
  __syncthreads();
  if (threadIdx.x < 64) {
    const int u = threadIdx.x / 8, v = threadIdx.x % 8;
    double sum = 0;
    for (int y = 0; y < kHashSide; ++y)
      for (int x = 0; x < kHashSide; ++x)
        sum += (double)small[y * kHashSide + x] * dctCosines[u * kHashSide + x] *
               dctCosines[v * kHashSide + y];
    out[(long long)blockIdx.x * 64 + threadIdx.x] = sum;
  }
}

__global__ void differenceKernel(const ImageDescriptor *pairs, const unsigned char *pixels,
                                 unsigned long long *out) {
  const ImageDescriptor pair = pairs[blockIdx.y];
  const long long count = (long long)pair.width * pair.height;
  unsigned long long sum = 0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const int difference = (int)grayOf(pixels + pair.input, pair.channels, i) -
                           (int)grayOf(pixels + pair.secondInput, pair.secondChannels, i);
    sum += (unsigned long long)(difference < 0 ? -difference : difference);
  }
  blockSumInto(sum, &out[blockIdx.y]);
}

dim3 gridFor(long long largestElements, int images) {
  long long blocks = (largestElements + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > kMaxBlocksPerImage)
    blocks = kMaxBlocksPerImage;
  return dim3((unsigned)blocks, (unsigned)images);
}

} // namespace

cudaError_t uploadDctCosines(const double *cosines) {
  return cudaMemcpyToSymbol(dctCosines, cosines, sizeof(double) * 8 * kHashSide);
}

void launchGrayscale(cudaStream_t stream, const ImageDescriptor *images, int count,
                     long long largestPixels, const unsigned char *pixels, unsigned char *out) {
  grayscaleKernel<<<gridFor(largestPixels, count), kThreads, 0, stream>>>(images, pixels, out);
}

void launchLaplacian(cudaStream_t stream, const ImageDescriptor *images, int count,
                     long long largestPixels, const unsigned char *pixels, long long *out) {
  cudaMemsetAsync(out, 0, sizeof(long long) * 2 * count, stream);
  laplacianKernel<<<gridFor(largestPixels, count), kThreads, 0, stream>>>(images, pixels, out);
}

void launchResize(cudaStream_t stream, const ImageDescriptor *images, int count, int width,
                  int height, const unsigned char *pixels, unsigned char *out) {
  resizeKernel<false><<<gridFor((long long)width * height, count), kThreads, 0, stream>>>(
      images, pixels, width, height, tensorNormalization(3), tensorNormalization(1), out, nullptr);
}

void launchResizeNormalize(cudaStream_t stream, const ImageDescriptor *images, int count, int width,
                           int height, const unsigned char *pixels, float *out) {
  resizeKernel<true><<<gridFor((long long)width * height, count), kThreads, 0, stream>>>(
      images, pixels, width, height, tensorNormalization(3), tensorNormalization(1), nullptr, out);
}

void launchPhash(cudaStream_t stream, const ImageDescriptor *images, int count,
                 const unsigned char *pixels, double *out) {
  phashKernel<<<count, kThreads, 0, stream>>>(images, pixels, out);
}

void launchDifferences(cudaStream_t stream, const ImageDescriptor *pairs, int count,
                       long long largestPixels, const unsigned char *pixels,
                       unsigned long long *out) {
  cudaMemsetAsync(out, 0, sizeof(unsigned long long) * count, stream);
  differenceKernel<<<gridFor(largestPixels, count), kThreads, 0, stream>>>(pairs, pixels, out);
}

} // namespace orch::stdlib::cuda
