// Less common math kernels: Shrink, BitShift, Det, MeanVarianceNormalization and LRN. Statistics
// and determinants accumulate in double so float inputs keep full precision.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

void ShrinkKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"bias", "lambd"});
  const double bias = ctx.GetFloat("bias", 0.0f), lambd = ctx.GetFloat("lambd", 0.5f);
  const Tensor& x = ctx.input(0);
  Tensor out(x.dtype(), x.shape());
  DispatchNumeric(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    for (int64_t i = 0; i < x.size(); ++i) {
      const double v = static_cast<double>(src[i]);
      dst[i] = static_cast<T>(v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
  });
  ctx.output(0) = std::move(out);
}

void BitShiftKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"direction"});
  const std::string direction = ctx.GetString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    ctx.Fail(fmt::format("direction '{}' must be LEFT or RIGHT", direction));
  }
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.Fail("both inputs must have the same element type");
  Tensor out(a.dtype(), BroadcastShape(ctx, {&a, &b}));
  const bool left = direction == "LEFT";
  auto run = [&](auto tag) {
    using T = decltype(tag);
    constexpr T kBits = sizeof(T) * 8;
    // Shifting by the type's width or more is undefined in C++; ONNX Runtime yields 0.
    BinaryBroadcast<T, T, T>(a, b, out, [left](T x, T s) -> T {
      if (s >= kBits) return 0;
      return left ? static_cast<T>(x << s) : static_cast<T>(x >> s);
    });
  };
  Dispatch<uint8_t, uint16_t, uint32_t, uint64_t>(ctx, a.dtype(), run);
  ctx.output(0) = std::move(out);
}

// Determinant of an n x n row-major matrix by LU decomposition with partial pivoting.
double Determinant(std::vector<double> m, int64_t n) {
  double det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r) {
      if (std::abs(m[r * n + c]) > std::abs(m[pivot * n + c])) pivot = r;
    }
    if (m[pivot * n + c] == 0) return 0;
    if (pivot != c) {
      for (int64_t k = 0; k < n; ++k) std::swap(m[c * n + k], m[pivot * n + k]);
      det = -det;
    }
    det *= m[c * n + c];
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = m[r * n + c] / m[c * n + c];
      for (int64_t k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
    }
  }
  return det;
}

void DetKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  if (r < 2 || x.dim(r - 1) != x.dim(r - 2)) {
    ctx.Fail(fmt::format("input {} must be [*, M, M]", x.DebugString()));
  }
  const int64_t n = x.dim(r - 1);
  Tensor out(x.dtype(), {x.shape().begin(), x.shape().end() - 2});
  DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < out.size(); ++b) {
      const T* m = x.data<T>() + b * n * n;
      out.mutable_data<T>()[b] = static_cast<T>(Determinant({m, m + n * n}, n));
    }
  });
  ctx.output(0) = std::move(out);
}

void MeanVarianceNormalizationKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axes"});
  const Tensor& x = ctx.input(0);
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : ctx.GetInts("axes", {0, 2, 3})) reduced[NormalizeAxis(ctx, a, x.rank())] = true;
  // Group elements by their coordinates on the kept axes.
  const auto strides = RowMajorStrides(x.shape());
  std::vector<int64_t> group(x.size());
  int64_t groups = 1;
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t g = 0;
    for (int d = 0; d < x.rank(); ++d) {
      if (!reduced[d]) g = g * x.dim(d) + i / strides[d] % x.dim(d);
    }
    group[i] = g;
  }
  for (int d = 0; d < x.rank(); ++d) groups *= reduced[d] ? 1 : x.dim(d);
  Tensor out(x.dtype(), x.shape());
  DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    std::vector<double> sum(groups), sq(groups), count(groups);
    for (int64_t i = 0; i < x.size(); ++i) {
      sum[group[i]] += src[i];
      sq[group[i]] += double(src[i]) * src[i];
      count[group[i]] += 1;
    }
    // The ONNX function body: (X - E[X]) / sqrt(E[X^2] - E[X]^2 + 1e-9).
    for (int64_t i = 0; i < x.size(); ++i) {
      const int64_t g = group[i];
      const double mean = sum[g] / count[g];
      const double var = sq[g] / count[g] - mean * mean;
      out.mutable_data<T>()[i] = static_cast<T>((src[i] - mean) / std::sqrt(var + 1e-9));
    }
  });
  ctx.output(0) = std::move(out);
}

void LrnKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"alpha", "beta", "bias", "size"});
  const Tensor& x = ctx.input(0);
  if (!ctx.HasAttribute("size") || ctx.GetInt("size", 0) < 1) ctx.Fail("size must be >= 1");
  if (x.rank() < 3) ctx.Fail(fmt::format("input {} must be [N, C, D1, ...]", x.DebugString()));
  const int64_t size = ctx.GetInt("size", 1);
  const double alpha = ctx.GetFloat("alpha", 1e-4f), beta = ctx.GetFloat("beta", 0.75f);
  const double bias = ctx.GetFloat("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.size() / std::max<int64_t>(n * c, 1);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor out(x.dtype(), x.shape());
  DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after);
               ++k) {
            const double v = src[(b * c + k) * inner + i];
            sq += v * v;
          }
          const int64_t at = (b * c + ch) * inner + i;
          dst[at] = static_cast<T>(src[at] / std::pow(bias + alpha / size * sq, beta));
        }
      }
    }
  });
  ctx.output(0) = std::move(out);
}

}  // namespace

void RegisterMathKernels(KernelRegistry& r) {
  r.Register("", "Shrink", 9, kLatest, ShrinkKernel);
  r.Register("", "BitShift", 11, kLatest, BitShiftKernel);
  r.Register("", "Det", 11, kLatest, DetKernel);
  r.Register("", "MeanVarianceNormalization", 9, kLatest, MeanVarianceNormalizationKernel);
  r.Register("", "LRN", 1, kLatest, LrnKernel);
}

}  // namespace porttool::runtime
