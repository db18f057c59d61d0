// Registers the {{Op|c_comment}} schema, builds a one-node model with the shapes of node {{node|c_comment}}, and
// checks that the ONNX checker accepts it and shape inference infers the output shape.
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

void Register{{Sym}}Schema();

int main() {
  Register{{Sym}}Schema();
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  opset = model.add_opset_import();
  opset->set_domain("{{domain|c_string}}");
  opset->set_version({{version}});
  auto* g = model.mutable_graph();
  g->set_name("schema_test");
  auto* node = g->add_node();
  node->set_op_type("{{Op|c_string}}");
  node->set_domain("{{domain|c_string}}");
{{test_inputs}}  node->add_output("y");
  int failed = 0;
  const onnx::TypeProto* inferred = nullptr;
  try {
    onnx::shape_inference::InferShapes(model);
    for (const auto& vi : g->value_info()) {
      if (vi.name() == "y") inferred = &vi.type();
    }
    if (inferred == nullptr) throw std::runtime_error("no type inferred for the output");
    auto* out = g->add_output();
    out->set_name("y");
    *out->mutable_type() = *inferred;
    g->clear_value_info();
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::printf("schema: %s\n", e.what());
    failed = 1;
  }
  const std::vector<long long> want = {{{want_dims}}};
  if (!failed) {
    const auto& shape = g->output(0).type().tensor_type().shape();
    failed = shape.dim_size() != static_cast<int>(want.size());
    for (int i = 0; !failed && i < shape.dim_size(); ++i) {
      failed = shape.dim(i).dim_value() != want[i];
    }
    std::printf("inferred output rank %d\n", shape.dim_size());
  }
  std::printf("%d passed, %d failed\n", 1 - failed, failed);
  return failed;
}
