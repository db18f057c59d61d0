// BatchNormalization (inference), LayerNormalization and InstanceNormalization. Statistics are
// accumulated in double so long rows (layer norm over thousands of features) stay accurate.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "lib/runtime/kernel.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using kernels::TP;
using kernels::V8f;

void CheckSize(const KernelContext& ctx, const Tensor& t, const char* what, int64_t expected) {
  if (t.size() != expected) {
    ctx.Fail(fmt::format("{} {} must have {} values", what, t.DebugString(), expected));
  }
}

// Mean and 1/sqrt(variance + epsilon) of n values.
template <typename T>
void Moments(const T* x, int64_t n, double epsilon, double& mean, double& inv_std) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  mean = n ? sum / n : 0;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  inv_std = 1.0 / std::sqrt((n ? sq / n : 0) + epsilon);
}

using V8d = double __attribute__((vector_size(64)));

// One float row of LayerNormalization, 8 lanes at a time: the moments summed in double lanes
// (the sequential double sums could not vectorise: a transformer block's LayerNorms ran at 2.5x
// ONNX Runtime's time), the centring and scaling in double as in the scalar path, then the
// float affine.
PORTTOOL_SIMD_CLONES void LayerNormRowFloat(const float* in, float* out, int64_t n,
                                            const float* scale, const float* bias, double epsilon,
                                            double& mean, double& inv_std) {
  auto load = [](const float* p) PORTTOOL_ALWAYS_INLINE_LAMBDA {
    V8f v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, V8d);
  };
  const int64_t whole = n / 8 * 8;
  V8d sum8{};
  for (int64_t i = 0; i < whole; i += 8) sum8 += load(in + i);
  double sum = 0;
  for (int j = 0; j < 8; ++j) sum += sum8[j];
  for (int64_t i = whole; i < n; ++i) sum += in[i];
  mean = n ? sum / n : 0;
  V8d sq8{};
  for (int64_t i = 0; i < whole; i += 8) {
    const V8d d = load(in + i) - mean;
    sq8 += d * d;
  }
  double sq = 0;
  for (int j = 0; j < 8; ++j) sq += sq8[j];
  for (int64_t i = whole; i < n; ++i) sq += (in[i] - mean) * (in[i] - mean);
  inv_std = 1.0 / std::sqrt((n ? sq / n : 0) + epsilon);
  for (int64_t i = 0; i < whole; i += 8) {
    const V8f normed = __builtin_convertvector((load(in + i) - mean) * inv_std, V8f);
    V8f s, b;
    std::memcpy(&s, scale + i, sizeof s);
    std::memcpy(&b, bias + i, sizeof b);
    const V8f v = normed * s + b;
    std::memcpy(out + i, &v, sizeof v);
  }
  for (int64_t i = whole; i < n; ++i) {
    out[i] = static_cast<float>((in[i] - mean) * inv_std) * scale[i] + bias[i];
  }
}

void BatchNormKernel(KernelContext& ctx) {
  ctx.AllowAttributes(
      {"epsilon", "momentum", "spatial", "training_mode", "is_test", "consumed_inputs"});
  // momentum only updates running statistics in training; inference ignores it by definition.
  if (ctx.GetInt("training_mode", 0) != 0) {
    ctx.Fail("training_mode=1 is not supported: the executor runs inference only");
  }
  for (int i = 1; i < ctx.output_count(); ++i) {
    if (ctx.wants_output(i)) {
      ctx.Fail(
          "the running/saved mean and variance outputs exist only in training mode, which "
          "the executor does not support; remove them from the node");
    }
  }
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.Fail(fmt::format("input {} must be [N, C, ...]", x.DebugString()));
  // spatial=0 (opset 7-8): one statistic per (C, spatial...) element instead of per channel.
  const bool spatial = ctx.GetInt("spatial", 1) != 0;
  const int64_t batch = x.dim(0);
  const int64_t per_item = batch ? x.size() / batch : 0;
  const int64_t channels = spatial ? x.dim(1) : per_item;
  const int64_t inner = spatial ? (x.dim(1) ? per_item / x.dim(1) : 0) : 1;
  const double epsilon = ctx.GetFloat("epsilon", 1e-5f);
  Tensor& y = ctx.output(0) = Tensor::Uninitialized(x.dtype(), x.shape());
  kernels::DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const char* names[] = {"scale", "B", "mean", "var"};
    const T* p[4];
    for (int i = 0; i < 4; ++i) {
      const Tensor& t = ctx.input(i + 1);
      if (t.dtype() != x.dtype()) ctx.Fail(fmt::format("{} must have the input's type", names[i]));
      CheckSize(ctx, t, names[i], channels);
      p[i] = t.data<T>();
    }
    // y = x * a + b per channel, folded once.
    std::vector<T> a(channels), b(channels);
    for (int64_t c = 0; c < channels; ++c) {
      a[c] = static_cast<T>(p[0][c] / std::sqrt(static_cast<double>(p[3][c]) + epsilon));
      b[c] = p[1][c] - p[2][c] * a[c];
    }
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    kernels::ParallelRows(batch * channels, inner, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T ac = a[r % channels], bc = b[r % channels];
        const T* in = px + r * inner;
        T* out = py + r * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] = in[i] * ac + bc;
      }
    });
  });
}

// Expands `t` (unidirectionally broadcastable to `shape`) to a dense vector of shape's size.
template <typename T>
std::vector<T> ExpandTo(const KernelContext& ctx, const Tensor& t,
                        const std::vector<int64_t>& shape, const char* what) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<T> out(total);
  if (t.rank() > static_cast<int>(shape.size())) {
    ctx.Fail(
        fmt::format("{} {} has a higher rank than the normalized dims", what, t.DebugString()));
  }
  const size_t shift = shape.size() - t.rank();
  for (int i = 0; i < t.rank(); ++i) {
    if (t.dim(i) != 1 && t.dim(i) != shape[shift + i]) {
      ctx.Fail(
          fmt::format("{} {} cannot be broadcast to the normalized dims", what, t.DebugString()));
    }
  }
  const T* src = t.data<T>();
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t off = 0;
    for (int i = 0; i < t.rank(); ++i)
      off = off * t.dim(i) + (t.dim(i) == 1 ? 0 : index[shift + i]);
    out[e] = src[off];
    for (size_t i = shape.size(); i-- > 0;) {
      if (++index[i] < shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

// LayerNormalization's Mean / InvStdDev outputs: float32 (stash_type 1) whatever the input type.
float* OptionalStat(KernelContext& ctx, int index, const std::vector<int64_t>& shape) {
  if (ctx.output_count() <= index || !ctx.wants_output(index)) return nullptr;
  return (ctx.output(index) = Tensor(TP::FLOAT, shape)).mutable_data<float>();
}

void LayerNormKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis", "epsilon", "stash_type"});
  const Tensor& x = ctx.input(0);
  const int axis = kernels::NormalizeAxis(ctx, ctx.GetInt("axis", -1), x.rank());
  const int64_t stash = ctx.GetInt("stash_type", 1);
  if (stash != 1) {
    ctx.Fail(fmt::format("stash_type {} is not supported (only 1: float32 statistics)", stash));
  }
  const double epsilon = ctx.GetFloat("epsilon", 1e-5f);
  const std::vector<int64_t> norm_shape(x.shape().begin() + axis, x.shape().end());
  int64_t inner = 1;
  for (int64_t d : norm_shape) inner *= d;
  const int64_t rows = inner ? x.size() / inner : 0;
  std::vector<int64_t> stat_shape = x.shape();
  for (size_t i = axis; i < stat_shape.size(); ++i) stat_shape[i] = 1;
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), x.shape());
  float* mean_out = OptionalStat(ctx, 1, stat_shape);
  float* inv_out = OptionalStat(ctx, 2, stat_shape);
  kernels::DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> scale = ExpandTo<T>(ctx, ctx.input(1), norm_shape, "Scale");
    const std::vector<T> bias = ctx.has_input(2) ? ExpandTo<T>(ctx, ctx.input(2), norm_shape, "B")
                                                 : std::vector<T>(inner, T(0));
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    // Two passes over each row (moments, then normalise): twice an elementwise op's work.
    kernels::ParallelRows(rows, 2 * inner, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        double mean, inv_std;
        const T* in = px + r * inner;
        T* out = py + r * inner;
        if constexpr (std::is_same_v<T, float>) {
          LayerNormRowFloat(in, out, inner, scale.data(), bias.data(), epsilon, mean, inv_std);
        } else {
          Moments(in, inner, epsilon, mean, inv_std);
          for (int64_t i = 0; i < inner; ++i) {
            out[i] = static_cast<T>((in[i] - mean) * inv_std) * scale[i] + bias[i];
          }
        }
        if (mean_out) mean_out[r] = static_cast<float>(mean);
        if (inv_out) inv_out[r] = static_cast<float>(inv_std);
      }
    });
  });
}

void InstanceNormKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"epsilon"});
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.Fail(fmt::format("input {} must be [N, C, spatial...]", x.DebugString()));
  const int64_t channels = x.dim(1);
  const int64_t planes = x.dim(0) * channels;
  const int64_t inner = planes ? x.size() / planes : 0;
  const double epsilon = ctx.GetFloat("epsilon", 1e-5f);
  Tensor& y = ctx.output(0) = Tensor(x.dtype(), x.shape());
  kernels::DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    CheckSize(ctx, ctx.input(1), "scale", channels);
    CheckSize(ctx, ctx.input(2), "B", channels);
    const T* scale = ctx.input(1).data<T>();
    const T* bias = ctx.input(2).data<T>();
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    kernels::ParallelRows(planes, 2 * inner, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        double mean, inv_std;
        Moments(px + p * inner, inner, epsilon, mean, inv_std);
        const double a = scale[p % channels] * inv_std;
        const double b = bias[p % channels] - mean * a;
        for (int64_t i = 0; i < inner; ++i)
          py[p * inner + i] = static_cast<T>(px[p * inner + i] * a + b);
      }
    });
  });
}

}  // namespace

void RegisterNormKernels(KernelRegistry& r) {
  r.Register("", "BatchNormalization", 1, 17, BatchNormKernel);
  r.Register("", "LayerNormalization", 17, 17, LayerNormKernel);
  r.Register("", "InstanceNormalization", 1, 17, InstanceNormKernel);
}

}  // namespace porttool::runtime
