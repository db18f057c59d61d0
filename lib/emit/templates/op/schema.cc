// ONNX schema for {{domain}}::{{Op}}, scaffolded by porttool scaffold-op (source sha256
// {{sha256}}). Call Register{{Sym}}Schema() once before onnx::checker::check_model or
// onnx::shape_inference::InferShapes so both accept the op and shapes flow through it.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

void Register{{Sym}}Schema() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count("{{domain}}") == 0) ranges.AddDomainToVersion("{{domain}}", 1, {{version}});
  if (onnx::OpSchemaRegistry::Schema("{{Op}}", {{version}}, "{{domain}}") != nullptr) return;
  onnx::OpSchema schema;
  schema.SetName("{{Op}}").SetDomain("{{domain}}").SinceVersion({{version}});
{{schema_io}}  schema.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
{{schema_infer}}  });
  onnx::RegisterSchema(std::move(schema));
}
