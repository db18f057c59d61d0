// RuntimeEvaluator: the Evaluator that passes are handed by default, backed by the reference
// executor's kernels (lib/runtime/node_evaluator.h). It lives in passes so that the executor
// never depends on passes.
#pragma once

#include "passes/pass.h"

namespace porttool::passes {

class RuntimeEvaluator : public Evaluator {
 public:
  std::optional<std::string> WhyNot(const onnx::NodeProto& node, int opset) const override;
  std::vector<onnx::TensorProto> Evaluate(
      const io::Model& model, const onnx::NodeProto& node, int opset,
      const std::vector<const onnx::TensorProto*>& inputs) const override;
};

}  // namespace porttool::passes
