// ONNX schema for {{domain|c_comment}}::{{Op|c_comment}}, scaffolded by porttool scaffold-op (source sha256
// {{sha256}}). Call Register{{Sym}}Schema() once before onnx::checker::check_model or
// onnx::shape_inference::InferShapes so both accept the op and shapes flow through it.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

void Register{{Sym}}Schema() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count("{{domain|c_string}}") == 0) ranges.AddDomainToVersion("{{domain|c_string}}", 1, {{version}});
  if (onnx::OpSchemaRegistry::Schema("{{Op|c_string}}", {{version}}, "{{domain|c_string}}") != nullptr) return;
  onnx::OpSchema schema;
  schema.SetName("{{Op|c_string}}").SetDomain("{{domain|c_string}}").SinceVersion({{version}});
{{schema_io}}  schema.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
{{schema_infer}}  });
  onnx::RegisterSchema(std::move(schema));
}
