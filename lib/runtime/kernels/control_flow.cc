// If, Loop and Scan: run their graph attributes through the Session (KernelContext::RunSubgraph),
// which keeps the enclosing graph's values visible to the body. Loop and Scan stack their
// per-iteration scan outputs along a new axis once the iterations are done.
#include <fmt/format.h>

#include <cstring>

#include "lib/ir/dtype.h"
#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"
#include "lib/runtime/resource_limits.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

void IfKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"then_branch", "else_branch"});
  const Tensor& cond = ctx.input(0);
  if (cond.size() != 1) ctx.Fail("condition must hold one value, got " + cond.DebugString());
  bool take_then = ReadScalar(ctx, cond) != 0;
  const char* branch = take_then ? "then_branch" : "else_branch";
  const auto* attr = ctx.Attribute(branch);
  if (attr == nullptr || !attr->has_g()) ctx.Fail(fmt::format("missing graph '{}'", branch));
  std::vector<Tensor> outs = ctx.RunSubgraph(attr->g());
  if (static_cast<int>(outs.size()) != ctx.output_count()) {
    ctx.Fail(fmt::format("{} returns {} values but the node has {} outputs", branch, outs.size(),
                         ctx.output_count()));
  }
  for (int i = 0; i < ctx.output_count(); ++i) ctx.output(i) = std::move(outs[i]);
}

const onnx::GraphProto& Body(const KernelContext& ctx) {
  const auto* attr = ctx.Attribute("body");
  if (attr == nullptr || !attr->has_g()) ctx.Fail("missing graph attribute 'body'");
  return attr->g();
}

int64_t Product(const std::vector<int64_t>& v, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= v[i];
  return p;
}

// Stacks equally shaped `slices` along a new `axis` (reversed order when `reverse`).
Tensor Stack(const KernelContext& ctx, const std::vector<Tensor>& slices, int64_t axis,
             bool reverse, const char* what) {
  if (slices.empty()) ctx.Fail(fmt::format("{}: zero iterations give no shape to stack", what));
  const Tensor& first = slices[0];
  const int a = NormalizeAxis(ctx, axis, first.rank() + 1);
  std::vector<int64_t> shape = first.shape();
  const int64_t n = static_cast<int64_t>(slices.size());
  shape.insert(shape.begin() + a, n);
  Tensor out(first.dtype(), shape);
  const int64_t outer = Product(first.shape(), 0, a);
  const int64_t inner = Product(first.shape(), a, first.rank()) * ir::DtypeSize(first.dtype());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& s = slices[reverse ? n - 1 - i : i];
    if (s.shape() != first.shape() || s.dtype() != first.dtype()) {
      ctx.Fail(fmt::format("{}: iteration {} gives {}, iteration 0 gave {}", what, i,
                           s.DebugString(), first.DebugString()));
    }
    const auto* src = static_cast<const uint8_t*>(s.raw());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + (o * n + i) * inner, src + o * inner, inner);
    }
  }
  return out;
}

// Slice `index` of `t` along `axis`, with that axis removed.
Tensor SliceAt(const Tensor& t, int axis, int64_t index) {
  std::vector<int64_t> shape = t.shape();
  const int64_t n = shape[axis];
  shape.erase(shape.begin() + axis);
  Tensor out(t.dtype(), shape);
  const int64_t outer = Product(t.shape(), 0, axis);
  const int64_t inner = Product(t.shape(), axis + 1, t.rank()) * ir::DtypeSize(t.dtype());
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * inner, src + (o * n + index) * inner, inner);
  }
  return out;
}

Tensor Scalar(int32_t dtype, int64_t value) {
  Tensor t(dtype, {});
  if (dtype == TP::BOOL) {
    t.mutable_data<bool>()[0] = value != 0;
  } else {
    t.mutable_data<int64_t>()[0] = value;
  }
  return t;
}

// Refuses a Loop that is still running after `cap` iterations (bad input, like a tensor over the
// memory limit): the message says whether the trip count or only the condition bounds it.
[[noreturn]] void FailLoopCap(KernelContext& ctx, uint64_t cap, bool has_max, int64_t max_trips) {
  const std::string bound =
      has_max ? fmt::format("trip count {}", max_trips) : std::string("no trip count");
  ctx.Fail(fmt::format(
      "loop iteration limit: still running after {} iterations ({}, condition still true)", cap,
      bound));
}

void LoopKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"body"});
  const onnx::GraphProto& body = Body(ctx);
  const int carried = ctx.input_count() - 2;
  const int scans = ctx.output_count() - carried;
  if (carried < 0 || scans < 0 || body.output_size() != 1 + carried + scans) {
    ctx.Fail(fmt::format("body has {} outputs; expected 1 + {} carried + {} scan outputs",
                         body.output_size(), std::max(carried, 0), std::max(scans, 0)));
  }
  const bool has_max = ctx.has_input(0) && ctx.input(0).size() > 0;
  const int64_t max_trips = has_max ? static_cast<int64_t>(ReadScalar(ctx, ctx.input(0))) : 0;
  bool cond =
      ctx.has_input(1) && ctx.input(1).size() > 0 ? ReadScalar(ctx, ctx.input(1)) != 0 : true;
  std::vector<Tensor> values;
  for (int i = 0; i < carried; ++i) values.push_back(ctx.input(2 + i));
  std::vector<std::vector<Tensor>> scan_slices(scans);
  const uint64_t cap = GetResourceLimits().loop_iterations;
  for (int64_t iter = 0; cond && (!has_max || iter < max_trips); ++iter) {
    if (static_cast<uint64_t>(iter) >= cap) FailLoopCap(ctx, cap, has_max, max_trips);
    std::vector<Tensor> in = {Scalar(TP::INT64, iter), Scalar(TP::BOOL, cond)};
    in.insert(in.end(), values.begin(), values.end());
    std::vector<Tensor> out = ctx.RunSubgraph(body, std::move(in));
    cond = ReadScalar(ctx, out[0]) != 0;
    for (int i = 0; i < carried; ++i) values[i] = std::move(out[1 + i]);
    for (int k = 0; k < scans; ++k) scan_slices[k].push_back(std::move(out[1 + carried + k]));
  }
  for (int i = 0; i < carried; ++i) ctx.output(i) = std::move(values[i]);
  for (int k = 0; k < scans; ++k) {
    if (!ctx.wants_output(carried + k)) continue;
    ctx.output(carried + k) = Stack(ctx, scan_slices[k], 0, false, "scan output");
  }
}

void ScanKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                       "scan_output_axes", "scan_output_directions"});
  const onnx::GraphProto& body = Body(ctx);
  const int m = static_cast<int>(ctx.GetInt("num_scan_inputs", 0));
  const int states = ctx.input_count() - m;
  const int scans = ctx.output_count() - states;
  if (m < 1 || states < 0 || scans < 0) {
    ctx.Fail(fmt::format("num_scan_inputs {} does not fit {} inputs and {} outputs", m,
                         ctx.input_count(), ctx.output_count()));
  }
  auto per = [&](const char* name, int count) {
    auto v = ctx.GetInts(name, std::vector<int64_t>(count, 0));
    if (static_cast<int>(v.size()) != count) {
      ctx.Fail(fmt::format("attribute '{}' needs {} values, got {}", name, count, v.size()));
    }
    return v;
  };
  const auto in_axes = per("scan_input_axes", m), in_dirs = per("scan_input_directions", m);
  const auto out_axes = per("scan_output_axes", scans);
  const auto out_dirs = per("scan_output_directions", scans);
  int64_t length = -1;
  std::vector<int> axes(m);
  for (int j = 0; j < m; ++j) {
    const Tensor& x = ctx.input(states + j);
    axes[j] = NormalizeAxis(ctx, in_axes[j], x.rank());
    if (length >= 0 && x.dim(axes[j]) != length) ctx.Fail("scan inputs differ in length");
    length = x.dim(axes[j]);
  }
  std::vector<Tensor> values;
  for (int i = 0; i < states; ++i) values.push_back(ctx.input(i));
  std::vector<std::vector<Tensor>> slices(scans);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> in = values;
    for (int j = 0; j < m; ++j) {
      in.push_back(SliceAt(ctx.input(states + j), axes[j], in_dirs[j] ? length - 1 - t : t));
    }
    std::vector<Tensor> out = ctx.RunSubgraph(body, std::move(in));
    if (static_cast<int>(out.size()) != states + scans) ctx.Fail("body output count mismatch");
    for (int i = 0; i < states; ++i) values[i] = std::move(out[i]);
    for (int k = 0; k < scans; ++k) slices[k].push_back(std::move(out[states + k]));
  }
  for (int i = 0; i < states; ++i) ctx.output(i) = std::move(values[i]);
  for (int k = 0; k < scans; ++k) {
    ctx.output(states + k) = Stack(ctx, slices[k], out_axes[k], out_dirs[k] != 0, "scan output");
  }
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  r.Register("", "If", 1, 99, IfKernel);
  r.Register("", "Loop", 1, 99, LoopKernel);
  // Scan-8 had a batch axis and sequence_lens; models from opset 9 on use this form.
  r.Register("", "Scan", 9, 99, ScanKernel);
}

}  // namespace porttool::runtime
