// Attribute values as a target rule must compare them: the value a node *computes with*, not the
// bytes an exporter happened to write. An absent attribute takes the default of the node's op
// version in ONNX's schema (or the default the operator text states in prose, such as a Conv's
// strides of 1); an attribute the node's other attributes make irrelevant (nearest_mode on a
// linear Resize, cubic_coeff_a unless the mode is cubic) has no effect at all. tf2onnx writes
// every Resize attribute explicitly, at its default: a rule that read the raw attributes sent
// M-LSD's bilinear Resizes to the CPU for attributes that change nothing.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace porttool::decide {

// An INT/FLOAT/STRING/INTS/FLOATS attribute as JSON; null for other types.
nlohmann::json AttrJson(const onnx::AttributeProto& a);

// The default of `attr` on ai.onnx op `op_type` at `opset` when ONNX states one: the schema's
// default_value, the prose defaults of the conv/pool family (strides and dilations 1, pads 0, as
// a one-element list), or, for attributes newer than the linked libonnx (opset 18+), the value
// the newer operator text gives. nullopt when the attribute has no default.
std::optional<nlohmann::json> AttrDefault(const std::string& op_type, int64_t opset,
                                          const std::string& attr);

// The value `attr` has on `node`: as set, else AttrDefault; nullopt when neither.
std::optional<nlohmann::json> EffectiveAttr(const onnx::NodeProto& node, int64_t opset,
                                            const std::string& attr);

// Why `attr` has no effect on `node` ("mode is \"linear\""), or nullopt when it has one.
std::optional<std::string> IgnoredBecause(const onnx::NodeProto& node, int64_t opset,
                                          const std::string& attr);

// The operator text's dependencies between attributes: `attr` of `op` has an effect only when
// attribute `on` (its effective value) is one of `relevant`.
struct AttrDependency {
  std::string op;
  std::string attr;
  std::string on;
  std::vector<std::string> relevant;
};
const std::vector<AttrDependency>& AttrDependencies();

// Equality as an attribute compares: numbers as float32 (the attribute's storage), lists element
// by element (a one-element list stands for the same value on every axis), strings exactly.
bool SameAttrValue(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace porttool::decide
