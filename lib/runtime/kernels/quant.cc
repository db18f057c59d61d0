// QuantizeLinear / DequantizeLinear, per-tensor (scalar scale) and per-axis (1-D scale along
// `axis`, opset 13+). Quantization rounds half to even and saturates, as the ONNX spec requires.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

// Element i of x uses scale/zero-point index (i / inner) % channels.
struct QuantLayout {
  int64_t channels = 1, inner = 1;
};

QuantLayout PlanQuant(KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  QuantLayout q;
  if (scale.size() == 1 && scale.rank() <= 1) return q;
  // com.microsoft's versions (what QDQ models below opset 10 use) take an axis at any opset.
  bool axis_allowed = ctx.opset() >= 13 || ctx.node().domain() == "com.microsoft";
  if (!axis_allowed || scale.rank() != 1) {
    ctx.Fail(fmt::format("scale must be a scalar{}; got {}",
                         axis_allowed ? " or 1-D" : " before opset 13", scale.DebugString()));
  }
  int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 1), x.rank());
  if (scale.size() != x.dim(axis)) {
    ctx.Fail(fmt::format("per-axis scale has {} values but axis {} of the input has {}",
                         scale.size(), axis, x.dim(axis)));
  }
  q.channels = scale.size();
  for (int d = axis + 1; d < x.rank(); ++d) q.inner *= x.dim(d);
  return q;
}

void CheckZeroPoint(KernelContext& ctx, const Tensor& scale, const Tensor& zp) {
  if (zp.size() != scale.size()) {
    ctx.Fail(fmt::format("zero point {} does not match scale {}", zp.DebugString(),
                         scale.DebugString()));
  }
}

// int16/uint16 are QuantizeLinear/DequantizeLinear types from opset 21 (com.microsoft's at any
// version: what ONNX Runtime runs for A16W8 below opset 21).
void CheckWideType(KernelContext& ctx, int32_t type) {
  if ((type == TP::INT16 || type == TP::UINT16) && ctx.node().domain() != "com.microsoft" &&
      ctx.opset() < 21) {
    ctx.Fail(
        fmt::format("{} quantization needs opset 21 (or the com.microsoft domain); the model "
                    "imports opset {}",
                    type == TP::INT16 ? "int16" : "uint16", ctx.opset()));
  }
}

void QuantizeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis", "saturate"});
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  bool has_zp = ctx.has_input(2);
  int32_t out_type = has_zp ? ctx.input(2).dtype() : TP::UINT8;
  if (has_zp) CheckZeroPoint(ctx, scale, ctx.input(2));
  CheckWideType(ctx, out_type);
  if (scale.dtype() != TP::FLOAT) ctx.Fail("scale must be float32");
  QuantLayout q = PlanQuant(ctx, x, scale);
  Tensor out(out_type, x.shape());
  auto run = [&](auto out_tag, auto in_tag) {
    using Q = decltype(out_tag);
    using X = decltype(in_tag);
    const X* px = x.data<X>();
    const float* ps = scale.data<float>();
    const Q* pz = has_zp ? ctx.input(2).data<Q>() : nullptr;
    Q* po = out.mutable_data<Q>();
    constexpr double lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t c = (i / q.inner) % q.channels;
      // float32 division, as the reference implementations do: double would round
      // differently at exact .5 boundaries.
      double r = std::nearbyint(static_cast<float>(px[i]) / ps[c]);
      // NaN (0/0, a NaN input) would survive the clamp and its cast to Q is undefined
      // (found by fuzz_executor): it quantizes to the zero point.
      double v = (std::isnan(r) ? 0.0 : r) + (pz ? pz[c] : 0);
      po[i] = static_cast<Q>(std::clamp(v, lo, hi));
    }
  };
  auto with_output = [&](auto in_tag) {
    Dispatch<uint8_t, int8_t, uint16_t, int16_t>(ctx, out_type,
                                                 [&](auto out_tag) { run(out_tag, in_tag); });
  };
  Dispatch<float, int32_t>(ctx, x.dtype(), with_output);
  ctx.output(0) = std::move(out);
}

void DequantizeKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis"});
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  bool has_zp = ctx.has_input(2);
  if (has_zp) {
    CheckZeroPoint(ctx, scale, ctx.input(2));
    if (ctx.input(2).dtype() != x.dtype()) ctx.Fail("zero point type differs from the input's");
  }
  CheckWideType(ctx, x.dtype());
  if (scale.dtype() != TP::FLOAT) ctx.Fail("scale must be float32");
  QuantLayout q = PlanQuant(ctx, x, scale);
  Tensor out(TP::FLOAT, x.shape());
  auto run = [&](auto tag) {
    using Q = decltype(tag);
    const Q* px = x.data<Q>();
    const float* ps = scale.data<float>();
    const Q* pz = has_zp ? ctx.input(2).data<Q>() : nullptr;
    float* po = out.mutable_data<float>();
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t c = (i / q.inner) % q.channels;
      po[i] = static_cast<float>(static_cast<int64_t>(px[i]) - (pz ? pz[c] : 0)) * ps[c];
    }
  };
  Dispatch<uint8_t, int8_t, uint16_t, int16_t, int32_t>(ctx, x.dtype(), run);
  ctx.output(0) = std::move(out);
}

}  // namespace

void RegisterQuantKernels(KernelRegistry& r) {
  r.Register("", "QuantizeLinear", 10, kLatest, QuantizeKernel);
  r.Register("", "DequantizeLinear", 10, kLatest, DequantizeKernel);
  r.Register("com.microsoft", "QuantizeLinear", 1, kLatest, QuantizeKernel);
  r.Register("com.microsoft", "DequantizeLinear", 1, kLatest, DequantizeKernel);
}

}  // namespace porttool::runtime
