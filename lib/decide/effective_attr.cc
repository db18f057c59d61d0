#include "lib/decide/effective_attr.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <set>

namespace porttool::decide {
namespace {

// Defaults ONNX states in the operator text rather than in the schema: "If not present, the
// stride defaults to 1 along each spatial axis" (and dilations 1, pads 0).
const std::set<std::string> kConvPoolFamily = {"Conv",        "ConvTranspose", "ConvInteger",
                                               "QLinearConv", "DeformConv",    "AveragePool",
                                               "MaxPool",     "LpPool",        "MaxUnpool"};

std::optional<nlohmann::json> ProseDefault(const std::string& op_type, const std::string& attr) {
  if (!kConvPoolFamily.count(op_type)) return std::nullopt;
  if (attr == "strides" || attr == "dilations") return nlohmann::json::array({1});
  if (attr == "pads") return nlohmann::json::array({0});
  return std::nullopt;
}

// Attributes of operator versions newer than libonnx 1.12's registry (opset <= 17) that target
// profiles name: Resize-18 added antialias (default 0) and keep_aspect_ratio_policy (default
// "stretch"); its `axes` has no default (absent means every axis).
std::optional<nlohmann::json> NewerDefault(const std::string& op_type, const std::string& attr) {
  if (op_type != "Resize") return std::nullopt;
  if (attr == "antialias") return 0;
  if (attr == "keep_aspect_ratio_policy") return "stretch";
  return std::nullopt;
}

const onnx::AttributeProto* FindNodeAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool IsOnnxDomain(const onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

std::string AsText(const nlohmann::json& v) {
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

}  // namespace

nlohmann::json AttrJson(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::INT:
      return a.i();
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    default:
      return nullptr;
  }
}

std::optional<nlohmann::json> AttrDefault(const std::string& op_type, int64_t opset,
                                          const std::string& attr) {
  if (const auto* schema =
          onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset), onnx::ONNX_DOMAIN)) {
    auto it = schema->attributes().find(attr);
    if (it != schema->attributes().end() &&
        it->second.default_value.type() != onnx::AttributeProto::UNDEFINED) {
      nlohmann::json v = AttrJson(it->second.default_value);
      if (!v.is_null()) return v;
    }
  }
  if (auto v = ProseDefault(op_type, attr)) return v;
  return NewerDefault(op_type, attr);
}

std::optional<nlohmann::json> EffectiveAttr(const onnx::NodeProto& node, int64_t opset,
                                            const std::string& attr) {
  if (const auto* a = FindNodeAttr(node, attr)) {
    nlohmann::json v = AttrJson(*a);
    if (!v.is_null()) return v;
  }
  if (!IsOnnxDomain(node)) return std::nullopt;
  return AttrDefault(node.op_type(), opset, attr);
}

const std::vector<AttrDependency>& AttrDependencies() {
  // From the Resize operator text: cubic_coeff_a is "the coefficient 'a' used in cubic
  // interpolation", nearest_mode says how to get the nearest pixel "used in nearest
  // interpolation", extrapolation_value is used "when coordinate_transformation_mode is
  // tf_crop_and_resize", antialias applies to the linear and cubic modes.
  static const std::vector<AttrDependency> kDependencies = {
      {"Resize", "cubic_coeff_a", "mode", {"cubic"}},
      {"Resize", "nearest_mode", "mode", {"nearest"}},
      {"Resize", "extrapolation_value", "coordinate_transformation_mode", {"tf_crop_and_resize"}},
      {"Resize", "antialias", "mode", {"linear", "cubic"}},
  };
  return kDependencies;
}

std::optional<std::string> IgnoredBecause(const onnx::NodeProto& node, int64_t opset,
                                          const std::string& attr) {
  if (!IsOnnxDomain(node)) return std::nullopt;
  for (const auto& d : AttrDependencies()) {
    if (d.op != node.op_type() || d.attr != attr) continue;
    auto on = EffectiveAttr(node, opset, d.on);
    if (!on || !on->is_string()) return std::nullopt;
    if (std::find(d.relevant.begin(), d.relevant.end(), on->get<std::string>()) ==
        d.relevant.end()) {
      return fmt::format("{} is {}", d.on, AsText(*on));
    }
  }
  return std::nullopt;
}

bool SameAttrValue(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<float>() == b.get<float>();
  if (a.is_array() && b.is_array()) {
    // A one-element list is a per-axis prose default ("1 along each spatial axis").
    if (a.empty() || b.empty()) return a.size() == b.size();
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return false;
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      if (!SameAttrValue(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i])) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace porttool::decide
