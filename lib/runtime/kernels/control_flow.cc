// If, Loop and Scan: run their graph attributes through the Session (KernelContext::RunSubgraph),
// which keeps the enclosing graph's values visible to the body. Loop and Scan stack their
// per-iteration scan outputs along a new axis once the iterations are done. Scan-8 (leading batch
// axis, optional sequence_lens) runs the opset-9 loop once per batch entry.
#include <fmt/format.h>

#include <cstring>
#include <utility>
#include <vector>

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
  const int64_t max_trips = has_max ? ReadIntScalar(ctx, ctx.input(0), "the trip count") : 0;
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

// A per-scan-input or per-scan-output list attribute: `count` values, all 0 when absent.
std::vector<int64_t> ScanListAttribute(const KernelContext& ctx, const char* name, int count) {
  auto v = ctx.GetInts(name, std::vector<int64_t>(count, 0));
  if (static_cast<int>(v.size()) != count) {
    ctx.Fail(fmt::format("attribute '{}' needs {} values, got {}", name, count, v.size()));
  }
  return v;
}

// The counts of loop states and scan outputs that num_scan_inputs leaves for `variadic_inputs`.
std::pair<int, int> ScanArity(const KernelContext& ctx, int num_scan_inputs, int variadic_inputs) {
  const int states = variadic_inputs - num_scan_inputs;
  const int scans = ctx.output_count() - states;
  if (num_scan_inputs < 1 || states < 0 || scans < 0) {
    ctx.Fail(fmt::format("num_scan_inputs {} does not fit {} inputs and {} outputs",
                         num_scan_inputs, variadic_inputs, ctx.output_count()));
  }
  return {states, scans};
}

// What one scan leaves: the final loop states and, per scan output, one value per iteration.
struct ScanResult {
  std::vector<Tensor> states;
  std::vector<std::vector<Tensor>> slices;
};

// The loop both Scan forms share: `length` runs of the body over the loop states and the slices
// of every scan input along its axis (from the end when its direction is 1).
ScanResult IterateScan(const KernelContext& ctx, const onnx::GraphProto& body,
                       std::vector<Tensor> states, const std::vector<const Tensor*>& inputs,
                       const std::vector<int>& axes, const std::vector<int64_t>& reverse,
                       int64_t length, int scans) {
  const int state_count = static_cast<int>(states.size());
  ScanResult result{std::move(states), std::vector<std::vector<Tensor>>(scans)};
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> in = result.states;
    for (size_t j = 0; j < inputs.size(); ++j) {
      in.push_back(SliceAt(*inputs[j], axes[j], reverse[j] ? length - 1 - t : t));
    }
    std::vector<Tensor> out = ctx.RunSubgraph(body, std::move(in));
    if (static_cast<int>(out.size()) != state_count + scans) {
      ctx.Fail("body output count mismatch");
    }
    for (int i = 0; i < state_count; ++i) result.states[i] = std::move(out[i]);
    for (int k = 0; k < scans; ++k) result.slices[k].push_back(std::move(out[state_count + k]));
  }
  return result;
}

// Zero iterations: the scan outputs are empty, shaped as one iteration's output stacked 0 times.
// The body runs once on zero-filled slices for that shape alone (an ONNX graph has no side
// effects); the final states stay the initial ones.
std::vector<Tensor> EmptyScanOutputs(const KernelContext& ctx, const onnx::GraphProto& body,
                                     const std::vector<Tensor>& states,
                                     const std::vector<const Tensor*>& inputs,
                                     const std::vector<int>& axes,
                                     const std::vector<int64_t>& out_axes) {
  std::vector<Tensor> probe = states;
  for (size_t j = 0; j < inputs.size(); ++j) {
    std::vector<int64_t> slice = inputs[j]->shape();
    slice.erase(slice.begin() + axes[j]);
    probe.emplace_back(inputs[j]->dtype(), slice);
  }
  std::vector<Tensor> out = ctx.RunSubgraph(body, std::move(probe));
  if (out.size() != states.size() + out_axes.size()) ctx.Fail("body output count mismatch");
  std::vector<Tensor> empty;
  for (size_t k = 0; k < out_axes.size(); ++k) {
    const Tensor& one = out[states.size() + k];
    std::vector<int64_t> shape = one.shape();
    shape.insert(shape.begin() + NormalizeAxis(ctx, out_axes[k], one.rank() + 1), 0);
    empty.emplace_back(one.dtype(), shape);
  }
  return empty;
}

// Scan-9 and later: inputs are [states..., scan inputs...], each scan input iterated along its
// scan_input_axes entry; no batch axis.
void ScanKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                       "scan_output_axes", "scan_output_directions"});
  const onnx::GraphProto& body = Body(ctx);
  const int m = static_cast<int>(ctx.GetInt("num_scan_inputs", 0));
  const auto [states, scans] = ScanArity(ctx, m, ctx.input_count());
  const auto in_axes = ScanListAttribute(ctx, "scan_input_axes", m);
  const auto in_dirs = ScanListAttribute(ctx, "scan_input_directions", m);
  const auto out_axes = ScanListAttribute(ctx, "scan_output_axes", scans);
  const auto out_dirs = ScanListAttribute(ctx, "scan_output_directions", scans);
  int64_t length = -1;
  std::vector<int> axes(m);
  std::vector<const Tensor*> inputs;
  for (int j = 0; j < m; ++j) {
    const Tensor& x = ctx.input(states + j);
    axes[j] = NormalizeAxis(ctx, in_axes[j], x.rank());
    if (length >= 0 && x.dim(axes[j]) != length) ctx.Fail("scan inputs differ in length");
    length = x.dim(axes[j]);
    inputs.push_back(&x);
  }
  std::vector<Tensor> initial;
  for (int i = 0; i < states; ++i) initial.push_back(ctx.input(i));
  if (length == 0) {
    std::vector<Tensor> empty = EmptyScanOutputs(ctx, body, initial, inputs, axes, out_axes);
    for (int i = 0; i < states; ++i) ctx.output(i) = std::move(initial[i]);
    for (int k = 0; k < scans; ++k) ctx.output(states + k) = std::move(empty[k]);
    return;
  }
  ScanResult run = IterateScan(ctx, body, std::move(initial), inputs, axes, in_dirs, length, scans);
  for (int i = 0; i < states; ++i) ctx.output(i) = std::move(run.states[i]);
  for (int k = 0; k < scans; ++k) {
    ctx.output(states + k) =
        Stack(ctx, run.slices[k], out_axes[k], out_dirs[k] != 0, "scan output");
  }
}

// Scan-8's batch and sequence sizes: every variadic input is [batch, ...], every scan input
// [batch, max_seq_len, ...].
struct Scan8Shape {
  int64_t batch = -1;
  int64_t max_seq_len = -1;
};

Scan8Shape Scan8Dims(const KernelContext& ctx, int states, int m) {
  Scan8Shape s;
  for (int i = 0; i < states + m; ++i) {
    const Tensor& x = ctx.input(1 + i);
    const bool is_scan_input = i >= states;
    if (x.rank() < (is_scan_input ? 2 : 1)) {
      ctx.Fail(fmt::format("{} {} has no {}", is_scan_input ? "scan input" : "loop state",
                           x.DebugString(),
                           is_scan_input ? "[batch, sequence] leading axes" : "batch axis"));
    }
    if (s.batch >= 0 && x.dim(0) != s.batch) {
      ctx.Fail(fmt::format("input {} has batch size {}, an earlier input {}", x.DebugString(),
                           x.dim(0), s.batch));
    }
    s.batch = x.dim(0);
    if (!is_scan_input) continue;
    if (s.max_seq_len >= 0 && x.dim(1) != s.max_seq_len) ctx.Fail("scan inputs differ in length");
    s.max_seq_len = x.dim(1);
  }
  if (s.batch == 0) ctx.Fail("the batch is empty (dim 0 of the inputs is 0)");
  return s;
}

// Each batch entry's iteration count: sequence_lens, or every sequence's full length when that
// input is absent. Like ONNX Runtime, a length must be in [1, max_seq_len].
std::vector<int64_t> Scan8SequenceLengths(const KernelContext& ctx, const Scan8Shape& s) {
  if (!ctx.has_input(0)) return std::vector<int64_t>(static_cast<size_t>(s.batch), s.max_seq_len);
  std::vector<int64_t> lengths = ReadInts(ctx, ctx.input(0));
  if (static_cast<int64_t>(lengths.size()) != s.batch) {
    ctx.Fail(fmt::format("sequence_lens has {} values for a batch of {}", lengths.size(), s.batch));
  }
  for (int64_t n : lengths) {
    if (n < 1 || n > s.max_seq_len) {
      ctx.Fail(fmt::format("sequence_lens value {} is not in [1, {}]", n, s.max_seq_len));
    }
  }
  return lengths;
}

// Scan-8: inputs are [sequence_lens (optional), states..., scan inputs...] with a leading batch
// axis on every variadic input and output. Each batch entry is scanned on its own along the
// sequence axis for its sequence length; scan outputs shorter than max_seq_len are padded with
// zeros, as ONNX Runtime does. A reversed input starts at its entry's last valid element.
void Scan8Kernel(KernelContext& ctx) {
  ctx.AllowAttributes({"body", "directions", "num_scan_inputs"});
  const onnx::GraphProto& body = Body(ctx);
  const int m = static_cast<int>(ctx.GetInt("num_scan_inputs", 0));
  const auto [states, scans] = ScanArity(ctx, m, ctx.input_count() - 1);
  const auto directions = ScanListAttribute(ctx, "directions", m);
  const Scan8Shape shape = Scan8Dims(ctx, states, m);
  const std::vector<int64_t> lengths = Scan8SequenceLengths(ctx, shape);
  std::vector<std::vector<Tensor>> final_states(states), scan_outputs(scans);
  for (int64_t b = 0; b < shape.batch; ++b) {
    std::vector<Tensor> initial, entries;
    for (int i = 0; i < states; ++i) initial.push_back(SliceAt(ctx.input(1 + i), 0, b));
    for (int j = 0; j < m; ++j) entries.push_back(SliceAt(ctx.input(1 + states + j), 0, b));
    std::vector<const Tensor*> inputs;
    for (const Tensor& e : entries) inputs.push_back(&e);
    ScanResult run = IterateScan(ctx, body, std::move(initial), inputs, std::vector<int>(m, 0),
                                 directions, lengths[b], scans);
    for (int i = 0; i < states; ++i) final_states[i].push_back(std::move(run.states[i]));
    for (int k = 0; k < scans; ++k) {
      std::vector<Tensor>& slices = run.slices[k];
      while (static_cast<int64_t>(slices.size()) < shape.max_seq_len) {
        slices.emplace_back(slices[0].dtype(), slices[0].shape());  // zero padding
      }
      scan_outputs[k].push_back(Stack(ctx, slices, 0, false, "scan output"));
    }
  }
  for (int i = 0; i < states; ++i) ctx.output(i) = Stack(ctx, final_states[i], 0, false, "state");
  for (int k = 0; k < scans; ++k) {
    ctx.output(states + k) = Stack(ctx, scan_outputs[k], 0, false, "scan output");
  }
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  r.Register("", "If", 1, 99, IfKernel);
  r.Register("", "Loop", 1, 99, LoopKernel);
  r.Register("", "Scan", 8, 8, Scan8Kernel);
  r.Register("", "Scan", 9, 99, ScanKernel);
}

}  // namespace porttool::runtime
