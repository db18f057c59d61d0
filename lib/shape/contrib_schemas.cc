// Schemas for ONNX Runtime contrib ops (domain com.microsoft) whose output has the shape and type
// of their first input. ONNX's registry does not know them, so without these schemas shape
// inference stops at the first Gelu a PyTorch export or an ORT optimizer left in the graph, and
// everything downstream stays unknown.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "lib/shape/infer.h"

namespace porttool::shape {
namespace {

constexpr const char* kMsDomain = "com.microsoft";

struct ElementwiseContribOp {
  const char* name;
  const char* doc;
  int extra_inputs;        // optional inputs after X (bias, ...), same type as X
  const char* float_attr;  // an optional float attribute, or nullptr
};

// Trivially elementwise: Y has X's shape and type.
constexpr ElementwiseContribOp kElementwiseOps[] = {
    {"Gelu", "Gelu(X) = 0.5 X (1 + erf(X / sqrt(2)))", 0, nullptr},
    {"FastGelu", "tanh approximation of Gelu(X + bias)", 1, nullptr},
    {"QuickGelu", "X * Sigmoid(alpha * X)", 0, "alpha"},
    {"BiasGelu", "Gelu(A + B), B broadcast along the last axis", 1, nullptr},
    {"BiasAdd", "X + bias + skip", 2, nullptr},
};

void RegisterDomain() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count(kMsDomain) == 0) ranges.AddDomainToVersion(kMsDomain, 1, 1);
}

void RegisterElementwise(const ElementwiseContribOp& op) {
  if (onnx::OpSchemaRegistry::Schema(op.name, 1, kMsDomain) != nullptr) return;
  onnx::OpSchema schema;
  schema.SetName(op.name)
      .SetDomain(kMsDomain)
      .SinceVersion(1)
      .SetDoc(op.doc)
      .Input(0, "X", "input", "T")
      .Output(0, "Y", "output, shaped like X", "T")
      .TypeConstraint("T",
                      {"tensor(float)", "tensor(float16)", "tensor(double)", "tensor(bfloat16)"},
                      "floating-point tensors")
      .TypeAndShapeInferenceFunction(onnx::propagateShapeAndTypeFromFirstInput);
  for (int i = 0; i < op.extra_inputs; ++i) {
    // BiasGelu's bias is required by ORT; declaring all extras optional keeps the checker lenient.
    schema.Input(i + 1, "extra" + std::to_string(i), "bias-like input", "T",
                 onnx::OpSchema::Optional);
  }
  if (op.float_attr) {
    schema.Attr(op.float_attr, "scale", onnx::AttributeProto::FLOAT, /*required=*/false);
  }
  onnx::RegisterSchema(std::move(schema));
}

}  // namespace

void RegisterContribSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterDomain();
    for (const auto& op : kElementwiseOps) RegisterElementwise(op);
    GuardInferenceRanks();
  });
}

}  // namespace porttool::shape
