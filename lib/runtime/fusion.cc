#include "lib/runtime/fusion.h"

#include <cmath>
#include <limits>
#include <optional>

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

// What the matcher knows about the graph: readers by step, producers by step, constants.
class TailMatcher {
 public:
  TailMatcher(const ir::GraphView& view, const std::vector<int>& order,
              const std::unordered_map<std::string, Tensor>& constants)
      : view_(view), order_(order), constants_(constants), step_of_(order.size()) {
    for (size_t step = 0; step < order.size(); ++step) step_of_[order[step]] = step;
  }

  std::unique_ptr<FusedTail> Match(size_t head);

 private:
  bool StartAt(const onnx::NodeProto& head);
  const onnx::NodeProto& Node(size_t step) const { return view_.node(order_[step]); }

  // The steps reading `value` when nothing outside this graph's plain inputs can see it: no
  // graph output, no subgraph capture (Consumers counts captures too, so a captured value has
  // a reader that does not take it as an input), and every reader takes it as an input.
  std::optional<std::vector<size_t>> PrivateReaders(const std::string& value) const {
    if (view_.IsGraphOutput(value)) return std::nullopt;
    std::vector<size_t> steps;
    for (int n : view_.Consumers(value)) {
      const auto& node = view_.node(n);
      bool as_input = false;
      for (const auto& in : node.input()) as_input |= in == value;
      if (!as_input || !ir::GraphView::CapturedNames(node).empty()) return std::nullopt;
      steps.push_back(step_of_[n]);
    }
    return steps;
  }

  const Tensor* FloatConstant(const std::string& name) const {
    auto it = constants_.find(name);
    if (it == constants_.end() || it->second.dtype() != TP::FLOAT) return nullptr;
    return &it->second;
  }

  // A constant that broadcasts over the output [N, C, spatial...] as one value per channel (or
  // one value): its values expanded to `channels`, or nullopt. A MatMul head's channels are its
  // output's last axis, whose rank is not known at plan time: there only a constant of rank <= 1
  // (a bias [N]) is sure not to broadcast the output to a higher rank.
  std::optional<std::vector<float>> PerChannel(const std::string& name) const {
    const Tensor* t = FloatConstant(name);
    if (t == nullptr || (per_column_ ? t->rank() > 1 : t->rank() > rank_)) return std::nullopt;
    const int channel_axis = per_column_ ? 0 : t->rank() - (rank_ - 1);  // t's axis aligned with C
    for (int i = 0; i < t->rank(); ++i) {
      if (i != channel_axis && t->dim(i) != 1) return std::nullopt;
    }
    const int64_t count = t->size();
    if (count != 1 && count != channels_) return std::nullopt;
    std::vector<float> v(channels_);
    for (int64_t c = 0; c < channels_; ++c) v[c] = t->data<float>()[count == 1 ? 0 : c];
    return v;
  }

  std::optional<float> Scalar(const std::string& name) const {
    const Tensor* t = FloatConstant(name);
    if (t == nullptr || t->size() != 1) return std::nullopt;
    return t->data<float>()[0];
  }

  // Whether `name` already holds a value when step `head` runs.
  bool AvailableAt(const std::string& name, size_t head) const {
    const int producer = view_.Producer(name);
    return producer < 0 || step_of_[producer] < head;
  }

  bool ApplyAffine(const onnx::NodeProto& n, const std::string& value, EpilogueSpec& spec) const;
  bool ApplyBatchNorm(const onnx::NodeProto& n, const std::string& value, EpilogueSpec& spec) const;
  bool ApplyActivation(const onnx::NodeProto& n, EpilogueSpec& spec) const;
  // The activations written as several nodes that all read the head's value `value` (its two
  // `readers`): the steps they cover, and `output` set to the last one's output.
  using TwoReaderMatch = std::optional<std::vector<size_t>> (TailMatcher::*)(
      const std::string& value, const std::vector<size_t>& readers, EpilogueSpec& spec,
      std::string& output) const;
  std::optional<std::vector<size_t>> MatchClipDivHardSwish(const std::string& value,
                                                           const std::vector<size_t>& readers,
                                                           EpilogueSpec& spec,
                                                           std::string& output) const;
  std::optional<std::vector<size_t>> MatchSilu(const std::string& value,
                                               const std::vector<size_t>& readers,
                                               EpilogueSpec& spec, std::string& output) const;
  std::optional<std::vector<size_t>> MatchGelu(const std::string& value,
                                               const std::vector<size_t>& readers,
                                               EpilogueSpec& spec, std::string& output) const;
  void MatchPostAffine(std::string& value, EpilogueSpec& spec, std::vector<size_t>& absorbed) const;
  // A ConvTranspose without a bias input, then an Add of a per-channel constant: the Add becomes
  // the head's bias (spec.head_bias), so the sum is rounded as the Add rounds it rather than
  // composed into the affine shift.
  void MatchHeadBias(const onnx::NodeProto& head, std::string& value, EpilogueSpec& spec,
                     std::vector<size_t>& absorbed) const;
  // LayerNormalization written as nodes from the head ReduceMean: the steps, the epsilon, and
  // `output` the normalised value.
  std::optional<std::vector<size_t>> MatchLayerNorm(const onnx::NodeProto& head, float& epsilon,
                                                    std::string& output) const;
  // The channels of the per-column constant a normalised value is scaled or shifted by first
  // (its size), or 1 when none follows.
  int64_t FirstColumnConstantSize(const std::string& value) const;
  // The single private reader of `value` if it is a plain one-output node taking no attribute.
  std::optional<size_t> SoleSimpleReader(const std::string& value) const;
  // Whether node `n` is `op` of `value` and a scalar constant (either order), giving the scalar.
  std::optional<float> ScalarOperand(const onnx::NodeProto& n, const char* op,
                                     const std::string& value) const;

  const ir::GraphView& view_;
  const std::vector<int>& order_;
  const std::unordered_map<std::string, Tensor>& constants_;
  std::vector<size_t> step_of_;  // node index -> step
  int rank_ = 0;                 // of the head's output (a Conv's; unknown for a MatMul)
  int64_t channels_ = 0;
  bool per_column_ = false;  // a MatMul head: channels are the last axis
};

float FloatAttr(const onnx::NodeProto& n, const char* name, float def) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name && a.type() == onnx::AttributeProto::FLOAT) return a.f();
  }
  return def;
}

bool OneOutput(const onnx::NodeProto& n) {
  for (int i = 1; i < n.output_size(); ++i) {
    if (!n.output(i).empty()) return false;
  }
  return n.output_size() >= 1 && !n.output(0).empty();
}

// The other input of a two-input node, given that one of them is `value`.
const std::string* OtherInput(const onnx::NodeProto& n, const std::string& value) {
  if (n.input_size() != 2) return nullptr;
  if (n.input(0) == value && n.input(1) != value) return &n.input(1);
  if (n.input(1) == value && n.input(0) != value) return &n.input(0);
  return nullptr;
}

// The `group` attribute of a conv (1 when absent or malformed: the kernel rejects a malformed
// one before it would apply the tail).
int64_t GroupAttribute(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "group" && a.type() == onnx::AttributeProto::INT && a.i() > 0) return a.i();
  }
  return 1;
}

// ReduceMean over the last axis keeping it (axes = [-1] as an attribute, before opset 18): the
// kernel checks the opset and the rank before it applies the fused normalisation.
bool IsLastAxisMean(const onnx::NodeProto& n) {
  if (n.op_type() != "ReduceMean" || n.input_size() != 1 || !OneOutput(n) ||
      !OnlyAttributes(n, {"axes", "keepdims"})) {
    return false;
  }
  bool last_axis = false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "keepdims" && (a.type() != onnx::AttributeProto::INT || a.i() != 1)) {
      return false;
    }
    if (a.name() == "axes") {
      last_axis = a.type() == onnx::AttributeProto::INTS && a.ints_size() == 1 && a.ints(0) == -1;
    }
  }
  return last_axis;
}

// Mul or Add by a per-channel constant, before any residual or activation: folded into the
// running affine y * scale + shift (a Mul after an Add scales the shift too).
bool TailMatcher::ApplyAffine(const onnx::NodeProto& n, const std::string& value,
                              EpilogueSpec& spec) const {
  if ((n.op_type() != "Mul" && n.op_type() != "Add") || !OnlyAttributes(n, {})) return false;
  const std::string* other = OtherInput(n, value);
  if (other == nullptr) return false;
  auto k = PerChannel(*other);
  if (!k) return false;
  if (n.op_type() == "Add") {
    if (spec.shift.empty()) spec.shift.assign(channels_, 0.f);
    for (int64_t c = 0; c < channels_; ++c) spec.shift[c] += (*k)[c];
    return true;
  }
  if (spec.scale.empty()) spec.scale.assign(channels_, 1.f);
  for (int64_t c = 0; c < channels_; ++c) {
    spec.scale[c] *= (*k)[c];
    if (!spec.shift.empty()) spec.shift[c] *= (*k)[c];
  }
  return true;
}

// Inference BatchNormalization with constant statistics: y * a + b, a and b computed as the
// BatchNormalization kernel computes them.
bool TailMatcher::ApplyBatchNorm(const onnx::NodeProto& n, const std::string& value,
                                 EpilogueSpec& spec) const {
  // BatchNormalization normalises axis 1, a MatMul head's channels are its last axis.
  if (per_column_ || n.op_type() != "BatchNormalization" || n.input_size() != 5 ||
      n.input(0) != value || !OneOutput(n) ||
      !OnlyAttributes(n, {"epsilon", "momentum", "spatial"})) {
    return false;
  }
  for (const auto& a : n.attribute()) {
    if (a.name() == "spatial" && a.i() != 1) return false;
  }
  const Tensor* p[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = FloatConstant(n.input(i + 1));
    if (p[i] == nullptr || p[i]->size() != channels_) return false;
  }
  const double epsilon = FloatAttr(n, "epsilon", 1e-5f);
  if (spec.scale.empty()) spec.scale.assign(channels_, 1.f);
  if (spec.shift.empty()) spec.shift.assign(channels_, 0.f);
  for (int64_t c = 0; c < channels_; ++c) {
    const float* s = p[0]->data<float>();
    const float a =
        static_cast<float>(s[c] / std::sqrt(static_cast<double>(p[3]->data<float>()[c]) + epsilon));
    const float b = p[1]->data<float>()[c] - p[2]->data<float>()[c] * a;
    spec.scale[c] *= a;
    spec.shift[c] = spec.shift[c] * a + b;
  }
  return true;
}

bool TailMatcher::ApplyActivation(const onnx::NodeProto& n, EpilogueSpec& spec) const {
  const std::string& op = n.op_type();
  if (!OneOutput(n)) return false;
  if (op == "Relu" && n.input_size() == 1 && OnlyAttributes(n, {})) {
    spec.act = EpilogueAct::kRelu;
  } else if (op == "Sigmoid" && n.input_size() == 1 && OnlyAttributes(n, {})) {
    spec.act = EpilogueAct::kSigmoid;
  } else if (op == "HardSwish" && n.input_size() == 1 && OnlyAttributes(n, {})) {
    spec.act = EpilogueAct::kHardSwish;
  } else if (op == "LeakyRelu" && n.input_size() == 1 && OnlyAttributes(n, {"alpha"})) {
    spec.act = EpilogueAct::kLeakyRelu;
    spec.alpha = FloatAttr(n, "alpha", 0.01f);
  } else if (op == "HardSigmoid" && n.input_size() == 1 && OnlyAttributes(n, {"alpha", "beta"})) {
    spec.act = EpilogueAct::kHardSigmoid;
    spec.alpha = FloatAttr(n, "alpha", 0.2f);
    spec.beta = FloatAttr(n, "beta", 0.5f);
  } else if (op == "Clip" && n.input_size() == 1 && OnlyAttributes(n, {"min", "max"})) {
    spec.act = EpilogueAct::kClip;  // opset < 11: bounds are attributes
    spec.lo = FloatAttr(n, "min", -std::numeric_limits<float>::max());
    spec.hi = FloatAttr(n, "max", std::numeric_limits<float>::max());
  } else if (op == "Clip" && n.input_size() <= 3 && n.attribute_size() == 0) {
    auto bound = [&](int i, float def) -> std::optional<float> {
      if (i >= n.input_size() || n.input(i).empty()) return def;
      return Scalar(n.input(i));
    };
    auto lo = bound(1, std::numeric_limits<float>::lowest());
    auto hi = bound(2, std::numeric_limits<float>::max());
    if (!lo || !hi) return false;
    spec.act = EpilogueAct::kClip;
    spec.lo = *lo;
    spec.hi = *hi;
  } else {
    return false;
  }
  return true;
}

// y * Clip(y + a, lo, hi) / d, Paddle2ONNX's hard_swish: y is read by the Add and the Mul.
std::optional<std::vector<size_t>> TailMatcher::MatchClipDivHardSwish(
    const std::string& value, const std::vector<size_t>& readers, EpilogueSpec& spec,
    std::string& output) const {
  if (readers.size() != 2) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const auto& add = Node(readers[first]);
    const auto& mul = Node(readers[1 - first]);
    if (add.op_type() != "Add" || mul.op_type() != "Mul" || !OnlyAttributes(add, {}) ||
        !OnlyAttributes(mul, {}) || !OneOutput(add) || !OneOutput(mul)) {
      continue;
    }
    const std::string* a = OtherInput(add, value);
    if (a == nullptr || !Scalar(*a)) continue;
    auto clip_readers = PrivateReaders(add.output(0));
    if (!clip_readers || clip_readers->size() != 1) continue;
    const size_t clip_step = clip_readers->front();
    const auto& clip = Node(clip_step);
    EpilogueSpec bounds;
    if (clip.op_type() != "Clip" || clip.input(0) != add.output(0) ||
        !ApplyActivation(clip, bounds)) {
      continue;
    }
    const std::string* gated = OtherInput(mul, value);
    auto mul_readers = PrivateReaders(clip.output(0));
    if (gated == nullptr || *gated != clip.output(0) || !mul_readers || mul_readers->size() != 1 ||
        mul_readers->front() != readers[1 - first]) {
      continue;
    }
    auto div_readers = PrivateReaders(mul.output(0));
    if (!div_readers || div_readers->size() != 1) continue;
    const auto& div = Node(div_readers->front());
    if (div.op_type() != "Div" || !OnlyAttributes(div, {}) || !OneOutput(div) ||
        div.input_size() != 2 || div.input(0) != mul.output(0) || !Scalar(div.input(1))) {
      continue;
    }
    spec.act = EpilogueAct::kHardSwishClipDiv;
    spec.add = *Scalar(*a);
    spec.lo = bounds.lo;
    spec.hi = bounds.hi;
    spec.div = *Scalar(div.input(1));
    output = div.output(0);
    return std::vector<size_t>{readers[first], clip_step, readers[1 - first], div_readers->front()};
  }
  return std::nullopt;
}

std::optional<size_t> TailMatcher::SoleSimpleReader(const std::string& value) const {
  auto readers = PrivateReaders(value);
  if (!readers || readers->size() != 1) return std::nullopt;
  const auto& n = Node(readers->front());
  if (!OneOutput(n) || !OnlyAttributes(n, {})) return std::nullopt;
  return readers->front();
}

std::optional<float> TailMatcher::ScalarOperand(const onnx::NodeProto& n, const char* op,
                                                const std::string& value) const {
  if (n.op_type() != op || !OneOutput(n) || !OnlyAttributes(n, {})) return std::nullopt;
  const std::string* other = OtherInput(n, value);
  if (other == nullptr) return std::nullopt;
  return Scalar(*other);
}

// x * Sigmoid(x): x is read by the Sigmoid and the Mul.
std::optional<std::vector<size_t>> TailMatcher::MatchSilu(const std::string& value,
                                                          const std::vector<size_t>& readers,
                                                          EpilogueSpec& spec,
                                                          std::string& output) const {
  for (int first = 0; first < 2; ++first) {
    const auto& sig = Node(readers[first]);
    const auto& mul = Node(readers[1 - first]);
    if (sig.op_type() != "Sigmoid" || sig.input_size() != 1 || !OneOutput(sig) ||
        !OnlyAttributes(sig, {}) || mul.op_type() != "Mul" || !OneOutput(mul) ||
        !OnlyAttributes(mul, {})) {
      continue;
    }
    const std::string* gate = OtherInput(mul, value);
    if (gate == nullptr || *gate != sig.output(0) ||
        SoleSimpleReader(sig.output(0)) != readers[1 - first]) {
      continue;
    }
    spec.act = EpilogueAct::kSilu;
    output = mul.output(0);
    return std::vector<size_t>{readers[first], readers[1 - first]};
  }
  return std::nullopt;
}

// GELU in its erf form: x is read by the scaling (Mul by k or Div by k) and by the final Mul.
//   gate form:  e = Erf(x * k); g = (e + one) * half; y = x * g   (the gate halved first)
//   tail form:  e = Erf(x / k); u = e + one; y = (x * u) * half    (torch.nn.functional.gelu)
std::optional<std::vector<size_t>> TailMatcher::MatchGelu(const std::string& value,
                                                          const std::vector<size_t>& readers,
                                                          EpilogueSpec& spec,
                                                          std::string& output) const {
  for (int first = 0; first < 2; ++first) {
    const size_t scale_step = readers[first], mul_step = readers[1 - first];
    const auto& scale = Node(scale_step);
    const auto& mul = Node(mul_step);
    std::optional<float> k = ScalarOperand(scale, "Mul", value);
    const bool divides = !k && scale.op_type() == "Div" && scale.input_size() == 2 &&
                         scale.input(0) == value && OneOutput(scale) && OnlyAttributes(scale, {});
    if (divides) k = Scalar(scale.input(1));
    if (!k || mul.op_type() != "Mul" || !OneOutput(mul) || !OnlyAttributes(mul, {})) continue;
    const auto erf_step = SoleSimpleReader(scale.output(0));
    if (!erf_step || Node(*erf_step).op_type() != "Erf" || Node(*erf_step).input_size() != 1) {
      continue;
    }
    const std::string& e = Node(*erf_step).output(0);
    const auto add_step = SoleSimpleReader(e);
    if (!add_step) continue;
    const std::optional<float> one = ScalarOperand(Node(*add_step), "Add", e);
    const std::string& u = Node(*add_step).output(0);
    const auto after_add = SoleSimpleReader(u);
    if (!one || !after_add) continue;
    const std::string* mul_other = OtherInput(mul, value);
    if (mul_other == nullptr) continue;
    std::vector<size_t> steps{scale_step, *erf_step, *add_step};
    std::optional<float> half;
    if (*after_add == mul_step && *mul_other == u) {  // tail form: (x * u) * half
      const auto half_step = SoleSimpleReader(mul.output(0));
      if (!half_step) continue;
      half = ScalarOperand(Node(*half_step), "Mul", mul.output(0));
      steps.insert(steps.end(), {mul_step, *half_step});
      output = Node(*half_step).output(0);
      spec.gelu_gate_half = false;
    } else {  // gate form: x * (u * half)
      const auto& gate = Node(*after_add);
      half = ScalarOperand(gate, "Mul", u);
      if (*mul_other != gate.output(0) || SoleSimpleReader(gate.output(0)) != mul_step) continue;
      steps.insert(steps.end(), {*after_add, mul_step});
      output = mul.output(0);
      spec.gelu_gate_half = true;
    }
    if (!half) continue;
    spec.act = EpilogueAct::kGelu;
    spec.gelu_k = *k;
    spec.gelu_divides = divides;
    spec.gelu_one = *one;
    spec.gelu_half = *half;
    return steps;
  }
  return std::nullopt;
}

// After the activation, a Mul and then an Add by scalar constants (either optional): PP-OCRv4's
// learnable affine blocks follow the activation so. Kept as the two nodes round (v * k + t, two
// roundings), so only in that order.
void TailMatcher::MatchPostAffine(std::string& value, EpilogueSpec& spec,
                                  std::vector<size_t>& absorbed) const {
  for (const char* op : {"Mul", "Add"}) {
    const auto step = SoleSimpleReader(value);
    if (!step) return;
    const std::optional<float> k = ScalarOperand(Node(*step), op, value);
    if (!k) continue;
    (std::string(op) == "Mul" ? spec.post_scale : spec.post_shift) = *k;
    spec.post_affine = true;
    absorbed.push_back(*step);
    value = Node(*step).output(0);
  }
}

// LayerNormalization over the last axis as exporters before opset 17 write it (torch's
// layer_norm, hey_jarvis's two):
//   m = ReduceMean(x, axes=[-1]); d = Sub(x, m); v = ReduceMean(Pow(d, 2), axes=[-1]);
//   y = Div(d, Sqrt(Add(v, eps)))
// d is read by the Pow and the Div; every other intermediate by the next node alone.
std::optional<std::vector<size_t>> TailMatcher::MatchLayerNorm(const onnx::NodeProto& head,
                                                               float& epsilon,
                                                               std::string& output) const {
  if (!IsLastAxisMean(head)) return std::nullopt;
  const std::string& x = head.input(0);
  const auto sub = SoleSimpleReader(head.output(0));
  if (!sub || Node(*sub).op_type() != "Sub" || Node(*sub).input_size() != 2 ||
      Node(*sub).input(0) != x || Node(*sub).input(1) != head.output(0)) {
    return std::nullopt;
  }
  const std::string& d = Node(*sub).output(0);
  const auto d_readers = PrivateReaders(d);
  if (!d_readers || d_readers->size() != 2) return std::nullopt;
  std::optional<size_t> pow, div;
  for (size_t step : *d_readers) {
    const auto& n = Node(step);
    if (n.input_size() != 2 || n.input(0) != d || !OneOutput(n) || !OnlyAttributes(n, {})) {
      return std::nullopt;
    }
    if (n.op_type() == "Pow" && Scalar(n.input(1)) == 2.f) pow = step;
    if (n.op_type() == "Div" && n.input(1) != d) div = step;
  }
  if (!pow || !div) return std::nullopt;
  const auto var_readers = PrivateReaders(Node(*pow).output(0));
  if (!var_readers || var_readers->size() != 1) return std::nullopt;
  const size_t var = var_readers->front();
  if (!IsLastAxisMean(Node(var)) || Node(var).input(0) != Node(*pow).output(0)) return std::nullopt;
  const auto add = SoleSimpleReader(Node(var).output(0));
  const auto eps = add ? ScalarOperand(Node(*add), "Add", Node(var).output(0)) : std::nullopt;
  if (!eps) return std::nullopt;
  const auto sqrt = SoleSimpleReader(Node(*add).output(0));
  if (!sqrt || Node(*sqrt).op_type() != "Sqrt" || Node(*sqrt).input_size() != 1) {
    return std::nullopt;
  }
  const auto sqrt_readers = PrivateReaders(Node(*sqrt).output(0));
  if (!sqrt_readers || *sqrt_readers != std::vector<size_t>{*div} ||
      Node(*div).input(1) != Node(*sqrt).output(0)) {
    return std::nullopt;
  }
  epsilon = *eps;
  output = Node(*div).output(0);
  return std::vector<size_t>{*sub, *pow, var, *add, *sqrt, *div};
}

int64_t TailMatcher::FirstColumnConstantSize(const std::string& value) const {
  const auto next = SoleSimpleReader(value);
  if (!next || (Node(*next).op_type() != "Mul" && Node(*next).op_type() != "Add")) return 1;
  const std::string* other = OtherInput(Node(*next), value);
  const Tensor* t = other ? FloatConstant(*other) : nullptr;
  return t && t->rank() == 1 ? t->size() : 1;
}

void TailMatcher::MatchHeadBias(const onnx::NodeProto& head, std::string& value, EpilogueSpec& spec,
                                std::vector<size_t>& absorbed) const {
  if (head.op_type() != "ConvTranspose" || (head.input_size() > 2 && !head.input(2).empty())) {
    return;
  }
  const auto add = SoleSimpleReader(value);
  if (!add || Node(*add).op_type() != "Add") return;
  const std::string* other = OtherInput(Node(*add), value);
  auto bias = other ? PerChannel(*other) : std::nullopt;
  if (!bias) return;
  spec.head_bias = std::move(*bias);
  absorbed.push_back(*add);
  value = Node(*add).output(0);
}

// The head: a Conv or ConvTranspose with constant weights (channels on axis 1) or a MatMul with a
// constant 2-D B (a linear layer: channels on the last axis).
bool TailMatcher::StartAt(const onnx::NodeProto& head) {
  if (head.input_size() < 2 || !OneOutput(head)) return false;
  const Tensor* w = FloatConstant(head.input(1));
  if (w == nullptr) return false;
  if (head.op_type() == "Conv" && w->rank() >= 3) {
    rank_ = w->rank();
    channels_ = w->dim(0);
    per_column_ = false;
    return true;
  }
  if (head.op_type() == "ConvTranspose" && w->rank() >= 3) {  // weights [C_in, C_out / group, ..]
    rank_ = w->rank();
    channels_ = w->dim(1) * GroupAttribute(head);
    per_column_ = false;
    return true;
  }
  if (head.op_type() == "MatMul" && head.input_size() == 2 && w->rank() == 2) {
    rank_ = 0;
    channels_ = w->dim(1);
    per_column_ = true;
    return true;
  }
  return false;
}

std::unique_ptr<FusedTail> TailMatcher::Match(size_t head) {
  const auto& conv = Node(head);
  auto tail = std::make_unique<FusedTail>();
  std::string value;
  if (conv.op_type() == "ReduceMean") {  // only as the head of a LayerNormalization
    auto core = MatchLayerNorm(conv, tail->spec.layer_norm_epsilon, value);
    if (!core) return nullptr;
    tail->spec.layer_norm = true;
    tail->absorbed = *core;
    rank_ = 0;
    channels_ = FirstColumnConstantSize(value);
    per_column_ = true;
  } else {
    if (!StartAt(conv)) return nullptr;
    value = conv.output(0);
    MatchHeadBias(conv, value, tail->spec, tail->absorbed);
  }
  tail->spec.per_column = per_column_;
  // Affine nodes first; once a residual is added only the activation may follow.
  enum class Stage { kAffine, kActivation } stage = Stage::kAffine;
  while (true) {
    auto readers = PrivateReaders(value);
    if (!readers || readers->empty()) break;
    if (readers->size() == 2) {
      for (TwoReaderMatch match : {&TailMatcher::MatchClipDivHardSwish, &TailMatcher::MatchSilu,
                                   &TailMatcher::MatchGelu}) {
        std::string out;
        if (auto steps = (this->*match)(value, *readers, tail->spec, out)) {
          tail->absorbed.insert(tail->absorbed.end(), steps->begin(), steps->end());
          value = out;
          MatchPostAffine(value, tail->spec, tail->absorbed);
          break;
        }
      }
      break;
    }
    if (readers->size() != 1) break;
    const size_t step = readers->front();
    const auto& n = Node(step);
    if (!OneOutput(n)) break;
    if (stage == Stage::kAffine &&
        (ApplyAffine(n, value, tail->spec) || ApplyBatchNorm(n, value, tail->spec))) {
      // stays in the affine stage
    } else if (stage == Stage::kAffine && n.op_type() == "Add" && OnlyAttributes(n, {}) &&
               OtherInput(n, value) && !constants_.count(*OtherInput(n, value)) &&
               AvailableAt(*OtherInput(n, value), head)) {
      tail->spec.residual = *OtherInput(n, value);
      stage = Stage::kActivation;
    } else if (n.input(0) == value && ApplyActivation(n, tail->spec)) {
      tail->absorbed.push_back(step);
      value = n.output(0);
      MatchPostAffine(value, tail->spec, tail->absorbed);
      break;
    } else {
      break;
    }
    tail->absorbed.push_back(step);
    value = n.output(0);
  }
  if (tail->absorbed.empty()) return nullptr;
  tail->output = value;
  return tail;
}

}  // namespace

bool OnlyAttributes(const onnx::NodeProto& n, std::initializer_list<const char*> known) {
  for (const auto& a : n.attribute()) {
    bool ok = false;
    for (const char* k : known) ok |= a.name() == k;
    if (!ok) return false;
  }
  return true;
}

std::vector<std::unique_ptr<FusedTail>> FindEpilogueFusions(
    const ir::GraphView& view, const std::vector<int>& order,
    const std::unordered_map<std::string, Tensor>& constants,
    const std::function<bool(size_t step)>& accepts) {
  std::vector<std::unique_ptr<FusedTail>> tails(order.size());
  TailMatcher matcher(view, order, constants);
  for (size_t step = 0; step < order.size(); ++step) {
    if (accepts(step)) tails[step] = matcher.Match(step);
  }
  return tails;
}

}  // namespace porttool::runtime
