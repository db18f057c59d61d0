#include "lib/quant/derived_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/ir/constants.h"

namespace porttool::quant {
namespace {

using Op = RangeRule::Op;

// A float scalar constant's value.
std::optional<float> ScalarConstant(const io::Model& model, const ir::ConstantLookup& constants,
                                    const std::string& name) {
  const onnx::TensorProto* t = constants.Find(name);
  if (t == nullptr || t->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  auto values = ir::ConstantAsDoubles(model, *t);
  if (!values || values->size() != 1) return std::nullopt;
  return static_cast<float>((*values)[0]);
}

float AttrFloat(const onnx::NodeProto& n, const std::string& name, float def) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.f();
  }
  return def;
}

std::string AttrString(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.s();
  }
  return def;
}

// A nearest Resize/Upsample with constant scales all >= 1: every input element is copied to at
// least one output element (the source index advances by at most one per output step and spans
// the whole axis), so the output holds exactly the input's values.
bool Enlarges(const io::Model& model, const ir::ConstantLookup& constants,
              const onnx::NodeProto& n) {
  if (AttrString(n, "mode", "nearest") != "nearest" ||
      AttrString(n, "coordinate_transformation_mode", "") == "tf_crop_and_resize") {
    return false;
  }
  // Upsample-7 has a scales attribute; Upsample-9 input 1, Resize-10 input 1, Resize-11+ input 2
  // (and then sizes, input 3, must be absent).
  const bool resize = n.op_type() == "Resize";
  const int scales_at = resize && n.input_size() >= 3 ? 2 : 1;
  if (resize && n.input_size() > 3 && !n.input(3).empty()) return false;
  std::optional<std::vector<double>> scales;
  if (n.input_size() > scales_at && !n.input(scales_at).empty()) {
    if (const onnx::TensorProto* t = constants.Find(n.input(scales_at))) {
      scales = ir::ConstantAsDoubles(model, *t);
    }
  } else {
    for (const auto& a : n.attribute()) {
      if (a.name() == "scales") scales = std::vector<double>(a.floats().begin(), a.floats().end());
    }
  }
  if (!scales || scales->empty()) return false;
  for (double s : *scales) {
    if (!(s >= 1)) return false;
  }
  return true;
}

// The rule for node `n`, if it computes a monotonic function of one activation input.
std::optional<RangeRule> RuleFor(const io::Model& model, const ir::ConstantLookup& constants,
                                 const onnx::NodeProto& n) {
  if (!ir::IsOnnxDomain(n.domain()) || n.output_size() != 1 || n.input_size() < 1) {
    return std::nullopt;
  }
  const std::string& op = n.op_type();
  if (op == "Relu" && n.input_size() == 1) return RangeRule{{n.input(0)}, Op::kRelu};
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Transpose" || op == "Identity") {
    return RangeRule{{n.input(0)}, Op::kSame};
  }
  if ((op == "Resize" || op == "Upsample") && Enlarges(model, constants, n)) {
    return RangeRule{{n.input(0)}, Op::kSame};
  }
  if (op == "Concat") {
    RangeRule r{{}, Op::kSame};
    for (const auto& in : n.input()) {
      if (in.empty() || constants.IsConstant(in)) return std::nullopt;
      r.inputs.push_back(in);
    }
    return r;
  }
  if (op == "Clip") {
    constexpr float kLowest = std::numeric_limits<float>::lowest();
    constexpr float kMax = std::numeric_limits<float>::max();
    RangeRule r{{n.input(0)}, Op::kClip, AttrFloat(n, "min", kLowest), AttrFloat(n, "max", kMax)};
    for (int i = 1; i < n.input_size() && i <= 2; ++i) {
      if (n.input(i).empty()) continue;
      auto bound = ScalarConstant(model, constants, n.input(i));
      if (!bound) return std::nullopt;
      (i == 1 ? r.a : r.b) = *bound;
    }
    return r;
  }
  if (n.input_size() != 2 || (op != "Add" && op != "Sub" && op != "Mul" && op != "Div")) {
    return std::nullopt;
  }
  auto c0 = ScalarConstant(model, constants, n.input(0));
  auto c1 = ScalarConstant(model, constants, n.input(1));
  if (c0.has_value() == c1.has_value()) return std::nullopt;  // need one activation
  const std::string& x = c1 ? n.input(0) : n.input(1);
  const float c = c1 ? *c1 : *c0;
  if (op == "Add") return RangeRule{{x}, Op::kAdd, c};
  if (op == "Mul") return RangeRule{{x}, Op::kMultiply, c};
  if (op == "Sub") return RangeRule{{x}, c1 ? Op::kSubtract : Op::kSubtractFrom, c};
  if (c1) return RangeRule{{x}, Op::kDivide, c};  // c / x is not monotonic across 0
  return std::nullopt;
}

// f(v), computed as the kernels compute it.
float Apply(const RangeRule& r, float v) {
  switch (r.op) {
    case Op::kRelu:
      return v > 0 ? v : 0.f;
    case Op::kClip:
      return std::min(std::max(v, r.a), r.b);
    case Op::kAdd:
      return v + r.a;
    case Op::kSubtract:
      return v - r.a;
    case Op::kSubtractFrom:
      return r.a - v;
    case Op::kMultiply:
      return v * r.a;
    case Op::kDivide:
      return v / r.a;
    case Op::kSame:
      return v;
  }
  return v;
}

}  // namespace

std::map<std::string, RangeRule> DerivableRanges(const io::Model& model) {
  ir::GraphView view(model.proto.graph());
  ir::ConstantLookup constants(view);
  std::map<std::string, RangeRule> rules;
  for (const auto& n : model.proto.graph().node()) {
    auto rule = RuleFor(model, constants, n);
    if (rule && !rule->inputs.empty() && !constants.IsConstant(rule->inputs[0])) {
      rules[n.output(0)] = *rule;
    }
  }
  return rules;
}

std::optional<SampleRange> DeriveRange(const RangeRule& rule, const std::vector<SampleRange>& x) {
  if (x.empty()) return std::nullopt;
  for (const auto& r : x) {
    if (r.nonfinite != 0 || r.lo > r.hi) return std::nullopt;
  }
  if (rule.op == Op::kSame) {
    SampleRange out = x[0];
    for (const auto& r : x) {
      out.lo = std::min(out.lo, r.lo);
      out.hi = std::max(out.hi, r.hi);
    }
    return out;
  }
  const float a = Apply(rule, x[0].lo), b = Apply(rule, x[0].hi);
  if (!std::isfinite(a) || !std::isfinite(b)) return std::nullopt;
  return SampleRange{std::min(a, b), std::max(a, b), 0};
}

}  // namespace porttool::quant
