// Winograd F(2x2, 3x3) for 2-D 3x3 convolutions with stride 1, no dilation and one group: each
// 2x2 output tile costs 16 multiply-adds per input/output channel pair instead of 36, run as 16
// GEMMs over blocks of tiles. In PP-OCRv4 det two such 96->24 convs at 160x160 took 40 ms of a
// 150 ms run through im2col + GEMM; ONNX Runtime ran them in 23 ms.
// Numerics: the transforms only add and subtract (and halve, in the weight transform), so the
// result differs from a direct sum by float rounding of sums of at most 16 terms per product;
// F(4x4, 3x3) would save more but amplifies rounding by up to 10x and is not used.
// Private to lib/runtime/kernels.
#pragma once

#include <cstdint>
#include <vector>

namespace porttool::runtime::kernels {

// The transformed weights U = G g G^T of every (output, input) channel pair, laid out as 16
// matrices [c_out x c_in] (one per position of the 4x4 tile), ready to be GEMM operands.
struct WinogradWeights {
  int64_t c_out = 0, c_in = 0;
  std::vector<float> u;
};

// `w` is the conv's [c_out, c_in, 3, 3] weight tensor.
WinogradWeights TransformWinogradWeights(const float* w, int64_t c_out, int64_t c_in);

// Whether a conv of these channel counts and output size is worth the transforms: small convs
// stay on im2col + GEMM.
bool WinogradPays(int64_t c_in, int64_t c_out, int64_t out_h, int64_t out_w);

struct WinogradConv {
  const float* x = nullptr;     // [batch, c_in, in_h, in_w]
  const float* bias = nullptr;  // [c_out] or null
  float* y = nullptr;           // [batch, c_out, out_h, out_w]
  int64_t batch = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0, pad_top = 0, pad_left = 0;
};

void RunWinograd(const WinogradConv& conv, const WinogradWeights& weights);

}  // namespace porttool::runtime::kernels
