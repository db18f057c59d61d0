// The ONNX operator-format quantized ops that models from other tools carry (onnxruntime's
// QOperator/integer-ops quantization, converters from TFLite): QLinearConv, ConvInteger,
// QLinearMatMul, MatMulInteger and DynamicQuantizeLinear.
//
// Numerics. Both operands are centred on their zero points as int16 (the difference of two 8-bit
// values always fits), so padding is simply 0 and per-channel zero points cost nothing in the
// inner loop. Products are summed in 32 bits with two's-complement wrap-around: the spec lets the
// accumulation overflow "if and only if in 32 bits", and unsigned arithmetic makes that wrap
// defined behaviour. The QLinear ops then requantize as ONNX Runtime does:
//   multiplier = x_scale * w_scale[c] / y_scale            (float32, left to right)
//   y = saturate(round_half_even(float(acc + bias) * multiplier) + y_zero_point)
// Float32 rather than double keeps outputs bit-identical to ONNX Runtime at the .5 boundaries
// (the same choice QuantizeLinear makes in quant.cc); a NaN (0 * inf from a zero y_scale) gives
// the zero point, as QuantizeLinear does.
//
// Conv runs as im2col over cache-sized column chunks (the geometry comes from spatial.h, shared
// with the float Conv) followed by an int16 x int16 -> int32 loop over four output channels at a
// time (AVX2/AVX-512 clones, simd.h); MatMul runs the same loop over four rows of A at a time and
// uses the float MatMul's batch broadcasting (matmul_batch.h). Constant weights (and B of the
// MatMuls) are centred once, at plan time.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/int16_gemm.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/matmul_batch.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/spatial.h"
#include "lib/runtime/kernels/vector_math.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

// im2col chunks of about this many bytes stay in L2 while the channel loop consumes them.
constexpr int64_t kQuantIm2ColChunkBytes = 512 * 1024;

// ---- operand checks (run at plan time on the constant inputs, and on every run) ----

// The input if the node declares it (a non-empty name at position i), else nullptr. In a prepare
// step only constants are present, so a declared input can still read as absent there.
const Tensor* Optional(const KernelContext& ctx, int i) {
  return i >= 0 && ctx.has_input(i) ? &ctx.input(i) : nullptr;
}
bool Declared(const KernelContext& ctx, int i) {
  return i >= 0 && i < ctx.node().input_size() && !ctx.node().input(i).empty();
}

bool IsScalarLike(const Tensor& t) { return t.size() == 1 && t.rank() <= 1; }

void CheckQuantized(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype() != TP::UINT8 && t.dtype() != TP::INT8) {
    ctx.Fail(fmt::format("{} {} must be uint8 or int8", name, t.DebugString()));
  }
}

void CheckZeroPointType(const KernelContext& ctx, const Tensor& zp, const char* zp_name,
                        const Tensor& data, const char* data_name) {
  if (zp.dtype() != data.dtype()) {
    ctx.Fail(fmt::format("{} {} must have the element type of {} {}", zp_name, zp.DebugString(),
                         data_name, data.DebugString()));
  }
}

void CheckScale(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype() != TP::FLOAT) ctx.Fail(fmt::format("{} {} must be float32", name, t.DebugString()));
}

void CheckScalar(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (!IsScalarLike(t)) {
    ctx.Fail(
        fmt::format("{} {} must be a scalar (per-tensor quantization)", name, t.DebugString()));
  }
}

// A scalar, or (m >= 0) a 1-D tensor of one value per output channel.
void CheckPerChannel(const KernelContext& ctx, const Tensor& t, const char* name, int64_t m) {
  if (IsScalarLike(t)) return;
  if (t.rank() != 1 || (m >= 0 && t.size() != m)) {
    ctx.Fail(fmt::format("{} {} must be a scalar or 1-D with one value per output channel ({})",
                         name, t.DebugString(), m >= 0 ? fmt::format("{}", m) : "M"));
  }
}

// Element i of a uint8/int8 tensor.
int32_t QuantAt(const Tensor& t, int64_t i) {
  return t.dtype() == TP::UINT8 ? t.data<uint8_t>()[i] : t.data<int8_t>()[i];
}

// A scalar zero point's value; 0 when absent.
int32_t ScalarZeroPoint(const Tensor* zp) { return zp ? QuantAt(*zp, 0) : 0; }

// float(acc) * multiplier, rounded half to even, plus the zero point, saturated to Y.
template <typename Y>
inline Y Requantize(int32_t acc, float multiplier, int32_t zp) {
  const float v = std::nearbyint(static_cast<float>(acc) * multiplier);
  const float lo = static_cast<float>(std::numeric_limits<Y>::lowest() - zp);
  const float hi = static_cast<float>(std::numeric_limits<Y>::max() - zp);
  const float c = std::isnan(v) ? 0.f : std::min(std::max(v, lo), hi);
  return static_cast<Y>(static_cast<int32_t>(c) + zp);
}

// Writes one output row from its 32-bit accumulators: int32 as is (ConvInteger, MatMulInteger),
// 8-bit requantized with multiplier[j * mult_step] (QLinearConv, QLinearMatMul).
template <typename Y>
void EmitRow(const uint32_t* acc, int64_t n, uint32_t bias, const float* multiplier,
             int64_t mult_step, int32_t zp, Y* out) {
  if constexpr (std::is_same_v<Y, int32_t>) {
    for (int64_t j = 0; j < n; ++j) out[j] = static_cast<int32_t>(acc[j] + bias);
  } else {
    for (int64_t j = 0; j < n; ++j) {
      out[j] = Requantize<Y>(static_cast<int32_t>(acc[j] + bias), multiplier[j * mult_step], zp);
    }
  }
}

// acc[i * n + j] += sum over r of lhs[i * lhs_ld + r] * rhs[r * ld + j], for i < R and j < n,
// wrapping in 32 bits. R output rows at once read each rhs row once for R outputs; a coefficient
// that is zero in all R rows (common in centred weights) is skipped.
template <int R>
PORTTOOL_ALWAYS_INLINE void AccumulateBlock(const int16_t* lhs, int64_t lhs_ld, int64_t rows,
                                            const int16_t* rhs, int64_t ld, int64_t n,
                                            uint32_t* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t a[R];
    bool any = false;
    for (int i = 0; i < R; ++i) {
      a[i] = lhs[i * lhs_ld + r];
      any |= a[i] != 0;
    }
    if (!any) continue;
    const int16_t* b = rhs + r * ld;
    if constexpr (R == 4) {
      uint32_t* __restrict y0 = acc;
      uint32_t* __restrict y1 = acc + n;
      uint32_t* __restrict y2 = acc + 2 * n;
      uint32_t* __restrict y3 = acc + 3 * n;
      for (int64_t j = 0; j < n; ++j) {
        const int32_t v = b[j];
        y0[j] += static_cast<uint32_t>(a[0] * v);
        y1[j] += static_cast<uint32_t>(a[1] * v);
        y2[j] += static_cast<uint32_t>(a[2] * v);
        y3[j] += static_cast<uint32_t>(a[3] * v);
      }
    } else {
      for (int i = 0; i < R; ++i) {
        uint32_t* __restrict y = acc + i * n;
        for (int64_t j = 0; j < n; ++j) y[j] += static_cast<uint32_t>(a[i] * b[j]);
      }
    }
  }
}

PORTTOOL_SIMD_CLONES void Accumulate4(const int16_t* lhs, int64_t lhs_ld, int64_t rows,
                                      const int16_t* rhs, int64_t ld, int64_t n, uint32_t* acc) {
  AccumulateBlock<4>(lhs, lhs_ld, rows, rhs, ld, n, acc);
}
PORTTOOL_SIMD_CLONES void Accumulate1(const int16_t* lhs, int64_t lhs_ld, int64_t rows,
                                      const int16_t* rhs, int64_t ld, int64_t n, uint32_t* acc) {
  AccumulateBlock<1>(lhs, lhs_ld, rows, rhs, ld, n, acc);
}

// `count` output rows (lhs rows lhs_ld apart, accumulators n apart), four at a time.
void AccumulateRows(const int16_t* lhs, int64_t lhs_ld, int64_t count, int64_t rows,
                    const int16_t* rhs, int64_t ld, int64_t n, uint32_t* acc) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4)
    Accumulate4(lhs + i * lhs_ld, lhs_ld, rows, rhs, ld, n, acc + i * n);
  for (; i < count; ++i) Accumulate1(lhs + i * lhs_ld, lhs_ld, rows, rhs, ld, n, acc + i * n);
}

// Calls fn(Y{}) with the output element type: int32 for the *Integer ops, the y_zero_point's type
// for the QLinear ops.
template <typename Fn>
void DispatchOutput(const KernelContext& ctx, int32_t dtype, Fn&& fn) {
  Dispatch<int32_t, uint8_t, int8_t>(ctx, dtype, fn);
}

// ---- Conv ----

// Input positions of the conv operands; -1 where the op has no such input.
struct ConvInputs {
  int x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias;
  bool qlinear() const { return y_scale >= 0; }
};
constexpr ConvInputs kQLinearConvInputs{0, 1, 2, 3, 4, 5, 6, 7, 8};
constexpr ConvInputs kConvIntegerInputs{0, -1, 2, 1, -1, 3, -1, -1, -1};

// Validates the attributes without the input's shape (so a bad value fails at plan time): the
// spatial rank comes from the weights when they are constant, else from the first list given.
// ForwardWindow repeats the checks against the real input on every run.
void CheckConvAttributes(const KernelContext& ctx, const Tensor* w) {
  ctx.AllowAttributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const std::string auto_pad = ctx.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    ctx.Fail(fmt::format(
        "attribute 'auto_pad' has value '{}'; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER",
        auto_pad));
  }
  if (auto_pad != "NOTSET" && ctx.HasAttribute("pads")) {
    ctx.Fail(fmt::format("attributes 'auto_pad' ('{}') and 'pads' cannot both be given", auto_pad));
  }
  const int64_t group = ctx.GetInt("group", 1);
  if (group < 1) ctx.Fail(fmt::format("attribute 'group' has value {}; it must be >= 1", group));
  int rank = -1;
  std::string rank_from;
  if (w != nullptr) {
    if (w->rank() < 3 || w->rank() > 2 + kMaxSpatialRank) {
      ctx.Fail(fmt::format("w {} must be [M, C/group, k1..kn] with 1 to {} spatial dims",
                           w->DebugString(), kMaxSpatialRank));
    }
    if (w->dim(0) % group != 0) {
      ctx.Fail(
          fmt::format("attribute 'group' has value {}, which does not divide the {} output "
                      "channels of w {}",
                      group, w->dim(0), w->DebugString()));
    }
    rank = w->rank() - 2;
    rank_from = "the weights";
  }
  struct PerDim {
    const char* name;
    int64_t min;
    size_t per_dim;
  };
  for (const PerDim& a : {PerDim{"kernel_shape", 1, 1}, PerDim{"strides", 1, 1},
                          PerDim{"dilations", 1, 1}, PerDim{"pads", 0, 2}}) {
    if (!ctx.HasAttribute(a.name)) continue;
    const std::vector<int64_t> v = ctx.GetInts(a.name);
    for (int64_t x : v) {
      if (x < a.min) {
        ctx.Fail(fmt::format("attribute '{}' has value {} in [{}]; each value must be >= {}",
                             a.name, x, fmt::join(v, ","), a.min));
      }
    }
    const int r = static_cast<int>(v.size() / a.per_dim);
    if (v.size() % a.per_dim != 0 || (rank >= 0 && r != rank)) {
      ctx.Fail(fmt::format("attribute '{}' has {} values; {} has {} spatial dims, so {} expected",
                           a.name, v.size(), rank_from.empty() ? "its input" : rank_from,
                           rank >= 0 ? rank : r, (rank >= 0 ? rank : r) * a.per_dim));
    }
    if (rank < 0) {
      rank = r;
      rank_from = fmt::format("attribute '{}'", a.name);
    }
  }
  if (w != nullptr && ctx.HasAttribute("kernel_shape") &&
      ctx.GetInts("kernel_shape") !=
          std::vector<int64_t>(w->shape().begin() + 2, w->shape().end())) {
    ctx.Fail(fmt::format("attribute 'kernel_shape' [{}] does not match w {}",
                         fmt::join(ctx.GetInts("kernel_shape"), ","), w->DebugString()));
  }
}

// Element types and shapes of every quantization input that is present; m is the number of
// output channels (-1 when the weights are not known yet).
void CheckConvOperands(const KernelContext& ctx, const ConvInputs& in, int64_t m) {
  const Tensor* x = Optional(ctx, in.x);
  const Tensor* w = Optional(ctx, in.w);
  if (x) CheckQuantized(ctx, *x, "x");
  if (w) CheckQuantized(ctx, *w, "w");
  if (const Tensor* t = Optional(ctx, in.x_zp)) {
    CheckQuantized(ctx, *t, "x_zero_point");
    CheckScalar(ctx, *t, "x_zero_point");
    if (x) CheckZeroPointType(ctx, *t, "x_zero_point", *x, "x");
  }
  if (const Tensor* t = Optional(ctx, in.w_zp)) {
    CheckQuantized(ctx, *t, "w_zero_point");
    CheckPerChannel(ctx, *t, "w_zero_point", m);
    if (w) CheckZeroPointType(ctx, *t, "w_zero_point", *w, "w");
  }
  if (!in.qlinear()) return;
  if (const Tensor* t = Optional(ctx, in.x_scale)) {
    CheckScale(ctx, *t, "x_scale");
    CheckScalar(ctx, *t, "x_scale");
  }
  if (const Tensor* t = Optional(ctx, in.w_scale)) {
    CheckScale(ctx, *t, "w_scale");
    CheckPerChannel(ctx, *t, "w_scale", m);
  }
  if (const Tensor* t = Optional(ctx, in.y_scale)) {
    CheckScale(ctx, *t, "y_scale");
    CheckScalar(ctx, *t, "y_scale");
  }
  if (const Tensor* t = Optional(ctx, in.y_zp)) {
    CheckQuantized(ctx, *t, "y_zero_point");
    CheckScalar(ctx, *t, "y_zero_point");
  }
  if (const Tensor* b = Optional(ctx, in.bias)) {
    if (b->dtype() != TP::INT32 || b->rank() != 1 || (m >= 0 && b->size() != m)) {
      ctx.Fail(fmt::format("B {} must be int32 and 1-D with one value per output channel ({})",
                           b->DebugString(), m >= 0 ? fmt::format("{}", m) : "M"));
    }
  }
}

// w - w_zero_point as int16: row co (C/group * kernel taps values) per output channel, rows
// `stride` apart: the row length rounded up to even, the pad 0 (Int16Gemm reads the weights two
// by two).
struct CenteredWeights {
  std::vector<int64_t> shape;
  int64_t stride = 0;
  std::vector<int16_t> values;
};

std::shared_ptr<const CenteredWeights> CenterWeights(const Tensor& w, const Tensor* w_zp) {
  auto out = std::make_shared<CenteredWeights>();
  out->shape = w.shape();
  const int64_t m = w.dim(0), row = m > 0 ? w.size() / m : 0;
  out->stride = (row + 1) / 2 * 2;
  out->values.assign(m * out->stride, 0);
  for (int64_t co = 0; co < m; ++co) {
    const int32_t zp = w_zp ? QuantAt(*w_zp, w_zp->size() == 1 ? 0 : co) : 0;
    int16_t* dst = out->values.data() + co * out->stride;
    for (int64_t j = 0; j < row; ++j) {
      dst[j] = static_cast<int16_t>(QuantAt(w, co * row + j) - zp);
    }
  }
  return out;
}

PrepareFn ConvPrepare(ConvInputs in) {
  return [in](const KernelContext& ctx) -> std::shared_ptr<const void> {
    const Tensor* w = Optional(ctx, in.w);
    CheckConvAttributes(ctx, w);
    CheckConvOperands(ctx, in, w ? w->dim(0) : -1);
    const bool zp_known = !Declared(ctx, in.w_zp) || ctx.has_input(in.w_zp);
    if (w == nullptr || !zp_known) return nullptr;
    return CenterWeights(*w, Optional(ctx, in.w_zp));
  };
}

// Fills col[r][j] (r over channels x kernel taps, j over output positions [p0, p1)) with the
// centred input value each tap reads, or 0 (the zero point, centred) in the padding. Each run is
// split where its taps leave the input, so the inside needs no bounds checks (a check per element
// made this walk cost more than the products).
template <typename X>
void Im2ColCentered(const X* x, int64_t channels, const Window3& w, int32_t zp, int64_t p0,
                    int64_t p1, int16_t* col) {
  const int64_t width = w.in[2], sw = w.strides[2];
  kernels::Im2ColRuns(
      x, channels, w, p0, p1, [&](const X* src, int64_t iw_off, int64_t ow, int64_t run) {
        const int64_t first = ow * sw + iw_off;
        const kernels::TapRange inside =
            src != nullptr ? kernels::TapsInside(first, sw, width, run) : kernels::TapRange{0, 0};
        const int64_t j_lo = inside.lo, j_hi = inside.hi;
        std::fill(col, col + j_lo, int16_t{0});
        if (sw == 1) {
          for (int64_t j = j_lo; j < j_hi; ++j) col[j] = static_cast<int16_t>(src[first + j] - zp);
        } else {
          for (int64_t j = j_lo; j < j_hi; ++j) {
            col[j] = static_cast<int16_t>(src[first + j * sw] - zp);
          }
        }
        std::fill(col + j_hi, col + run, int16_t{0});
        col += run;
      });
}

struct IntConvProblem {
  int64_t batch = 0, c_in = 0, c_out = 0, group = 1, cin_g = 0, cout_g = 0;
  Window3 w;
  int32_t x_zp = 0, y_zp = 0;
  const int16_t* weights = nullptr;  // centred, [c_out][cin_g * taps], rows `stride` apart
  int64_t stride = 0;
  const int32_t* bias = nullptr;       // nullptr when absent
  const float* multipliers = nullptr;  // per output channel (QLinearConv)
  int64_t rows() const { return cin_g * w.kernel_size(); }
};

template <typename X, typename Y>
void RunIntConv(const IntConvProblem& p, const X* x, Y* y) {
  const int64_t positions = p.w.out_size(), rows = p.rows();
  int64_t chunk =
      std::max<int64_t>(16, kQuantIm2ColChunkBytes / static_cast<int64_t>(sizeof(int16_t)) /
                                std::max<int64_t>(rows, 1) / 16 * 16);
  chunk = std::min(chunk, positions);
  const int64_t chunks = (positions + chunk - 1) / chunk;
  const bool gemm = kernels::HasInt16GemmKernel();
  ParallelFor(p.batch * p.group * chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<int16_t> col(rows * chunk);
    std::vector<uint32_t> acc((gemm ? p.cout_g : 4) * chunk);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t image = item / chunks, g = image % p.group, n = image / p.group;
      const int64_t j0 = (item % chunks) * chunk, cols = std::min(chunk, positions - j0);
      Im2ColCentered(x + (n * p.c_in + g * p.cin_g) * p.w.in_size(), p.cin_g, p.w, p.x_zp, j0,
                     j0 + cols, col.data());
      auto emit = [&](int64_t co, const uint32_t* row) {
        const uint32_t bias = p.bias ? static_cast<uint32_t>(p.bias[co]) : 0u;
        EmitRow<Y>(row, cols, bias, p.multipliers ? p.multipliers + co : nullptr, 0, p.y_zp,
                   y + (n * p.c_out + co) * positions + j0);
      };
      const int64_t co_begin = g * p.cout_g, co_end = co_begin + p.cout_g;
      if (gemm) {
        kernels::Int16Gemm(p.cout_g, cols, rows, p.weights + co_begin * p.stride, p.stride,
                           col.data(), acc.data());
        for (int64_t co = co_begin; co < co_end; ++co)
          emit(co, acc.data() + (co - co_begin) * cols);
        continue;
      }
      for (int64_t co0 = co_begin; co0 < co_end; co0 += 4) {
        const int64_t count = std::min<int64_t>(4, co_end - co0);
        std::fill(acc.begin(), acc.begin() + count * cols, 0u);
        AccumulateRows(p.weights + co0 * p.stride, p.stride, count, rows, col.data(), cols, cols,
                       acc.data());
        for (int64_t t = 0; t < count; ++t) emit(co0 + t, acc.data() + t * cols);
      }
    }
  });
}

void IntConvKernel(KernelContext& ctx, const ConvInputs& in) {
  const Tensor& x = ctx.input(in.x);
  const Tensor& wt = ctx.input(in.w);
  CheckConvAttributes(ctx, &wt);
  const int64_t m = wt.dim(0);
  CheckConvOperands(ctx, in, m);
  const std::vector<int64_t> spatial = SpatialDims(ctx, x.shape());
  if (wt.rank() != x.rank()) {
    ctx.Fail(fmt::format("w {} must have the rank of x {}", wt.DebugString(), x.DebugString()));
  }
  IntConvProblem p;
  p.batch = x.dim(0);
  p.c_in = x.dim(1);
  p.c_out = m;
  p.group = ctx.GetInt("group", 1);
  if (p.c_in % p.group != 0 || wt.dim(1) * p.group != p.c_in) {
    ctx.Fail(fmt::format("w {} does not fit x {} with group {}: C/group must be {}",
                         wt.DebugString(), x.DebugString(), p.group, p.c_in / p.group));
  }
  p.cin_g = p.c_in / p.group;
  p.cout_g = m / p.group;
  const std::vector<int64_t> kernel(wt.shape().begin() + 2, wt.shape().end());
  const Window win = ForwardWindow(ctx, spatial, kernel, false);
  p.w = To3D(win);
  std::vector<int64_t> out_shape = {p.batch, m};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());

  std::shared_ptr<const CenteredWeights> centered;
  if (const auto* prepared = ctx.prepared<CenteredWeights>();
      prepared != nullptr && prepared->shape == wt.shape()) {
    p.weights = prepared->values.data();
    p.stride = prepared->stride;
  } else {
    centered = CenterWeights(wt, Optional(ctx, in.w_zp));
    p.weights = centered->values.data();
    p.stride = centered->stride;
  }
  p.x_zp = ScalarZeroPoint(Optional(ctx, in.x_zp));
  std::vector<float> multipliers;
  int32_t out_type = TP::INT32;
  if (in.qlinear()) {
    const Tensor& y_zp = ctx.input(in.y_zp);
    out_type = y_zp.dtype();
    p.y_zp = QuantAt(y_zp, 0);
    const float xs = ctx.input(in.x_scale).data<float>()[0];
    const float ys = ctx.input(in.y_scale).data<float>()[0];
    const Tensor& ws = ctx.input(in.w_scale);
    multipliers.resize(m);
    for (int64_t c = 0; c < m; ++c) {
      multipliers[c] = xs * ws.data<float>()[ws.size() == 1 ? 0 : c] / ys;
    }
    p.multipliers = multipliers.data();
    if (const Tensor* b = Optional(ctx, in.bias)) p.bias = b->data<int32_t>();
  }
  Tensor& y = ctx.output(0) = Tensor(out_type, out_shape);
  if (y.size() == 0) return;
  Dispatch<uint8_t, int8_t>(ctx, x.dtype(), [&](auto x_tag) {
    using X = decltype(x_tag);
    DispatchOutput(ctx, out_type, [&](auto y_tag) {
      using Y = decltype(y_tag);
      RunIntConv<X, Y>(p, x.data<X>(), y.mutable_data<Y>());
    });
  });
}

// ---- MatMul ----

struct MatMulInputs {
  int a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp;
  bool qlinear() const { return y_scale >= 0; }
};
constexpr MatMulInputs kQLinearMatMulInputs{0, 1, 2, 3, 4, 5, 6, 7};
constexpr MatMulInputs kMatMulIntegerInputs{0, -1, 2, 1, -1, 3, -1, -1};

// Where a quantization parameter of A (per row) or B (per column) takes its value: element
// batch * per_batch + index * per_index, for the operand's batch matrix and its row (A) or
// column (B).
struct ParamLayout {
  int64_t per_index = 0, per_batch = 0;
  int64_t At(int64_t batch, int64_t index) const { return batch * per_batch + index * per_index; }
};

// The spec's forms: a scalar (any one-element tensor), one value per row of A / column of B
// ([M] / [N], shared by every batch matrix), or the operand's shape with the reduced dim set to
// 1 ([D1.., M, 1] / [D1.., 1, N]).
ParamLayout ResolveParam(const KernelContext& ctx, const Tensor& param, const char* name,
                         const Tensor& operand, bool is_a) {
  if (param.size() == 1) return {};
  const int r = operand.rank();
  std::vector<int64_t> per_batch_shape = operand.shape();
  if (r >= 2) {
    const int64_t len = operand.dim(is_a ? r - 2 : r - 1);
    per_batch_shape[is_a ? r - 1 : r - 2] = 1;
    if (param.rank() == 1 && param.size() == len) return {1, 0};
    if (param.shape() == per_batch_shape) return {1, len};
  }
  ctx.Fail(fmt::format("{} {} must be a scalar or hold one value per {} of {} {} ([{}] or [{}])",
                       name, param.DebugString(), is_a ? "row" : "column", is_a ? "a" : "b",
                       operand.DebugString(), r >= 2 ? operand.dim(is_a ? r - 2 : r - 1) : 1,
                       fmt::join(per_batch_shape, ",")));
}

void CheckMatMulOperands(const KernelContext& ctx, const MatMulInputs& in) {
  const Tensor* a = Optional(ctx, in.a);
  const Tensor* b = Optional(ctx, in.b);
  if (a) CheckQuantized(ctx, *a, "a");
  if (b) CheckQuantized(ctx, *b, "b");
  struct Param {
    int index;
    const char* name;
    const Tensor* operand;
    bool is_a, is_scale;
  };
  for (const Param& q : {Param{in.a_zp, "a_zero_point", a, true, false},
                         Param{in.b_zp, "b_zero_point", b, false, false},
                         Param{in.a_scale, "a_scale", a, true, true},
                         Param{in.b_scale, "b_scale", b, false, true}}) {
    const Tensor* t = Optional(ctx, q.index);
    if (t == nullptr) continue;
    if (q.is_scale) {
      CheckScale(ctx, *t, q.name);
    } else {
      CheckQuantized(ctx, *t, q.name);
      if (q.operand) CheckZeroPointType(ctx, *t, q.name, *q.operand, q.is_a ? "a" : "b");
    }
    if (q.operand) ResolveParam(ctx, *t, q.name, *q.operand, q.is_a);
  }
  if (!in.qlinear()) return;
  if (const Tensor* t = Optional(ctx, in.y_scale)) {
    CheckScale(ctx, *t, "y_scale");
    CheckScalar(ctx, *t, "y_scale");
  }
  if (const Tensor* t = Optional(ctx, in.y_zp)) {
    CheckQuantized(ctx, *t, "y_zero_point");
    CheckScalar(ctx, *t, "y_zero_point");
  }
}

// An operand minus its zero point as int16, matrix by matrix ([rows x cols] each).
std::vector<int16_t> CenterMatrices(const Tensor& t, int64_t rows, int64_t cols, const Tensor* zp,
                                    const ParamLayout& layout, bool per_row) {
  std::vector<int16_t> out(t.size());
  const int64_t matrix = rows * cols, matrices = matrix > 0 ? t.size() / matrix : 0;
  for (int64_t mtx = 0; mtx < matrices; ++mtx) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t e = mtx * matrix + i * cols + j;
        const int32_t z = zp ? QuantAt(*zp, layout.At(mtx, per_row ? i : j)) : 0;
        out[e] = static_cast<int16_t>(QuantAt(t, e) - z);
      }
    }
  }
  return out;
}

// B's rows and columns after numpy's 1-D promotion ([K] is [K, 1]).
std::pair<int64_t, int64_t> MatrixDims(const Tensor& t, bool is_a) {
  const int r = t.rank();
  if (r == 1)
    return is_a ? std::make_pair(int64_t{1}, t.dim(0)) : std::make_pair(t.dim(0), int64_t{1});
  return {t.dim(r - 2), t.dim(r - 1)};
}

// B centred at plan time when B and its zero point are constants.
struct CenteredB {
  std::vector<int64_t> shape;
  std::vector<int16_t> values;
};

PrepareFn MatMulPrepare(MatMulInputs in) {
  return [in](const KernelContext& ctx) -> std::shared_ptr<const void> {
    ctx.AllowAttributes({});
    CheckMatMulOperands(ctx, in);
    const Tensor* b = Optional(ctx, in.b);
    const bool zp_known = !Declared(ctx, in.b_zp) || ctx.has_input(in.b_zp);
    if (b == nullptr || !zp_known || b->rank() == 0) return nullptr;
    const Tensor* zp = Optional(ctx, in.b_zp);
    const auto [k, n] = MatrixDims(*b, false);
    auto out = std::make_shared<CenteredB>();
    out->shape = b->shape();
    out->values = CenterMatrices(
        *b, k, n, zp, zp ? ResolveParam(ctx, *zp, "b_zero_point", *b, false) : ParamLayout{},
        false);
    return out;
  };
}

void IntMatMulKernel(KernelContext& ctx, const MatMulInputs& in) {
  ctx.AllowAttributes({});
  const Tensor& a = ctx.input(in.a);
  const Tensor& b = ctx.input(in.b);
  CheckMatMulOperands(ctx, in);
  if (a.rank() == 0 || b.rank() == 0) {
    ctx.Fail(fmt::format("a {} and b {} must have rank >= 1", a.DebugString(), b.DebugString()));
  }
  // Plain variables, not structured bindings: lambdas below capture them, which clang 14 (the
  // sanitizer build's compiler) rejects for bindings.
  const std::pair<int64_t, int64_t> a_dims = MatrixDims(a, true), b_dims = MatrixDims(b, false);
  const int64_t m = a_dims.first, k = a_dims.second, kb = b_dims.first, n = b_dims.second;
  if (kb != k) {
    ctx.Fail(
        fmt::format("inner dimensions differ: a {} and b {}", a.DebugString(), b.DebugString()));
  }
  const std::vector<int64_t> a_batch(a.shape().begin(), a.shape().end() - std::min(a.rank(), 2));
  const std::vector<int64_t> b_batch(b.shape().begin(), b.shape().end() - std::min(b.rank(), 2));
  const std::vector<int64_t> out_batch = BroadcastBatch(ctx, a_batch, b_batch);
  std::vector<int64_t> out_shape = out_batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);

  const Tensor* a_zp = Optional(ctx, in.a_zp);
  const Tensor* b_zp = Optional(ctx, in.b_zp);
  const ParamLayout a_zp_at =
      a_zp ? ResolveParam(ctx, *a_zp, "a_zero_point", a, true) : ParamLayout{};
  const ParamLayout b_zp_at =
      b_zp ? ResolveParam(ctx, *b_zp, "b_zero_point", b, false) : ParamLayout{};
  int32_t out_type = TP::INT32, y_zp = 0;
  const float *a_scale = nullptr, *b_scale = nullptr;
  float y_scale = 1.f;
  ParamLayout a_scale_at, b_scale_at;
  if (in.qlinear()) {
    const Tensor& zp = ctx.input(in.y_zp);
    out_type = zp.dtype();
    y_zp = QuantAt(zp, 0);
    y_scale = ctx.input(in.y_scale).data<float>()[0];
    a_scale = ctx.input(in.a_scale).data<float>();
    b_scale = ctx.input(in.b_scale).data<float>();
    a_scale_at = ResolveParam(ctx, ctx.input(in.a_scale), "a_scale", a, true);
    b_scale_at = ResolveParam(ctx, ctx.input(in.b_scale), "b_scale", b, false);
  }
  Tensor& y = ctx.output(0) = Tensor(out_type, out_shape);
  if (y.size() == 0) return;

  const std::vector<int16_t> ca = CenterMatrices(a, m, k, a_zp, a_zp_at, true);
  std::vector<int16_t> cb_local;
  const int16_t* cb = nullptr;
  if (const auto* prepared = ctx.prepared<CenteredB>();
      prepared != nullptr && prepared->shape == b.shape()) {
    cb = prepared->values.data();
  } else {
    cb_local = CenterMatrices(b, k, n, b_zp, b_zp_at, false);
    cb = cb_local.data();
  }
  // Batch index of each operand for every output batch.
  const std::vector<int64_t> a_index = BatchOffsets(out_batch, a_batch, 1);
  const std::vector<int64_t> b_index = BatchOffsets(out_batch, b_batch, 1);
  const int64_t batches = static_cast<int64_t>(a_index.size());
  const int64_t threads = NumThreads();
  const int64_t row_block =
      batches >= threads ? m : std::max<int64_t>(4, (m + threads - 1) / threads);
  const int64_t blocks = (m + row_block - 1) / row_block;
  DispatchOutput(ctx, out_type, [&](auto y_tag) {
    using Y = decltype(y_tag);
    Y* py = y.mutable_data<Y>();
    ParallelFor(batches * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<uint32_t> acc(4 * n);
      std::vector<float> multipliers(a_scale ? n : 0);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t g = item / blocks, r0 = (item % blocks) * row_block;
        const int64_t r1 = std::min(m, r0 + row_block);
        const int16_t* ag = ca.data() + a_index[g] * m * k;
        const int16_t* bg = cb + b_index[g] * k * n;
        for (int64_t i0 = r0; i0 < r1; i0 += 4) {
          const int64_t count = std::min<int64_t>(4, r1 - i0);
          std::fill(acc.begin(), acc.begin() + count * n, 0u);
          AccumulateRows(ag + i0 * k, k, count, k, bg, n, n, acc.data());
          for (int64_t i = i0; i < i0 + count; ++i) {
            if (a_scale) {
              const float sa = a_scale[a_scale_at.At(a_index[g], i)];
              for (int64_t j = 0; j < n; ++j) {
                multipliers[j] = sa * b_scale[b_scale_at.At(b_index[g], j)] / y_scale;
              }
            }
            EmitRow<Y>(acc.data() + (i - i0) * n, n, 0u, multipliers.data(), 1, y_zp,
                       py + (g * m + i) * n);
          }
        }
      }
    });
  });
}

// ---- DynamicQuantizeLinear ----

// lo = min(lo, x[i]) and hi = max(hi, x[i]) over i < n, NaN skipped (it compares false). Sixteen
// lanes at a time, then the lanes: min and max are exact, so the order does not show (a scalar
// loop over 262,144 floats cost 20x ONNX Runtime's whole DynamicQuantizeLinear).
PORTTOOL_SIMD_CLONES void RangeWithZero(const float* x, int64_t n, float& lo, float& hi) {
  using kernels::V16f;
  int64_t i = 0;
  if (n >= 16) {
    V16f vlo = V16f{} + lo, vhi = V16f{} + hi;
    for (; i + 16 <= n; i += 16) {
      V16f v;
      std::memcpy(&v, x + i, sizeof v);
      vlo = v < vlo ? v : vlo;
      vhi = v > vhi ? v : vhi;
    }
    for (int j = 0; j < 16; ++j) {
      lo = vlo[j] < lo ? vlo[j] : lo;
      hi = vhi[j] > hi ? vhi[j] : hi;
    }
  }
  for (; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
}

// y = saturate(round_half_even(x / scale) + zp) over [0, 255], NaN to the zero point. A float32
// division, as the spec's reference and ONNX Runtime compute it. Saturating before rounding
// gives the same integers (the bounds are integers, and rounding is monotone), and inside
// [-255, 255] adding and subtracting 1.5 * 2^23 rounds half to even: sixteen lanes at a time
// (a scalar loop with a libm rounding call per element cost 20x ONNX Runtime's time).
PORTTOOL_ALWAYS_INLINE float QuantizeOne(float x, float scale, float q_lo, float q_hi) {
  const float v = x / scale;
  return v != v ? 0.f : std::nearbyint(std::min(std::max(v, q_lo), q_hi));
}

PORTTOOL_SIMD_CLONES void QuantizeToUint8(const float* x, int64_t n, float scale, int32_t zp,
                                          uint8_t* y) {
  using kernels::V16f;
  using V16i = int32_t __attribute__((vector_size(64)));
  using V16u8 = uint8_t __attribute__((vector_size(16)));
  const float q_lo = static_cast<float>(-zp), q_hi = static_cast<float>(255 - zp);
  const float magic = 12582912.f;  // 1.5 * 2^23
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V16f v;
    std::memcpy(&v, x + i, sizeof v);
    v = v / scale;
    v = v == v ? v : V16f{};
    v = v > q_lo ? v : q_lo;
    v = v < q_hi ? v : q_hi;
    v = (v + magic) - magic;
    const V16u8 q = __builtin_convertvector(__builtin_convertvector(v, V16i) + zp, V16u8);
    std::memcpy(y + i, &q, sizeof q);
  }
  for (; i < n; ++i) {
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(QuantizeOne(x[i], scale, q_lo, q_hi)) + zp);
  }
}

// uint8 only (the spec's T2). The range is widened to include 0; when it is empty (every input
// 0, or no input) the scale would be 0 and the zero point 0/0: like ONNX Runtime, the scale is
// then 1 and the zero point 0 (the spec's function body would give scale 0, its reference
// implementation 1/255; all agree on y = 0). NaN inputs take no part in the range and quantize to
// the zero point.
void DynamicQuantizeLinearKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  if (x.dtype() != TP::FLOAT) ctx.Fail(fmt::format("x {} must be float32", x.DebugString()));
  const float* px = x.data<float>();
  // The range by blocks over the threads, then the blocks' ranges: min and max are exact, so the
  // split does not show in the result.
  constexpr int64_t kBlock = 1 << 15;
  const int64_t blocks = (x.size() + kBlock - 1) / kBlock;
  std::vector<float> block_lo(blocks, 0.f), block_hi(blocks, 0.f);
  ParallelRows(blocks, kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      RangeWithZero(px + b * kBlock, std::min(kBlock, x.size() - b * kBlock), block_lo[b],
                    block_hi[b]);
    }
  });
  float lo = 0.f, hi = 0.f;
  RangeWithZero(block_lo.data(), blocks, lo, hi);
  RangeWithZero(block_hi.data(), blocks, lo, hi);
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  // qmin - min / scale, saturated to [0, 255] and rounded half to even. An infinite range makes
  // it NaN (inf / inf): zero point 0.
  const float zp_real = 0.f - lo / scale;
  const float zp_f = std::isnan(zp_real) ? 0.f : std::nearbyint(std::clamp(zp_real, 0.f, 255.f));
  const int32_t zp = static_cast<int32_t>(zp_f);
  Tensor y(TP::UINT8, x.shape());
  uint8_t* py = y.mutable_data<uint8_t>();
  ParallelElements(x.size(), [&](int64_t begin, int64_t end) {
    QuantizeToUint8(px + begin, end - begin, scale, zp, py + begin);
  });
  ctx.output(0) = std::move(y);
  if (ctx.output_count() > 1) {
    Tensor s(TP::FLOAT, {});
    s.mutable_data<float>()[0] = scale;
    ctx.output(1) = std::move(s);
  }
  if (ctx.output_count() > 2) {
    Tensor z(TP::UINT8, {});
    z.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    ctx.output(2) = std::move(z);
  }
}

}  // namespace

void RegisterQuantIntegerKernels(KernelRegistry& r) {
  // Every version since each op's introduction: QLinearMatMul-21 only widens the scale types
  // (float16/bfloat16 scales are rejected here by name).
  r.Register(
      "", "QLinearConv", 10, kLatest,
      [](KernelContext& ctx) { IntConvKernel(ctx, kQLinearConvInputs); },
      ConvPrepare(kQLinearConvInputs));
  r.Register(
      "", "ConvInteger", 10, kLatest,
      [](KernelContext& ctx) { IntConvKernel(ctx, kConvIntegerInputs); },
      ConvPrepare(kConvIntegerInputs));
  r.Register(
      "", "QLinearMatMul", 10, kLatest,
      [](KernelContext& ctx) { IntMatMulKernel(ctx, kQLinearMatMulInputs); },
      MatMulPrepare(kQLinearMatMulInputs));
  r.Register(
      "", "MatMulInteger", 10, kLatest,
      [](KernelContext& ctx) { IntMatMulKernel(ctx, kMatMulIntegerInputs); },
      MatMulPrepare(kMatMulIntegerInputs));
  r.Register("", "DynamicQuantizeLinear", 11, kLatest, DynamicQuantizeLinearKernel);
}

}  // namespace porttool::runtime
