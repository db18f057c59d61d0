// Conv and ConvTranspose. Conv runs as one of four paths: Winograd F(2x2, 3x3) for large 3x3
// stride-1 convs with constant weights (winograd.h), a direct kernel for depthwise convs
// (memory-bound, so im2col would only add traffic), a plain GEMM for 1x1 stride-1 convs (the input
// already is the im2col matrix), and im2col + GEMM for the rest, with im2col built in cache-sized
// column chunks that are spread over the thread pool (see executor-performance.md for why the
// chunking and a single threading system matter on this machine).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/epilogue_rows.h"
#include "lib/runtime/kernels/gemm.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/sgemm.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/spatial.h"
#include "lib/runtime/kernels/vector_math.h"
#include "lib/runtime/kernels/winograd.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using kernels::Gemm;
using kernels::Window3;

// im2col chunks of about this many bytes stay in L2 while the GEMM consumes them.
constexpr int64_t kIm2ColChunkBytes = 768 * 1024;

std::unique_ptr<float[]> Scratch(int64_t n) { return std::unique_ptr<float[]>(new float[n]); }

// What PrepareConv builds from constant weights, once: the GEMM-packed weights of every group
// (the per-call packing cost more than the product on a 4-image batch of 4x1 planes), and the
// Winograd weights of a 3x3 conv that may take that path (whether its output is large enough is
// decided per run).
struct PreparedConv {
  std::vector<kernels::PackedA> packed;  // per group: [c_out / group x c_in / group * taps]
  std::shared_ptr<const kernels::WinogradWeights> winograd;
  // The weights as a GEMM's B operand (W^T, group 1), for batches too narrow for the tile
  // (RunNarrowBatch). Packed by the first run that needs it: most convs never do, and a second
  // copy of every model's weights would cost their size in memory.
  const kernels::PackedB& Transposed(const float* weights, int64_t c_out, int64_t rows) const {
    std::call_once(transposed_once_,
                   [&] { transposed_ = kernels::PackMatrixB(true, rows, c_out, weights, rows); });
    return transposed_;
  }

 private:
  mutable std::once_flag transposed_once_;
  mutable kernels::PackedB transposed_;
};

// The operands of one conv, resolved and validated.
struct ConvProblem {
  int64_t batch = 0, c_in = 0, c_out = 0, group = 1, cin_g = 0, cout_g = 0;
  Window3 w;
  const float* x = nullptr;
  const float* weights = nullptr;
  const float* bias = nullptr;  // nullptr when absent
  float* y = nullptr;
  const std::vector<kernels::PackedA>* packed = nullptr;  // per group, from PrepareConv
  const PreparedConv* prepared = nullptr;                 // set with `packed`
  const Epilogue* epilogue = nullptr;                     // fused tail (epilogue.h), null when none
  const float* residual = nullptr;                        // the epilogue's residual, laid out as y
  int64_t kernel_rows() const { return cin_g * w.kernel_size(); }
  // Output rows [row0, row0 + rows) of group g = weights x B (B: kernel_rows() x n at stride
  // ldb), through the weights packed at plan time when there are some.
  void WeightsTimes(int64_t g, int64_t row0, int64_t rows, int64_t n, const float* b, int64_t ldb,
                    float* c, int64_t ldc) const {
    if (packed) {
      kernels::SgemmPacked((*packed)[g], row0, rows, false, n, b, ldb, 0.f, c, ldc);
      return;
    }
    const int64_t k = kernel_rows();
    Gemm(false, false, rows, n, k, 1.f, weights + (g * cout_g + row0) * k, k, b, ldb, 0.f, c, ldc);
  }
  // Bias and epilogue for `rows` output channels from `channel` of image n, `cols` wide from
  // position j0, at row stride `ld` (the plane size).
  void Finish(int64_t n, int64_t channel, int64_t rows, int64_t j0, int64_t cols, int64_t ld,
              bool with_bias) const {
    const int64_t offset = (n * c_out + channel) * ld + j0;
    kernels::FinishRows(with_bias && bias ? bias + channel : nullptr, epilogue, channel, rows, cols,
                        ld, y + offset, residual ? residual + offset : nullptr);
  }
};

void CheckFloat(const KernelContext& ctx, const Tensor& t) {
  if (t.dtype() != onnx::TensorProto::FLOAT) kernels::FailDtype(ctx, t.dtype());
}

const float* OptionalBias(const KernelContext& ctx, int64_t c_out) {
  if (!ctx.has_input(2)) return nullptr;
  const Tensor& b = ctx.input(2);
  CheckFloat(ctx, b);
  if (b.size() != c_out) {
    ctx.Fail(fmt::format("bias {} must have {} values (one per output channel)", b.DebugString(),
                         c_out));
  }
  return b.data<float>();
}

int64_t ReadGroup(const KernelContext& ctx, int64_t c_in) {
  int64_t group = ctx.GetInt("group", 1);
  if (group <= 0 || c_in % group != 0) {
    ctx.Fail(fmt::format("group {} does not divide the {} input channels", group, c_in));
  }
  return group;
}

// ---- im2col / col2im ----

// Im2Col of a 1-D window (one output row; sequence and audio convs after DropUnitWidth) at
// stride 1: each (channel, tap) row is the input row shifted by the tap, zeros at the edges.
// The general walk spent ~100 cycles of index arithmetic and two library calls per 32-float row
// (21% of the LeakyRelu conv net's time).
void Im2ColRow1D(const float* x, int64_t channels, const Window3& w, int64_t p0, int64_t p1,
                 float* col, int64_t ld) {
  const int64_t width = w.in[2], run = p1 - p0;
  for (int64_t c = 0; c < channels; ++c) {
    const float* src = x + c * width;
    for (int64_t kw = 0; kw < w.kernel[2]; ++kw, col += ld) {
      const int64_t iw0 = p0 + kw * w.dilations[2] - w.pad_begin[2];
      const int64_t lo = std::clamp<int64_t>(-iw0, 0, run);
      const int64_t hi = std::clamp<int64_t>(width - iw0, lo, run);
      for (int64_t j = 0; j < lo; ++j) col[j] = 0.f;
      for (int64_t j = lo; j < hi; ++j) col[j] = src[iw0 + j];
      for (int64_t j = hi; j < run; ++j) col[j] = 0.f;
    }
  }
}

// dst[j] = src[2 j] for j < n, 16 at a time from two vectors' even lanes. The last vector
// read ends one float past src[2 (n - 1)], so the loop stops a vector early.
PORTTOOL_SIMD_CLONES void CopyEvenFloats(const float* src, int64_t n, float* dst) {
  int64_t j = 0;
  for (; j + 17 <= n; j += 16) {
    V16f a, b;
    std::memcpy(&a, src + 2 * j, sizeof a);
    std::memcpy(&b, src + 2 * j + 16, sizeof b);
    const V16f even =
        __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    std::memcpy(dst + j, &even, sizeof even);
  }
  for (; j < n; ++j) dst[j] = src[2 * j];
}

// One im2col run: col[j] = src[iw0 + j sw], 0 where that is outside the row. The padding ends
// are cut off first so the middle needs no bounds test; stride 1 is a memcpy, and stride 2 (the
// downsampling convs: det's first conv spent 46% of its time here) copies even lanes.
void ImageRowRun(const float* src, int64_t iw0, int64_t sw, int64_t width, int64_t run,
                 float* col) {
  const auto [lo, hi] = kernels::TapsInside(iw0, sw, width, run);
  std::fill(col, col + lo, 0.f);
  if (sw == 1) {
    std::memcpy(col + lo, src + iw0 + lo, (hi - lo) * sizeof(float));
  } else if (sw == 2) {
    CopyEvenFloats(src + iw0 + 2 * lo, hi - lo, col + lo);
  } else {
    for (int64_t j = lo; j < hi; ++j) col[j] = src[iw0 + j * sw];
  }
  std::fill(col + hi, col + run, 0.f);
}

bool IsRow1D(const Window3& w) {
  return w.in[0] == 1 && w.in[1] == 1 && w.out[0] == 1 && w.out[1] == 1 && w.kernel[0] == 1 &&
         w.kernel[1] == 1 && w.strides[2] == 1;
}

// Fills col[r][j] (r over channels x kernel taps, j over output positions [p0, p1)) with the
// input value each tap reads, or 0 in the padding. Rows are `ld` apart (default p1 - p0): a
// batch of small images writes each image's columns into one matrix for all of them.
void Im2Col(const float* x, int64_t channels, const Window3& w, int64_t p0, int64_t p1, float* col,
            int64_t ld = 0) {
  if (IsRow1D(w)) return Im2ColRow1D(x, channels, w, p0, p1, col, ld == 0 ? p1 - p0 : ld);
  const int64_t width = w.in[2], sw = w.strides[2], row = p1 - p0;
  const int64_t row_gap = ld == 0 ? 0 : ld - row;
  int64_t filled = 0;  // of the current row
  kernels::Im2ColRuns(x, channels, w, p0, p1,
                      [&](const float* src, int64_t iw_off, int64_t ow, int64_t run) {
                        if (src == nullptr) {
                          std::fill(col, col + run, 0.f);
                        } else {
                          ImageRowRun(src, ow * sw + iw_off, sw, width, run, col);
                        }
                        col += run;
                        filled += run;
                        if (filled == row) {
                          col += row_gap;
                          filled = 0;
                        }
                      });
}

// Adds col[r][i] (r over out channel x kernel taps, i over input positions) into the output
// plane of channel `co`, which starts at `y`. `w` describes the forward direction seen from the
// output: w.out is the ConvTranspose input size, w.in its output size.
void Col2ImChannel(const float* col, const Window3& w, float* y) {
  const auto& in = w.out;  // ConvTranspose input
  const auto& out = w.in;  // ConvTranspose output
  const int64_t positions = w.out_size();
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw, col += positions) {
        for (int64_t id = 0; id < in[0]; ++id) {
          const int64_t od = id * w.strides[0] - w.pad_begin[0] + kd * w.dilations[0];
          if (od < 0 || od >= out[0]) continue;
          for (int64_t ih = 0; ih < in[1]; ++ih) {
            const int64_t oh = ih * w.strides[1] - w.pad_begin[1] + kh * w.dilations[1];
            if (oh < 0 || oh >= out[1]) continue;
            const float* src = col + (id * in[1] + ih) * in[2];
            float* dst = y + (od * out[1] + oh) * out[2];
            const int64_t off = kw * w.dilations[2] - w.pad_begin[2];
            for (int64_t iw = 0; iw < in[2]; ++iw) {
              const int64_t ow = iw * w.strides[2] + off;
              if (ow >= 0 && ow < out[2]) dst[ow] += src[iw];
            }
          }
        }
      }
}

// Whether every output element of the ConvTranspose receives exactly one tap: stride equal to
// kernel, no dilation, padding or output padding (FPN/DB heads' 2x2 stride-2 upsampling).
bool TapsTileTheOutput(const Window3& w) {
  for (int i = 0; i < 3; ++i) {
    if (w.strides[i] != w.kernel[i] || w.dilations[i] != 1 || w.pad_begin[i] != 0 ||
        w.in[i] != w.out[i] * w.strides[i]) {
      return false;
    }
  }
  return true;
}

// dst[2i] = bias + even[i], dst[2i + 1] = bias + odd[i]: an output row of a width-2 kernel from
// its two taps' rows, 8 pairs per step (the scalar interleave took 3.7% of det's time).
PORTTOOL_SIMD_CLONES void InterleavePairs(const float* even, const float* odd, int64_t n,
                                          float bias, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    kernels::V8f a, b;
    std::memcpy(&a, even + i, sizeof a);
    std::memcpy(&b, odd + i, sizeof b);
    a = bias + a;
    b = bias + b;
    const kernels::V8f lo = __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
    const kernels::V8f hi = __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15);
    std::memcpy(dst + 2 * i, &lo, sizeof lo);
    std::memcpy(dst + 2 * i + 8, &hi, sizeof hi);
  }
  for (; i < n; ++i) {
    dst[2 * i] = bias + even[i];
    dst[2 * i + 1] = bias + odd[i];
  }
}

// Col2ImChannel for TapsTileTheOutput windows: each output row is written once, in order, as
// bias + its tap (the same sum as the bias fill plus one add), instead of filled and then
// visited once per kernel column (det's two ConvTransposes spent more time here than in GEMM).
//
// The taps of input rows [r0, r1) (an input row: one (depth, height) pair) are at `col`, each
// tap's row `tap_stride` after the previous one's; the output rows they fill are written.
void Col2ImTiles(const float* col, int64_t tap_stride, const Window3& w, int64_t r0, int64_t r1,
                 float bias, float* y) {
  const auto& in = w.out;  // ConvTranspose input
  const auto& out = w.in;  // ConvTranspose output
  const int64_t kw_count = w.kernel[2];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t id = r / in[1], ih = r % in[1];
    for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
      for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
        const int64_t tap = (kd * w.kernel[1] + kh) * kw_count;
        const float* src = col + tap * tap_stride + (r - r0) * in[2];
        float* dst = y + ((id * w.kernel[0] + kd) * out[1] + ih * w.kernel[1] + kh) * out[2];
        if (kw_count == 2) {
          InterleavePairs(src, src + tap_stride, in[2], bias, dst);
          continue;
        }
        for (int64_t iw = 0; iw < in[2]; ++iw) {
          for (int64_t kw = 0; kw < kw_count; ++kw) {
            dst[iw * kw_count + kw] = bias + src[kw * tap_stride + iw];
          }
        }
      }
    }
  }
}

// ---- depthwise ----

struct DepthwisePlane {
  const float* in;  // padded input plane
  int64_t in_w;     // its row stride
  const float* k;   // kernel taps
  float bias;
  float* out;
  int64_t out_h, out_w;
  int64_t stride_h;
  // Stride 2 only: when not 0, each row holds the padded row's even columns, then from `half`
  // on its odd ones (StageSplitRows), so each tap reads consecutive floats.
  int64_t half = 0;
};

// Rows of a KxK depthwise conv with stride S along W and no dilation: the taps are unrolled, the
// loop over output columns vectorises.
template <int K, int S>
PORTTOOL_ALWAYS_INLINE void DepthwiseRows(const DepthwisePlane& a) {
  float k[K * K];
  for (int i = 0; i < K * K; ++i) k[i] = a.k[i];
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    const float* rows[K];
    for (int i = 0; i < K; ++i) rows[i] = a.in + (oy * a.stride_h + i) * a.in_w;
    float* dst = a.out + oy * a.out_w;
    for (int64_t ox = 0; ox < a.out_w; ++ox) {
      float acc = a.bias;
#pragma GCC unroll 5
      for (int ky = 0; ky < K; ++ky)
#pragma GCC unroll 5
        for (int kx = 0; kx < K; ++kx) acc += k[ky * K + kx] * rows[ky][ox * S + kx];
      dst[ox] = acc;
    }
  }
}

// L outputs of R rows (out_step apart in `out`) from `in`, the input row under the first, rows
// in_w apart, the output rows S input rows apart: R vectors of sums in flight, so the K*K
// multiply-adds of one output (a chain: the order of the sum is fixed) overlap those of the
// others, and each input vector is loaded once for the up to K output rows that read it. Each
// output still adds its taps in (ky, kx) order, the order of DepthwiseRows. One vector per row
// left one chain at a time, and the conv waited on its latency (1.5x ONNX Runtime on
// BlazeFace's planes). Plain values, not the plane's struct: the stores (memcpy) could alias it.
template <typename V, int K, int S, int R>
PORTTOOL_ALWAYS_INLINE void DepthwiseTile(const float* in, int64_t in_w, int64_t half,
                                          const float* k, float bias, float* out,
                                          int64_t out_step) {
  V acc[R];
  for (auto& v : acc) v = V{} + bias;
#pragma GCC unroll 16
  for (int ir = 0; ir < (R - 1) * S + K; ++ir) {
#pragma GCC unroll 5
    for (int kx = 0; kx < K; ++kx) {
      // Stride 2: padded column 2 ox + kx is column ox + kx / 2 of the even or odd half.
      const int64_t tap = S == 1 ? kx : (kx % 2) * half + kx / 2;
      V v;
      std::memcpy(&v, in + ir * in_w + tap, sizeof v);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const int ky = ir - r * S;
        if (ky >= 0 && ky < K) acc[r] += k[ky * K + kx] * v;
      }
    }
  }
  for (int r = 0; r < R; ++r) std::memcpy(out + r * out_step, &acc[r], sizeof(V));
}

// A plane in tiles of four rows (then single rows) by L columns; the last column tile ends at
// the row's end, overlapping the one before (it writes the same sums again) rather than leaving
// a scalar tail. Rows narrower than L take DepthwiseRows. At stride 2 the rows are split into
// their even and odd columns (DepthwisePlane::half).
template <typename V, int K, int S>
PORTTOOL_ALWAYS_INLINE void DepthwiseTiles(const DepthwisePlane& a) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  float k[K * K];
  for (int i = 0; i < K * K; ++i) k[i] = a.k[i];
  const float* in = a.in;
  float* out = a.out;
  const float bias = a.bias;
  const int64_t in_w = a.in_w, row_step = S * a.in_w, out_w = a.out_w, out_h = a.out_h;
  const int64_t half = a.half;
  for (int64_t ox0 = 0; ox0 < out_w; ox0 += L) {
    const int64_t ox = std::min(ox0, out_w - L);
    int64_t oy = 0;
    for (; oy + 4 <= out_h; oy += 4) {
      DepthwiseTile<V, K, S, 4>(in + oy * row_step + ox, in_w, half, k, bias, out + oy * out_w + ox,
                                out_w);
    }
    for (; oy < out_h; ++oy) {
      DepthwiseTile<V, K, S, 1>(in + oy * row_step + ox, in_w, half, k, bias, out + oy * out_w + ox,
                                out_w);
    }
  }
}

template <int K, int S>
PORTTOOL_ALWAYS_INLINE void DepthwisePlaneKxK(const DepthwisePlane& a) {
  if (S == 2 && a.half == 0) return DepthwiseRows<K, S>(a);  // rows not split (narrow planes)
  if (a.out_w >= 16) return DepthwiseTiles<kernels::V16f, K, S>(a);
  if (a.out_w >= 8) return DepthwiseTiles<kernels::V8f, K, S>(a);
  DepthwiseRows<K, S>(a);
}

PORTTOOL_SIMD_CLONES void Depthwise3x3S1(const DepthwisePlane& a) { DepthwisePlaneKxK<3, 1>(a); }
PORTTOOL_SIMD_CLONES void Depthwise3x3S2(const DepthwisePlane& a) { DepthwisePlaneKxK<3, 2>(a); }
PORTTOOL_SIMD_CLONES void Depthwise5x5S1(const DepthwisePlane& a) { DepthwisePlaneKxK<5, 1>(a); }
PORTTOOL_SIMD_CLONES void Depthwise5x5S2(const DepthwisePlane& a) { DepthwisePlaneKxK<5, 2>(a); }

// Any kernel size, stride and dilation over the padded plane.
void DepthwiseGeneric(const DepthwisePlane& a, const Window3& w) {
  for (int64_t oy = 0; oy < a.out_h; ++oy) {
    float* dst = a.out + oy * a.out_w;
    std::fill(dst, dst + a.out_w, a.bias);
    for (int64_t ky = 0; ky < w.kernel[1]; ++ky) {
      const float* row = a.in + (oy * w.strides[1] + ky * w.dilations[1]) * a.in_w;
      for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
        const float kv = a.k[ky * w.kernel[2] + kx];
        const float* src = row + kx * w.dilations[2];
        for (int64_t ox = 0; ox < a.out_w; ++ox) dst[ox] += kv * src[ox * w.strides[2]];
      }
    }
  }
}

using DepthwiseFn = void (*)(const DepthwisePlane&);

DepthwiseFn FastDepthwise(const Window3& w) {
  if (w.kernel[1] != w.kernel[2] || w.dilations[1] != 1 || w.dilations[2] != 1) return nullptr;
  if (w.strides[2] != 1 && w.strides[2] != 2) return nullptr;
  if (w.strides[1] != w.strides[2]) return nullptr;  // the tiles step rows by the column stride
  const bool s1 = w.strides[2] == 1;
  if (w.kernel[1] == 3) return s1 ? Depthwise3x3S1 : Depthwise3x3S2;
  if (w.kernel[1] == 5) return s1 ? Depthwise5x5S1 : Depthwise5x5S2;
  return nullptr;
}

// rows x width floats from src (rows width apart) to dst (rows dst_w apart), inline: a library
// call per row of a 64x64 plane cost a third of the depthwise conv that copied it. With
// half != 0, the float for padded column c (c = col0 + its column) goes to (c % 2) * half + c / 2
// of its row: the even columns, then the odd ones, so that a stride-2 conv's taps read
// consecutive floats (a gather per tap cost 3x ONNX Runtime's time).
// even[i] = s[2i] and odd[i] = s[2i + 1], for the i where those exist (n values): sixteen pairs
// at a time, two loads and two shuffles. Not CopyEvenFloats twice: it stops a vector early, and
// the scalar rest of each 64-float row cost a third more than the conv.
PORTTOOL_ALWAYS_INLINE void Deinterleave(const float* s, int64_t n, float* even, float* odd) {
  int64_t i = 0;
  for (; 2 * i + 32 <= n; i += 16) {
    V16f v0, v1;
    std::memcpy(&v0, s + 2 * i, sizeof v0);
    std::memcpy(&v1, s + 2 * i + 16, sizeof v1);
    const V16f e =
        __builtin_shufflevector(v0, v1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const V16f o =
        __builtin_shufflevector(v0, v1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    std::memcpy(even + i, &e, sizeof e);
    std::memcpy(odd + i, &o, sizeof o);
  }
  for (; 2 * i < n; ++i) {
    even[i] = s[2 * i];
    if (2 * i + 1 < n) odd[i] = s[2 * i + 1];
  }
}

PORTTOOL_SIMD_CLONES void StageRows(const float* src, int64_t rows, int64_t width, float* dst,
                                    int64_t dst_w, int64_t col0, int64_t half) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * width;
    float* d = dst + r * dst_w;
    if (half == 0) {
      for (int64_t c = 0; c < width; ++c) d[col0 + c] = s[c];
      continue;
    }
    // From the first source column that lands on an even padded column on, in pairs.
    const int64_t f = col0 % 2;
    if (f == 1 && width > 0) d[half + col0 / 2] = s[0];
    Deinterleave(s + f, width - f, d + (col0 + f) / 2, d + half + (col0 + f) / 2);
  }
}

// Depthwise conv (one input and one output channel per group) over 1-D/2-D inputs: each plane
// is copied once into a zero-padded buffer so the inner loops have no bounds checks.
void RunDepthwise(const ConvProblem& p) {
  const Window3& w = p.w;
  const int64_t pad_h = w.pad_begin[1] + w.pad_end[1], pad_w = w.pad_begin[2] + w.pad_end[2];
  const int64_t in_h = w.in[1], in_w = w.in[2];
  const DepthwiseFn fast = FastDepthwise(w);
  // Stride-2 rows are staged split into even and odd columns (each half with the slack), for
  // planes wide enough for the vector tiles.
  const bool split = fast != nullptr && w.strides[2] == 2 && w.out[2] >= 8;
  const int64_t half = split ? (in_w + pad_w + 1) / 2 + 8 : 0;
  const int64_t ph = in_h + pad_h, pw = split ? 2 * half : in_w + pad_w + 8;  // + slack
  const bool staged = pad_h != 0 || pad_w != 0 || split;
  const int64_t planes = p.batch * p.c_out;
  kernels::ParallelRows(planes, w.out_size() * w.kernel_size(), [&](int64_t begin, int64_t end) {
    std::unique_ptr<float[]> buffer = staged ? Scratch(ph * pw) : nullptr;
    if (staged) std::fill(buffer.get(), buffer.get() + ph * pw, 0.f);
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % p.c_out;
      const float* src = p.x + plane * w.in_size();
      DepthwisePlane a{src,
                       in_w,
                       p.weights + c * w.kernel_size(),
                       p.bias ? p.bias[c] : 0.f,
                       p.y + plane * w.out_size(),
                       w.out[1],
                       w.out[2],
                       w.strides[1],
                       half};
      if (staged) {
        // Only the interior changes between planes; the zero border is written once.
        StageRows(src, in_h, in_w, buffer.get() + w.pad_begin[1] * pw, pw, w.pad_begin[2], half);
        a.in = buffer.get();
        a.in_w = pw;
      }
      if (fast) {
        fast(a);
      } else {
        DepthwiseGeneric(a, w);
      }
      if (p.epilogue) p.Finish(plane / p.c_out, c, 1, 0, w.out_size(), w.out_size(), false);
    }
  });
}

// ---- GEMM paths ----

// Output bytes of a pointwise conv's column block: the epilogue then reads the block back from
// L2. Blocks of an eighth of the plane (1.6 MB at 32 channels of 320x320) made it read from L3,
// and it took as long as the GEMM.
constexpr int64_t kPointwiseBlockBytes = 256 * 1024;

// 1x1, stride 1, no padding: Y[g] = W[g] * X[g] with the input as the GEMM's B matrix, split by
// column blocks across threads.
void RunPointwise(const ConvProblem& p) {
  const int64_t positions = p.w.out_size();
  const int64_t cache_cols = kPointwiseBlockBytes / static_cast<int64_t>(sizeof(float)) /
                             std::max<int64_t>(p.cout_g, 1) / 16 * 16;
  const int64_t block =
      std::min(kernels::PieceSize(positions, 256), std::max<int64_t>(256, cache_cols));
  const int64_t blocks = (positions + block - 1) / block;
  const int64_t images = p.batch * p.group;
  const int64_t macs_per_item = block * p.cout_g * p.cin_g;
  kernels::ParallelMacs(images * blocks, macs_per_item, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / blocks, g = image % p.group, n = image / p.group;
      const int64_t j0 = (item % blocks) * block, cols = std::min(block, positions - j0);
      const float* x = p.x + (n * p.c_in + g * p.cin_g) * positions + j0;
      float* y = p.y + (n * p.c_out + g * p.cout_g) * positions + j0;
      p.WeightsTimes(g, 0, p.cout_g, cols, x, positions, y, positions);
      p.Finish(n, g * p.cout_g, p.cout_g, j0, cols, positions, true);
    }
  });
}

// General conv: im2col over column chunks that fit in L2, each followed by its GEMM.
void RunIm2ColGemm(const ConvProblem& p) {
  const int64_t positions = p.w.out_size();
  const int64_t rows = p.kernel_rows();
  // rows is 0 for a conv over zero input channels (an empty sum: the output is the bias).
  int64_t chunk = std::max<int64_t>(16, kIm2ColChunkBytes / static_cast<int64_t>(sizeof(float)) /
                                            std::max<int64_t>(rows, 1) / 16 * 16);
  chunk = std::min(chunk, positions);
  const int64_t chunks = (positions + chunk - 1) / chunk;
  const int64_t images = p.batch * p.group;
  const int64_t macs_per_item = chunk * p.cout_g * std::max<int64_t>(rows, 1);
  kernels::ParallelMacs(images * chunks, macs_per_item, [&](int64_t begin, int64_t end) {
    std::unique_ptr<float[]> col = Scratch(rows * chunk);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / chunks, g = image % p.group, n = image / p.group;
      const int64_t j0 = (item % chunks) * chunk, cols = std::min(chunk, positions - j0);
      Im2Col(p.x + (n * p.c_in + g * p.cin_g) * p.w.in_size(), p.cin_g, p.w, j0, j0 + cols,
             col.get());
      float* y = p.y + (n * p.c_out + g * p.cout_g) * positions + j0;
      p.WeightsTimes(g, 0, p.cout_g, cols, col.get(), cols, y, positions);
      p.Finish(n, g * p.cout_g, p.cout_g, j0, cols, positions, true);
    }
  });
}

// A 1-D conv over one input channel per group that never reads padding (an STFT as a conv:
// melspectrogram's 512 taps at stride 160): output position j reads x[j stride, j stride + taps),
// so im2col's matrix is x itself read as a transposed B whose rows are `stride` floats apart. The
// GEMM packs straight from x; the general im2col gathered 50K floats one at a time per conv.
bool IsStridedSignal(const ConvProblem& p) {
  const Window3& w = p.w;
  const bool row_1d = w.in[0] == 1 && w.in[1] == 1 && w.out[0] == 1 && w.out[1] == 1 &&
                      w.kernel[0] == 1 && w.kernel[1] == 1;
  return row_1d && p.cin_g == 1 && p.packed != nullptr && w.pad_begin[2] == 0 &&
         w.dilations[2] == 1 && (w.out[2] - 1) * w.strides[2] + w.kernel[2] <= w.in[2];
}

// Threads take blocks of whole GEMM tiles of positions, so each packs only its own columns.
void RunStridedSignal(const ConvProblem& p) {
  const int64_t positions = p.w.out_size(), stride = p.w.strides[2];
  const int64_t tile = kernels::SgemmTileWidth();
  const int64_t block = (kernels::PieceSize(positions, tile) + tile - 1) / tile * tile;
  const int64_t blocks = (positions + block - 1) / block, images = p.batch * p.group;
  kernels::ParallelMacs(images * blocks, block * p.cout_g * p.kernel_rows(),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t item = begin; item < end; ++item) {
                            const int64_t image = item / blocks, g = image % p.group;
                            const int64_t n = image / p.group, j0 = (item % blocks) * block;
                            const int64_t cols = std::min(block, positions - j0);
                            const float* x = p.x + (n * p.c_in + g) * p.w.in[2] + j0 * stride;
                            float* y = p.y + (n * p.c_out + g * p.cout_g) * positions + j0;
                            kernels::SgemmPacked((*p.packed)[g], 0, p.cout_g, true, cols, x, stride,
                                                 0.f, y, positions);
                            p.Finish(n, g * p.cout_g, p.cout_g, j0, cols, positions, true);
                          }
                        });
}

// A batch of small images (one group): the im2col columns of every image side by side and one
// GEMM over them, so the weights are packed once per conv rather than once per image, and the
// GEMM is wide enough to split across threads (by row pieces of C: the same bits at any thread
// count). A 4x76x32x1 LeakyRelu conv net spent 2.7x ONNX Runtime's conv time in per-image GEMMs
// of 32 columns.
bool IsSmallImageBatch(const ConvProblem& p) {
  const int64_t positions = p.w.out_size();
  const int64_t cols = p.batch * positions;
  return p.group == 1 && p.batch > 1 && positions < 256 &&
         (p.kernel_rows() + p.c_out) * cols <= (int64_t{1} << 21);
}

// Whether a batch's columns are too few for the GEMM tile while the weights are wide enough to
// take their place: stage 5 of the LeakyRelu conv net multiplies 256x768 weights by 8 columns (4
// images of 2 positions), which filled half of each 16-lane sum (20 GMAC/s).
bool IsNarrowBatch(const ConvProblem& p, int64_t cols) {
  const int64_t tile = kernels::SgemmTileWidth();
  return p.prepared != nullptr && 2 * cols <= tile && p.c_out >= tile;
}

// C^T = col^T W^T for a narrow batch: the output channels are the GEMM's columns and the batch's
// positions its rows, then each image's planes are gathered from C^T. Threads take whole blocks
// of channels, so the bits are the same at any thread count.
void RunNarrowBatch(const ConvProblem& p, const float* col, int64_t cols) {
  const int64_t positions = p.w.out_size(), rows = p.kernel_rows();
  const kernels::PackedB& wt = p.prepared->Transposed(p.weights, p.c_out, rows);
  // col^T packed once for all blocks: packing it per block (a transposing copy) took longer
  // than the products.
  const kernels::PackedA positions_by_depth = kernels::PackMatrixA(true, cols, rows, col, cols);
  std::unique_ptr<float[]> out = Scratch(cols * p.c_out);
  const int64_t align = kernels::kSgemmColAlign;
  const int64_t block = (kernels::PieceSize(p.c_out, align) + align - 1) / align * align;
  const int64_t blocks = (p.c_out + block - 1) / block;
  kernels::ParallelMacs(blocks, block * cols * rows, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t c0 = b * block, n = std::min(block, p.c_out - c0);
      kernels::SgemmPackedAB(positions_by_depth, 0, cols, wt, c0, n, 0.f, out.get() + c0, p.c_out);
      // Bias and epilogue on C^T, a vector of channels at a time: on the gathered planes they
      // were a call per 2-value row (12 us of a 40 us conv with LeakyRelu fused). A residual is
      // laid out as the planes, so it is added after the gather.
      const bool on_columns = p.residual == nullptr;
      if (on_columns) {
        kernels::FinishColumns(p.bias ? p.bias + c0 : nullptr, p.epilogue, c0, cols, n, p.c_out,
                               out.get() + c0, nullptr);
      }
      for (int64_t img = 0; img < p.batch; ++img) {
        const float* product = out.get() + img * positions * p.c_out;
        for (int64_t co = c0; co < c0 + n; ++co) {
          float* y = p.y + (img * p.c_out + co) * positions;
          for (int64_t j = 0; j < positions; ++j) y[j] = product[j * p.c_out + co];
        }
        if (!on_columns) p.Finish(img, c0, n, 0, positions, positions, true);
      }
    }
  });
}

void RunSmallImageBatch(const ConvProblem& p) {
  const int64_t positions = p.w.out_size(), rows = p.kernel_rows();
  const int64_t cols = p.batch * positions;
  std::unique_ptr<float[]> col = Scratch(rows * cols);
  kernels::ParallelRows(p.batch, rows * positions, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      Im2Col(p.x + n * p.c_in * p.w.in_size(), p.c_in, p.w, 0, positions, col.get() + n * positions,
             cols);
    }
  });
  if (IsNarrowBatch(p, cols)) return RunNarrowBatch(p, col.get(), cols);
  // An image whose columns start on a GEMM panel boundary is multiplied straight into its
  // output planes; otherwise the product goes through `out` and is copied per image.
  const bool direct = positions % kernels::kSgemmColAlign == 0;
  std::unique_ptr<float[]> out = direct ? nullptr : Scratch(p.c_out * cols);
  const int64_t align = kernels::kSgemmRowAlign;
  const int64_t block = (kernels::PieceSize(p.c_out, 16) + align - 1) / align * align;
  const int64_t blocks = (p.c_out + block - 1) / block;
  // The columns packed once for every row piece, which otherwise each packed all of them again
  // (13% of the LeakyRelu conv net's time). The same bits either way.
  std::optional<kernels::PackedB> packed_cols;
  if (p.packed && blocks > 1 && rows > 0) {
    packed_cols = kernels::PackMatrixB(false, rows, cols, col.get(), cols);
  }
  kernels::ParallelMacs(
      blocks, block * cols * std::max<int64_t>(rows, 1), [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t r0 = b * block, r = std::min(block, p.c_out - r0);
          if (direct) {
            for (int64_t n = 0; n < p.batch; ++n) {
              float* y = p.y + (n * p.c_out + r0) * positions;
              if (packed_cols) {
                kernels::SgemmPackedAB((*p.packed)[0], r0, r, *packed_cols, n * positions,
                                       positions, 0.f, y, positions);
              } else {
                p.WeightsTimes(0, r0, r, positions, col.get() + n * positions, cols, y, positions);
              }
              p.Finish(n, r0, r, 0, positions, positions, true);
            }
            continue;
          }
          float* c = out.get() + r0 * cols;
          if (packed_cols) {
            kernels::SgemmPackedAB((*p.packed)[0], r0, r, *packed_cols, 0, cols, 0.f, c, cols);
          } else {
            p.WeightsTimes(0, r0, r, cols, col.get(), cols, c, cols);
          }
          for (int64_t n = 0; n < p.batch; ++n) {
            for (int64_t i = 0; i < r; ++i) {
              std::memcpy(p.y + (n * p.c_out + r0 + i) * positions, c + i * cols + n * positions,
                          positions * sizeof(float));
            }
            p.Finish(n, r0, r, 0, positions, positions, true);
          }
        }
      });
}

// A conv over [D, H, 1] with kernels [kd, kh, 1] and no width padding (sequence and audio
// models written as 2-D) is the same conv with the unit width dropped: moving the other dims one
// place right makes each im2col run H long instead of one element (im2col took 35% of a
// 4x76x32x1 conv net's time). The element order in memory is unchanged.
void DropUnitWidth(Window3& w) {
  if (w.in[2] != 1 || w.out[2] != 1 || w.kernel[2] != 1 || w.pad_begin[2] != 0 ||
      w.pad_end[2] != 0 || w.in[0] != 1 || w.out[0] != 1 || w.kernel[0] != 1) {
    return;
  }
  auto shift = [](std::array<int64_t, 3>& v, int64_t fill) {
    v[2] = v[1];
    v[1] = v[0];
    v[0] = fill;
  };
  shift(w.in, 1), shift(w.out, 1), shift(w.kernel, 1), shift(w.strides, 1);
  shift(w.dilations, 1), shift(w.pad_begin, 0), shift(w.pad_end, 0);
}

// One input and one output channel per group, and at most two spatial dims in play.
bool IsPlanarDepthwise(const ConvProblem& p) {
  return p.cin_g == 1 && p.cout_g == 1 && p.w.in[0] == 1 && p.w.out[0] == 1 &&
         p.w.pad_begin[0] == 0 && p.w.kernel[0] == 1;
}

bool IsPointwise(const Window3& w) {
  for (int i = 0; i < kernels::kMaxSpatialRank; ++i) {
    if (w.kernel[i] != 1 || w.strides[i] != 1 || w.pad_begin[i] != 0 || w.pad_end[i] != 0) {
      return false;
    }
  }
  return true;
}

// ---- Winograd path ----

bool IsWinogradShape(const ConvProblem& p, const kernels::WinogradWeights& u) {
  const Window3& w = p.w;
  return p.group == 1 && u.c_in == p.c_in && u.c_out == p.c_out && w.in[0] == 1 &&
         w.kernel[0] == 1 && w.kernel[1] == 3 && w.kernel[2] == 3 && w.strides[1] == 1 &&
         w.strides[2] == 1 && w.dilations[1] == 1 && w.dilations[2] == 1 &&
         kernels::WinogradPays(p.c_in, p.c_out, w.out[1], w.out[2]);
}

void RunWinogradConv(const ConvProblem& p, const kernels::WinogradWeights& u) {
  const Window3& w = p.w;
  kernels::WinogradConv c;
  c.x = p.x;
  c.bias = p.bias;
  c.y = p.y;
  c.batch = p.batch;
  c.in_h = w.in[1], c.in_w = w.in[2], c.out_h = w.out[1], c.out_w = w.out[2];
  c.pad_top = w.pad_begin[1], c.pad_left = w.pad_begin[2];
  kernels::RunWinograd(c, u);
  if (p.epilogue == nullptr) return;
  const int64_t positions = w.out_size();
  kernels::ParallelRows(p.batch * p.c_out, positions, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      p.Finish(plane / p.c_out, plane % p.c_out, 1, 0, positions, positions, false);
    }
  });
}

std::shared_ptr<const void> PrepareConv(const KernelContext& ctx) {
  if (!ctx.has_input(1)) return nullptr;
  const Tensor& wt = ctx.input(1);
  if (wt.dtype() != onnx::TensorProto::FLOAT || wt.rank() < 3 || wt.size() == 0) return nullptr;
  const int64_t group = ctx.GetInt("group", 1);
  if (group <= 0 || wt.dim(0) % group != 0) return nullptr;  // the kernel reports it
  auto prepared = std::make_shared<PreparedConv>();
  const int64_t cout_g = wt.dim(0) / group, rows = wt.size() / wt.dim(0);
  if (cout_g > 1 || rows > 1) {  // not depthwise: that path reads the weights directly
    for (int64_t g = 0; g < group; ++g) {
      prepared->packed.push_back(
          kernels::PackMatrixA(false, cout_g, rows, wt.data<float>() + g * cout_g * rows, rows));
    }
  }
  const auto ones = [&](const char* attr) {
    const auto v = ctx.GetInts(attr);
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
  };
  if (wt.rank() == 4 && wt.dim(2) == 3 && wt.dim(3) == 3 && group == 1 && ones("strides") &&
      ones("dilations") && kernels::WinogradPays(wt.dim(1), wt.dim(0), 1 << 20, 1)) {
    prepared->winograd = std::make_shared<kernels::WinogradWeights>(
        kernels::TransformWinogradWeights(wt.data<float>(), wt.dim(0), wt.dim(1)));
  }
  return prepared;
}

// ---- kernels ----

void ConvKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const Tensor& x = ctx.input(0);
  const Tensor& wt = ctx.input(1);
  CheckFloat(ctx, x);
  CheckFloat(ctx, wt);
  const std::vector<int64_t> spatial = kernels::SpatialDims(ctx, x.shape());
  if (wt.rank() != x.rank()) {
    ctx.Fail(fmt::format("weights {} must have the input's rank {}", wt.DebugString(), x.rank()));
  }
  ConvProblem p;
  p.batch = x.dim(0);
  p.c_in = x.dim(1);
  p.c_out = wt.dim(0);
  p.group = ReadGroup(ctx, p.c_in);
  p.cin_g = p.c_in / p.group;
  if (wt.dim(1) != p.cin_g || p.c_out % p.group != 0) {
    ctx.Fail(fmt::format("weights {} do not fit input {} with group {}", wt.DebugString(),
                         x.DebugString(), p.group));
  }
  p.cout_g = p.c_out / p.group;
  const std::vector<int64_t> kernel(wt.shape().begin() + 2, wt.shape().end());
  const kernels::Window win = kernels::ForwardWindow(ctx, spatial, kernel, false);
  p.w = kernels::To3D(win);
  DropUnitWidth(p.w);
  std::vector<int64_t> out_shape = {p.batch, p.c_out};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  Tensor& y = ctx.output(0) = Tensor::Uninitialized(onnx::TensorProto::FLOAT, out_shape);
  p.x = x.data<float>();
  p.weights = wt.data<float>();
  p.bias = OptionalBias(ctx, p.c_out);
  p.y = y.mutable_data<float>();
  p.epilogue = kernels::UsableEpilogue(ctx.epilogue(), y);
  if (p.epilogue && p.epilogue->residual) p.residual = p.epilogue->residual->data<float>();
  if (p.epilogue) ctx.mark_epilogue_applied();
  if (y.size() == 0) return;
  const auto* prepared = ctx.prepared<PreparedConv>();
  const kernels::WinogradWeights* winograd = prepared ? prepared->winograd.get() : nullptr;
  if (prepared && prepared->packed.size() == static_cast<size_t>(p.group) &&
      prepared->packed[0].m == p.cout_g && prepared->packed[0].k == p.kernel_rows()) {
    p.packed = &prepared->packed;
    p.prepared = prepared;
  }
  if (winograd && IsWinogradShape(p, *winograd)) {
    RunWinogradConv(p, *winograd);
  } else if (IsPlanarDepthwise(p)) {
    RunDepthwise(p);
  } else if (IsStridedSignal(p)) {
    RunStridedSignal(p);
  } else if (IsSmallImageBatch(p)) {
    RunSmallImageBatch(p);
  } else if (IsPointwise(p.w)) {
    RunPointwise(p);
  } else {
    RunIm2ColGemm(p);
  }
}

void ConvTransposeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                       "output_shape", "pads", "strides"});
  const Tensor& x = ctx.input(0);
  const Tensor& wt = ctx.input(1);
  CheckFloat(ctx, x);
  CheckFloat(ctx, wt);
  const std::vector<int64_t> spatial = kernels::SpatialDims(ctx, x.shape());
  if (wt.rank() != x.rank() || wt.dim(0) != x.dim(1)) {
    ctx.Fail(fmt::format("weights {} must be [C_in={}, C_out/group, kernel...]", wt.DebugString(),
                         x.dim(1)));
  }
  const int64_t batch = x.dim(0), c_in = x.dim(1);
  const int64_t group = ReadGroup(ctx, c_in);
  const int64_t cin_g = c_in / group, cout_g = wt.dim(1), c_out = cout_g * group;
  const std::vector<int64_t> kernel(wt.shape().begin() + 2, wt.shape().end());
  const kernels::Window win = kernels::TransposedWindow(ctx, spatial, kernel);
  // Seen from the output, ConvTranspose is a forward conv: swap in and out for the col2im walk.
  kernels::Window fwd = win;
  std::swap(fwd.in, fwd.out);
  const Window3 w = kernels::To3D(fwd);
  std::vector<int64_t> out_shape = {batch, c_out};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  // Every output plane is filled with its bias before col2im adds into it.
  Tensor& y = ctx.output(0) = Tensor::Uninitialized(onnx::TensorProto::FLOAT, out_shape);
  const float* bias = OptionalBias(ctx, c_out);
  const Epilogue* epilogue = kernels::UsableEpilogue(ctx.epilogue(), y);
  // The bias Add the tail absorbed (fusion.h) is added after the taps' sum, as that node adds
  // it; where it cannot be, the Session runs the absorbed nodes.
  const std::vector<float>* head_bias = epilogue ? &epilogue->spec->head_bias : nullptr;
  if (head_bias && !head_bias->empty() &&
      (bias || head_bias->size() != static_cast<size_t>(c_out))) {
    epilogue = nullptr;
  }
  const float* residual =
      epilogue && epilogue->residual ? epilogue->residual->data<float>() : nullptr;
  if (epilogue) ctx.mark_epilogue_applied();
  if (y.size() == 0) return;
  const int64_t in_positions = w.out_size(), out_positions = w.in_size();
  const int64_t rows = cout_g * w.kernel_size();
  const bool tiles = TapsTileTheOutput(w);
  std::unique_ptr<float[]> col = Scratch(tiles ? 0 : rows * in_positions);
  float* py = y.mutable_data<float>();
  const float* added_bias = epilogue && !head_bias->empty() ? head_bias->data() : nullptr;
  // The fused tail over `count` values of output channel `channel` of image n from `offset`.
  const auto finish = [&](int64_t n, int64_t channel, int64_t offset, int64_t count) {
    const int64_t at = (n * c_out + channel) * out_positions + offset;
    kernels::FinishRows(added_bias ? added_bias + channel : nullptr, epilogue, channel, 1, count,
                        count, py + at, residual ? residual + at : nullptr);
  };
  // A tiles piece of input rows fills whole output rows of each plane, in order, when the
  // kernel is one deep: its tail is applied while they are in cache.
  const bool finish_pieces = epilogue && tiles && w.kernel[0] == 1;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x.data<float>() + (n * c_in + g * cin_g) * in_positions;
      const float* wg = wt.data<float>() + g * cin_g * rows;
      if (tiles) {
        // Pieces of whole input rows: each piece's product is scattered while it is in cache
        // instead of through a column matrix of the whole input (det's 24 x 4 taps x 160 x 160:
        // 9.8 MB written and read back).
        const int64_t width = w.out[2], in_rows = w.out[0] * w.out[1];
        const int64_t piece_rows = std::max<int64_t>(1, 2048 / std::max<int64_t>(width, 1));
        const float* bg = bias ? bias + g * cout_g : nullptr;
        float* yg = py + (n * c_out + g * cout_g) * out_positions;
        ParallelFor((in_rows + piece_rows - 1) / piece_rows, 1, [&](int64_t begin, int64_t end) {
          std::unique_ptr<float[]> piece = Scratch(rows * piece_rows * width);
          for (int64_t p = begin; p < end; ++p) {
            const int64_t r0 = p * piece_rows, r1 = std::min(in_rows, r0 + piece_rows);
            const int64_t cols = (r1 - r0) * width;
            Gemm(true, false, rows, cols, cin_g, 1.f, wg, rows, xg + r0 * width, in_positions, 0.f,
                 piece.get(), cols);
            for (int64_t co = 0; co < cout_g; ++co) {
              Col2ImTiles(piece.get() + co * w.kernel_size() * cols, cols, w, r0, r1,
                          bg ? bg[co] : 0.f, yg + co * out_positions);
              const int64_t out_row = w.kernel[1] * w.in[2];
              if (finish_pieces) finish(n, g * cout_g + co, r0 * out_row, (r1 - r0) * out_row);
            }
          }
        });
        if (epilogue && !finish_pieces) {
          ParallelFor(cout_g, 1, [&](int64_t begin, int64_t end) {
            for (int64_t co = begin; co < end; ++co) finish(n, g * cout_g + co, 0, out_positions);
          });
        }
        continue;
      }
      const int64_t block = kernels::PieceSize(in_positions, 256);
      ParallelFor((in_positions + block - 1) / block, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          const int64_t j0 = b * block, cols = std::min(block, in_positions - j0);
          Gemm(true, false, rows, cols, cin_g, 1.f, wg, rows, xg + j0, in_positions, 0.f,
               col.get() + j0, in_positions);
        }
      });
      ParallelFor(cout_g, 1, [&](int64_t begin, int64_t end) {
        for (int64_t co = begin; co < end; ++co) {
          float* plane = py + (n * c_out + g * cout_g + co) * out_positions;
          std::fill(plane, plane + out_positions, bias ? bias[g * cout_g + co] : 0.f);
          Col2ImChannel(col.get() + co * w.kernel_size() * in_positions, w, plane);
          if (epilogue) finish(n, g * cout_g + co, 0, out_positions);
        }
      });
    }
  }
}

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  r.Register("", "Conv", 1, 17, ConvKernel, PrepareConv);
  r.AcceptEpilogue("", "Conv");
  r.Register("", "ConvTranspose", 1, 17, ConvTransposeKernel);
  r.AcceptEpilogue("", "ConvTranspose");
}

}  // namespace porttool::runtime
