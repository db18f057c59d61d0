#include "passes/runtime_evaluator.h"

#include "lib/runtime/node_evaluator.h"
#include "lib/runtime/tensor_io.h"

namespace porttool::passes {

std::optional<std::string> RuntimeEvaluator::WhyNot(const onnx::NodeProto& node, int opset) const {
  return runtime::WhyNotEvaluable(node, opset);
}

std::vector<onnx::TensorProto> RuntimeEvaluator::Evaluate(
    const io::Model& model, const onnx::NodeProto& node, int opset,
    const std::vector<const onnx::TensorProto*>& inputs) const {
  std::vector<runtime::Tensor> values;
  values.reserve(inputs.size());
  for (const auto* proto : inputs) {
    values.push_back(proto ? runtime::TensorFromProto(model, *proto) : runtime::Tensor());
  }
  std::vector<const runtime::Tensor*> pointers;
  for (size_t i = 0; i < values.size(); ++i) pointers.push_back(inputs[i] ? &values[i] : nullptr);
  auto outputs = runtime::EvaluateNode(node, opset, pointers, &model);
  std::vector<onnx::TensorProto> protos(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].empty()) protos[i] = runtime::TensorToProto(outputs[i], node.output(i));
  }
  return protos;
}

const Evaluator& DefaultEvaluator() {
  static const RuntimeEvaluator evaluator;
  return evaluator;
}

const Evaluator& PassContext::evaluator_or_default() const {
  return evaluator ? *evaluator : DefaultEvaluator();
}

}  // namespace porttool::passes
