// Scaffolded custom operators, as porttool reads them back: `op.json` (written by `scaffold-op`)
// is the one description of a custom op — domain, type, inputs/outputs with dtype and rank,
// attributes with types and defaults, the output-shape rule — and this module turns it into an
// ONNX OpSchema in libonnx's registry, so the checker and shape inference accept the op and
// shapes flow through it. It also checks that a model's nodes of that op agree with the
// description, so a stale op.json is an error naming the node instead of a wrong answer later.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace porttool::shape {

inline constexpr int kOpSpecFormatVersion = 1;

struct CustomOpTensor {
  std::string name;
  int32_t dtype = onnx::TensorProto::FLOAT;
  int rank = -1;               // -1: any rank
  std::vector<int64_t> shape;  // as seen in the source model (static rule: the output shape)
  bool optional = false;
};

struct CustomOpAttribute {
  std::string name;
  int32_t type = onnx::AttributeProto::FLOAT;  // AttributeProto::AttributeType
  nlohmann::json default_value;                // null: required
};

struct CustomOpSpec {
  std::string domain;
  std::string op_type;
  int since_version = 1;
  std::string symbol;  // C identifier used for file and function names
  std::string kernel;  // formula id of a known op ("gelu", "relu", ...) or "skeleton"
  std::string layout = "NCHW";
  std::vector<CustomOpTensor> inputs;
  std::vector<CustomOpTensor> outputs;
  std::vector<CustomOpAttribute> attributes;
  // "same_as_input": every output has the type and shape of input `shape_input`;
  // "static": outputs have the shapes recorded in `outputs[i].shape`.
  std::string shape_rule = "same_as_input";
  int shape_input = 0;
  std::string source_model;  // file name of the model it was scaffolded from
  std::string source_sha256;
  std::string source_node;
};

nlohmann::json OpSpecToJson(const CustomOpSpec& spec);
// Throws Error(kBadInput) naming `origin` and the JSON pointer of the bad field.
CustomOpSpec OpSpecFromJson(const nlohmann::json& doc, const std::string& origin);
// Reads DIR/op.json. Throws Error(kBadInput) naming the file when missing or malformed.
CustomOpSpec ReadOpSpec(const std::filesystem::path& dir);

// Registers the op's domain and schema with libonnx (idempotent for the same spec). An op that
// already has a schema (e.g. com.microsoft::Gelu, registered by porttool itself) keeps it.
void RegisterCustomOpSchema(const CustomOpSpec& spec);

// Throws Error(kBadInput) naming the node and `origin` when a node of the spec's (domain, op)
// has more inputs or outputs than the spec declares, misses a required one, or carries an
// attribute the spec does not declare.
void CheckModelAgainstSpec(const onnx::ModelProto& model, const CustomOpSpec& spec,
                           const std::string& origin);

// ONNX attribute type names used in op.json: "float", "int", "string", "floats", "ints".
std::string AttributeTypeName(int32_t type);

}  // namespace porttool::shape
