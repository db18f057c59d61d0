// ONNX Runtime contrib ops (domain com.microsoft) that exported models use most: Gelu (exact,
// erf form), FastGelu (tanh approximation, optional bias along the last axis) and QuickGelu
// (x * sigmoid(alpha * x)). Formulas follow ONNX Runtime's contrib kernels.
#include <fmt/format.h>

#include <cmath>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT
constexpr const char* kMs = "com.microsoft";

template <typename F>
void MapFloat(KernelContext& ctx, const Tensor& x, F f) {
  if (x.dtype() != TP::FLOAT) FailDtype(ctx, x.dtype());
  Tensor y(TP::FLOAT, x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  ParallelElements(x.size(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(px[i], i);
  });
  ctx.output(0) = std::move(y);
}

void GeluKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  MapFloat(ctx, ctx.input(0), [](float v, int64_t) {
    return 0.5f * v * (1.0f + std::erf(v * static_cast<float>(M_SQRT1_2)));
  });
}

void FastGeluKernel(KernelContext& ctx) {
  ctx.AllowAttributes({});
  const Tensor& x = ctx.input(0);
  const float* bias = nullptr;
  int64_t bias_size = 1;
  if (ctx.has_input(1)) {
    const Tensor& b = ctx.input(1);
    if (b.rank() != 1 || x.rank() == 0 || b.size() != x.dim(x.rank() - 1)) {
      ctx.Fail(fmt::format("bias {} must be 1-D with the last dim of {}", b.DebugString(),
                           x.DebugString()));
    }
    bias = b.data<float>();
    bias_size = b.size();
  }
  MapFloat(ctx, x, [&](float v, int64_t i) {
    if (bias) v += bias[i % bias_size];
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  });
}

void QuickGeluKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"alpha"});
  float alpha = ctx.GetFloat("alpha", 1.702f);
  MapFloat(ctx, ctx.input(0),
           [alpha](float v, int64_t) { return v / (1.0f + std::exp(-alpha * v)); });
}

}  // namespace

void RegisterContribKernels(KernelRegistry& r) {
  r.Register(kMs, "Gelu", 1, 99, GeluKernel);
  r.Register(kMs, "FastGelu", 1, 99, FastGeluKernel);
  r.Register(kMs, "QuickGelu", 1, 99, QuickGeluKernel);
}

}  // namespace porttool::runtime
