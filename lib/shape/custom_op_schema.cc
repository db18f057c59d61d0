#include "lib/shape/custom_op_schema.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "lib/io/input_file.h"
#include "lib/ir/dtype.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"

namespace porttool::shape {
namespace {

using nlohmann::json;

constexpr std::pair<int32_t, const char*> kAttributeTypes[] = {
    {onnx::AttributeProto::FLOAT, "float"},   {onnx::AttributeProto::INT, "int"},
    {onnx::AttributeProto::STRING, "string"}, {onnx::AttributeProto::FLOATS, "floats"},
    {onnx::AttributeProto::INTS, "ints"},
};

// Reads doc[key] as T, or throws naming origin and the JSON pointer.
template <typename T>
T Field(const json& doc, const std::string& pointer, const std::string& key,
        const std::string& origin, std::optional<T> fallback = std::nullopt) {
  if (!doc.is_object() || !doc.contains(key)) {
    if (fallback) return *fallback;
    ThrowBadInput("{}: missing field {}/{}", origin, pointer, key);
  }
  try {
    return doc.at(key).get<T>();
  } catch (const json::exception&) {
    ThrowBadInput("{}: field {}/{} has the wrong type ({})", origin, pointer, key,
                  doc.at(key).type_name());
  }
}

json TensorToJson(const CustomOpTensor& t) {
  return {{"name", t.name},
          {"dtype", ir::DtypeName(t.dtype)},
          {"rank", t.rank},
          {"shape", t.shape},
          {"optional", t.optional}};
}

CustomOpTensor TensorFromJson(const json& doc, const std::string& pointer,
                              const std::string& origin) {
  CustomOpTensor t;
  t.name = Field<std::string>(doc, pointer, "name", origin);
  auto dtype = Field<std::string>(doc, pointer, "dtype", origin);
  auto parsed = ir::DtypeFromName(dtype);
  if (!parsed) ThrowBadInput("{}: {}/dtype '{}' is not an ONNX type name", origin, pointer, dtype);
  t.dtype = *parsed;
  t.rank = Field<int>(doc, pointer, "rank", origin, -1);
  t.shape = Field<std::vector<int64_t>>(doc, pointer, "shape", origin, std::vector<int64_t>{});
  t.optional = Field<bool>(doc, pointer, "optional", origin, false);
  return t;
}

std::vector<CustomOpTensor> TensorsFromJson(const json& doc, const std::string& key,
                                            const std::string& origin) {
  auto list = Field<json>(doc, "", key, origin);
  if (!list.is_array() || list.empty())
    ThrowBadInput("{}: /{} must be a non-empty list", origin, key);
  std::vector<CustomOpTensor> out;
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(TensorFromJson(list[i], fmt::format("/{}/{}", key, i), origin));
  }
  return out;
}

int32_t AttributeTypeFromName(const std::string& name, const std::string& where) {
  for (const auto& [type, text] : kAttributeTypes) {
    if (name == text) return type;
  }
  ThrowBadInput("{}: attribute type '{}' is not one of float, int, string, floats, ints", where,
                name);
}

const char* TypeConstraintFor(int32_t dtype) {
  switch (dtype) {
    case onnx::TensorProto::FLOAT:
      return "tensor(float)";
    case onnx::TensorProto::FLOAT16:
      return "tensor(float16)";
    case onnx::TensorProto::DOUBLE:
      return "tensor(double)";
    case onnx::TensorProto::INT8:
      return "tensor(int8)";
    case onnx::TensorProto::UINT8:
      return "tensor(uint8)";
    case onnx::TensorProto::INT32:
      return "tensor(int32)";
    case onnx::TensorProto::INT64:
      return "tensor(int64)";
    case onnx::TensorProto::BOOL:
      return "tensor(bool)";
    default:
      ThrowBadInput("custom op: dtype {} is not supported in op.json", ir::DtypeName(dtype));
  }
}

// The inference function: shapes come from the spec, never from guesses, so shapes computed
// here agree with what the kernel writes.
onnx::InferenceFunction InferenceFor(const CustomOpSpec& spec) {
  return [spec](onnx::InferenceContext& ctx) {
    for (size_t i = 0; i < spec.outputs.size() && i < ctx.getNumOutputs(); ++i) {
      const auto& out = spec.outputs[i];
      if (spec.shape_rule == "same_as_input") {
        onnx::propagateElemTypeFromInputToOutput(ctx, spec.shape_input, i);
        if (onnx::hasInputShape(ctx, spec.shape_input)) {
          onnx::propagateShapeFromInputToOutput(ctx, spec.shape_input, i);
        }
        continue;
      }
      onnx::updateOutputElemType(ctx, i, out.dtype);
      auto* shape = onnx::getOutputShape(ctx, i);
      shape->clear_dim();
      for (int64_t d : out.shape) shape->add_dim()->set_dim_value(d);
    }
  };
}

}  // namespace

std::string AttributeTypeName(int32_t type) {
  for (const auto& [t, text] : kAttributeTypes) {
    if (t == type) return text;
  }
  return "unsupported";
}

json OpSpecToJson(const CustomOpSpec& spec) {
  json doc = {
      {"format_version", kOpSpecFormatVersion},
      {"domain", spec.domain},
      {"op_type", spec.op_type},
      {"since_version", spec.since_version},
      {"symbol", spec.symbol},
      {"kernel", spec.kernel},
      {"layout", spec.layout},
      {"inputs", json::array()},
      {"outputs", json::array()},
      {"attributes", json::array()},
      {"shape_rule", {{"kind", spec.shape_rule}, {"input", spec.shape_input}}},
      {"source",
       {{"model", spec.source_model}, {"sha256", spec.source_sha256}, {"node", spec.source_node}}}};
  for (const auto& t : spec.inputs) doc["inputs"].push_back(TensorToJson(t));
  for (const auto& t : spec.outputs) doc["outputs"].push_back(TensorToJson(t));
  for (const auto& a : spec.attributes) {
    doc["attributes"].push_back(
        {{"name", a.name}, {"type", AttributeTypeName(a.type)}, {"default", a.default_value}});
  }
  return doc;
}

CustomOpSpec OpSpecFromJson(const json& doc, const std::string& origin) {
  if (!doc.is_object()) ThrowBadInput("{}: expected a JSON object", origin);
  int version = Field<int>(doc, "", "format_version", origin);
  if (version != kOpSpecFormatVersion) {
    ThrowBadInput("{}: /format_version is {}, this porttool reads {} (re-run scaffold-op)", origin,
                  version, kOpSpecFormatVersion);
  }
  CustomOpSpec spec;
  spec.domain = Field<std::string>(doc, "", "domain", origin);
  spec.op_type = Field<std::string>(doc, "", "op_type", origin);
  spec.since_version = Field<int>(doc, "", "since_version", origin, 1);
  spec.symbol = Field<std::string>(doc, "", "symbol", origin);
  spec.kernel = Field<std::string>(doc, "", "kernel", origin);
  spec.layout = Field<std::string>(doc, "", "layout", origin, std::string("NCHW"));
  spec.inputs = TensorsFromJson(doc, "inputs", origin);
  spec.outputs = TensorsFromJson(doc, "outputs", origin);
  auto attrs = Field<json>(doc, "", "attributes", origin, json::array());
  for (size_t i = 0; i < attrs.size(); ++i) {
    std::string pointer = fmt::format("/attributes/{}", i);
    CustomOpAttribute a;
    a.name = Field<std::string>(attrs[i], pointer, "name", origin);
    a.type = AttributeTypeFromName(Field<std::string>(attrs[i], pointer, "type", origin),
                                   origin + " " + pointer + "/type");
    a.default_value = attrs[i].value("default", json());
    spec.attributes.push_back(std::move(a));
  }
  auto rule = Field<json>(doc, "", "shape_rule", origin);
  spec.shape_rule = Field<std::string>(rule, "/shape_rule", "kind", origin);
  spec.shape_input = Field<int>(rule, "/shape_rule", "input", origin, 0);
  if (spec.shape_rule != "same_as_input" && spec.shape_rule != "static") {
    ThrowBadInput("{}: /shape_rule/kind '{}' must be same_as_input or static", origin,
                  spec.shape_rule);
  }
  if (spec.shape_input < 0 || spec.shape_input >= static_cast<int>(spec.inputs.size())) {
    ThrowBadInput("{}: /shape_rule/input {} is not an input index", origin, spec.shape_input);
  }
  auto source = Field<json>(doc, "", "source", origin, json::object());
  spec.source_model = source.value("model", "");
  spec.source_sha256 = source.value("sha256", "");
  spec.source_node = source.value("node", "");
  return spec;
}

CustomOpSpec ReadOpSpec(const std::filesystem::path& dir) {
  auto path = dir / "op.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    ThrowBadInput("{}: cannot read (is {} a scaffold-op package?)", path.string(), dir.string());
  std::istringstream in(io::ReadInputFile(path, "custom-op schema"));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    ThrowBadInput("{}: not valid JSON: {}", path.string(), e.what());
  }
  return OpSpecFromJson(doc, path.string());
}

void RegisterCustomOpSchema(const CustomOpSpec& spec) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  RegisterContribSchemas();  // never shadow porttool's own contrib schemas
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count(spec.domain) == 0) {
    ranges.AddDomainToVersion(spec.domain, 1, std::max(spec.since_version, 1));
  }
  if (onnx::OpSchemaRegistry::Schema(spec.op_type, spec.since_version, spec.domain)) return;
  onnx::OpSchema schema;
  schema.SetName(spec.op_type)
      .SetDomain(spec.domain)
      .SinceVersion(spec.since_version)
      .SetDoc("Scaffolded by porttool scaffold-op");
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& t = spec.inputs[i];
    std::string type = "T" + std::to_string(i);
    schema.Input(static_cast<int>(i), t.name, "", type,
                 t.optional ? onnx::OpSchema::Optional : onnx::OpSchema::Single);
    schema.TypeConstraint(type, {TypeConstraintFor(t.dtype)}, "");
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    std::string type = "O" + std::to_string(i);
    schema.Output(static_cast<int>(i), spec.outputs[i].name, "", type);
    schema.TypeConstraint(type, {TypeConstraintFor(spec.outputs[i].dtype)}, "");
  }
  for (const auto& a : spec.attributes) {
    schema.Attr(a.name, "", static_cast<onnx::AttributeProto::AttributeType>(a.type),
                /*required=*/false);
  }
  schema.TypeAndShapeInferenceFunction(InferenceFor(spec));
  try {
    onnx::RegisterSchema(std::move(schema));
  } catch (const std::exception& e) {
    ThrowBadInput("custom op {}::{}: libonnx rejected its schema: {}", spec.domain, spec.op_type,
                  e.what());
  }
}

void CheckModelAgainstSpec(const onnx::ModelProto& model, const CustomOpSpec& spec,
                           const std::string& origin) {
  std::set<std::string> known;
  for (const auto& a : spec.attributes) known.insert(a.name);
  size_t required = 0;
  for (const auto& t : spec.inputs) required += t.optional ? 0 : 1;
  auto domain = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  for (const auto& node : model.graph().node()) {
    if (node.op_type() != spec.op_type || domain(node.domain()) != domain(spec.domain)) continue;
    auto fail = [&](const std::string& what) {
      throw Error(ErrorKind::kBadInput,
                  fmt::format("node '{}' ({}::{}) disagrees with {}: {}", node.name(), spec.domain,
                              spec.op_type, origin, what),
                  node.name());
    };
    if (static_cast<size_t>(node.input_size()) > spec.inputs.size() ||
        static_cast<size_t>(node.input_size()) < required) {
      fail(fmt::format("{} inputs, op.json declares {} ({} required)", node.input_size(),
                       spec.inputs.size(), required));
    }
    if (static_cast<size_t>(node.output_size()) > spec.outputs.size()) {
      fail(fmt::format("{} outputs, op.json declares {}", node.output_size(), spec.outputs.size()));
    }
    for (const auto& a : node.attribute()) {
      if (!known.count(a.name())) fail(fmt::format("attribute '{}' is not in op.json", a.name()));
    }
  }
}

}  // namespace porttool::shape
