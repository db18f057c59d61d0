#include "lib/runtime/pad_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "lib/runtime/fusion.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/plan_constants.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;
using AP = onnx::AttributeProto;

const AP* FindAttribute(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// A fill of exactly +0.0: the value the conv's own padding multiplies.
bool IsPositiveZero(double v) { return v == 0 && !std::signbit(v); }

// Pad's `mode` is absent or "constant".
bool ConstantMode(const onnx::NodeProto& pad) {
  const AP* mode = FindAttribute(pad, "mode");
  return mode == nullptr || (mode->type() == AP::STRING && mode->s() == "constant");
}

// Pad before opset 11: pads (or Pad-1's paddings) and value are attributes.
std::optional<std::vector<int64_t>> AttributePads(const onnx::NodeProto& pad) {
  if (pad.input_size() != 1 || !OnlyAttributes(pad, {"mode", "pads", "value", "paddings"})) {
    return std::nullopt;
  }
  const AP* value = FindAttribute(pad, "value");
  if (value && (value->type() != AP::FLOAT || !IsPositiveZero(value->f()))) return std::nullopt;
  const AP* pads = FindAttribute(pad, "paddings");  // first, as the Pad kernel reads them
  if (pads == nullptr) pads = FindAttribute(pad, "pads");
  if (pads == nullptr || pads->type() != AP::INTS) return std::nullopt;
  return std::vector<int64_t>(pads->ints().begin(), pads->ints().end());
}

// Pad from opset 11: pads and constant_value are inputs, which must be known at plan time. An
// `axes` input (opset 18) is not folded.
std::optional<std::vector<int64_t>> InputPads(const onnx::NodeProto& pad, PlanConstants& values) {
  if (pad.input_size() < 2 || !OnlyAttributes(pad, {"mode"})) return std::nullopt;
  if (pad.input_size() > 3 && !pad.input(3).empty()) return std::nullopt;
  if (pad.input_size() > 2 && !pad.input(2).empty()) {
    const Tensor* value = values.Find(pad.input(2));
    if (value == nullptr || value->dtype() != TP::FLOAT || value->size() > 1) return std::nullopt;
    // An empty constant_value means 0, as the Pad kernel reads it.
    if (value->size() == 1 && !IsPositiveZero(value->data<float>()[0])) return std::nullopt;
  }
  const Tensor* pads = values.Find(pad.input(1));
  if (pads == nullptr || pads->dtype() != TP::INT64 || pads->rank() != 1) return std::nullopt;
  return std::vector<int64_t>(pads->data<int64_t>(), pads->data<int64_t>() + pads->size());
}

// The Pad's amounts when it is a zero constant pad of a 1-D or 2-D conv input over the spatial
// axes only (rank = pads / 2), else nullopt.
std::optional<std::vector<int64_t>> ZeroSpatialPads(const onnx::NodeProto& pad, int opset,
                                                    PlanConstants& values) {
  if (!ConstantMode(pad)) return std::nullopt;
  auto pads = opset < 11 ? AttributePads(pad) : InputPads(pad, values);
  if (!pads) return std::nullopt;
  const int rank = static_cast<int>(pads->size() / 2);
  if (pads->size() % 2 != 0 || rank < 3 || rank > 4) return std::nullopt;
  const auto& p = *pads;
  if (p[0] != 0 || p[1] != 0 || p[rank] != 0 || p[rank + 1] != 0) return std::nullopt;
  if (std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; })) return std::nullopt;
  return pads;
}

// The Conv rewritten to read `x` with the Pad's spatial `pads` added to its own, or nullopt when
// its attributes leave that unclear (auto_pad SAME_*, malformed pads: it then fails unfused).
std::optional<onnx::NodeProto> FoldedConv(const onnx::NodeProto& conv, const std::string& x,
                                          const std::vector<int64_t>& pads) {
  if (!OnlyAttributes(conv,
                      {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})) {
    return std::nullopt;
  }
  const int rank = static_cast<int>(pads.size() / 2), spatial = rank - 2;
  const AP* own = FindAttribute(conv, "pads");
  const AP* auto_pad = FindAttribute(conv, "auto_pad");
  if (auto_pad && (auto_pad->type() != AP::STRING ||
                   !(auto_pad->s() == "NOTSET" || (auto_pad->s() == "VALID" && own == nullptr)))) {
    return std::nullopt;
  }
  std::vector<int64_t> sum(2 * spatial, 0);
  if (own) {
    if (own->type() != AP::INTS || own->ints_size() != 2 * spatial) return std::nullopt;
    for (int i = 0; i < 2 * spatial; ++i) sum[i] = own->ints(i);
  }
  for (int i = 0; i < spatial; ++i) {
    if (sum[i] < 0 || sum[spatial + i] < 0 ||
        __builtin_add_overflow(sum[i], pads[2 + i], &sum[i]) ||
        __builtin_add_overflow(sum[spatial + i], pads[rank + 2 + i], &sum[spatial + i])) {
      return std::nullopt;
    }
  }
  onnx::NodeProto folded = conv;
  folded.set_input(0, x);
  folded.clear_attribute();
  for (const auto& a : conv.attribute()) {
    if (a.name() != "pads" && a.name() != "auto_pad") *folded.add_attribute() = a;
  }
  AP* p = folded.add_attribute();
  p->set_name("pads");
  p->set_type(AP::INTS);
  for (int64_t v : sum) p->add_ints(v);
  return folded;
}

// The Conv step reading the Pad's output `value` as its input 0 and nothing else reading it.
std::optional<int> SoleConvReader(const ir::GraphView& view, const std::string& value) {
  if (view.IsGraphOutput(value)) return std::nullopt;
  const std::vector<int>& readers = view.Consumers(value);  // subgraph captures count too
  if (readers.size() != 1) return std::nullopt;
  const auto& conv = view.node(readers[0]);
  if (conv.op_type() != "Conv" || !CanonicalDomain(conv.domain()).empty() ||
      conv.input_size() < 2 || conv.input(0) != value) {
    return std::nullopt;
  }
  for (int i = 1; i < conv.input_size(); ++i) {
    if (conv.input(i) == value) return std::nullopt;
  }
  return readers[0];
}

bool IsPlainPad(const onnx::NodeProto& n) {
  return n.op_type() == "Pad" && CanonicalDomain(n.domain()).empty() && n.input_size() >= 1 &&
         !n.input(0).empty() && n.output_size() == 1 && !n.output(0).empty();
}

}  // namespace

std::vector<std::unique_ptr<FoldedPad>> FindPadFolds(
    const ir::GraphView& view, const std::vector<int>& order, const std::vector<int>& opsets,
    const std::unordered_map<std::string, Tensor>& constants, const io::Model* model,
    const std::function<bool(size_t step)>& builtin) {
  std::vector<std::unique_ptr<FoldedPad>> folds(order.size());
  std::vector<size_t> step_of(view.node_count());
  for (size_t step = 0; step < order.size(); ++step) step_of[order[step]] = step;
  PlanConstants values(view, order, opsets, constants, model);
  for (size_t step = 0; step < order.size(); ++step) {
    const auto& pad = view.node(order[step]);
    if (!IsPlainPad(pad) || !builtin(step)) continue;
    const auto conv = SoleConvReader(view, pad.output(0));
    if (!conv || !builtin(step_of[*conv])) continue;
    const auto pads = ZeroSpatialPads(pad, opsets[step], values);
    if (!pads) continue;
    auto folded = FoldedConv(view.node(*conv), pad.input(0), *pads);
    if (!folded) continue;
    folds[step] = std::make_unique<FoldedPad>(FoldedPad{
        pad.input(0), static_cast<int>(pads->size() / 2), step_of[*conv], std::move(*folded)});
  }
  return folds;
}

bool FoldApplies(const FoldedPad& fold, const Tensor* x) {
  return x != nullptr && x->dtype() == TP::FLOAT && x->rank() == fold.rank && x->size() > 0;
}

std::vector<std::vector<std::string>> FreesWithFolds(
    std::vector<std::vector<std::string>> frees,
    const std::vector<std::unique_ptr<FoldedPad>>& folds) {
  for (size_t pad_step = 0; pad_step < folds.size(); ++pad_step) {
    const FoldedPad* fold = folds[pad_step].get();
    if (fold == nullptr) continue;
    for (size_t s = pad_step; s < fold->conv_step; ++s) {
      auto it = std::find(frees[s].begin(), frees[s].end(), fold->input);
      if (it == frees[s].end()) continue;
      frees[s].erase(it);
      frees[fold->conv_step].push_back(fold->input);
      break;
    }
  }
  return frees;
}

}  // namespace porttool::runtime
