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
  // one value): its values expanded to `channels`, or nullopt.
  std::optional<std::vector<float>> PerChannel(const std::string& name) const {
    const Tensor* t = FloatConstant(name);
    if (t == nullptr || t->rank() > rank_) return std::nullopt;
    const int channel_axis = t->rank() - (rank_ - 1);  // t's axis aligned with C
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
  std::optional<std::vector<size_t>> MatchClipDivHardSwish(const std::string& value,
                                                           const std::vector<size_t>& readers,
                                                           EpilogueSpec& spec,
                                                           std::string& output) const;

  const ir::GraphView& view_;
  const std::vector<int>& order_;
  const std::unordered_map<std::string, Tensor>& constants_;
  std::vector<size_t> step_of_;  // node index -> step
  int rank_ = 0;                 // of the head's output
  int64_t channels_ = 0;
};

// Attributes limited to `known` (an unknown one makes the node fail when run alone).
bool OnlyAttributes(const onnx::NodeProto& n, std::initializer_list<const char*> known) {
  for (const auto& a : n.attribute()) {
    bool ok = false;
    for (const char* k : known) ok |= a.name() == k;
    if (!ok) return false;
  }
  return true;
}

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
  if (n.op_type() != "BatchNormalization" || n.input_size() != 5 || n.input(0) != value ||
      !OneOutput(n) || !OnlyAttributes(n, {"epsilon", "momentum", "spatial"})) {
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

std::unique_ptr<FusedTail> TailMatcher::Match(size_t head) {
  const auto& conv = Node(head);
  if (conv.op_type() != "Conv" || conv.input_size() < 2 || !OneOutput(conv)) return nullptr;
  const Tensor* w = FloatConstant(conv.input(1));
  if (w == nullptr || w->rank() < 3) return nullptr;
  rank_ = w->rank();
  channels_ = w->dim(0);
  auto tail = std::make_unique<FusedTail>();
  std::string value = conv.output(0);
  // Affine nodes first; once a residual is added only the activation may follow.
  enum class Stage { kAffine, kActivation } stage = Stage::kAffine;
  while (true) {
    auto readers = PrivateReaders(value);
    if (!readers || readers->empty()) break;
    if (readers->size() == 2) {
      std::string out;
      if (auto steps = MatchClipDivHardSwish(value, *readers, tail->spec, out)) {
        tail->absorbed.insert(tail->absorbed.end(), steps->begin(), steps->end());
        value = out;
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
