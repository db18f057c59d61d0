// Evaluating one node on constant inputs with the built-in kernels, outside a Session: what
// constant folding needs (passes reach it through their Evaluator interface, so the executor never
// depends on passes). The numerics are the executor's, so a folded model computes what the
// original computed when run by porttool.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

// Why the node cannot be evaluated on its own (no kernel for its domain/op/opset, a subgraph
// attribute), or nullopt when EvaluateNode can run it.
std::optional<std::string> WhyNotEvaluable(const onnx::NodeProto& node, int opset);

// Runs the node's kernel at `opset` (the model's version of the node's domain). `inputs` has one
// entry per node input; nullptr marks an absent optional input. `model` resolves external data in
// attributes and may be null. Returns one tensor per node output (empty for unnamed outputs).
// Throws Error(kBadInput) naming the node when it cannot be evaluated.
std::vector<Tensor> EvaluateNode(const onnx::NodeProto& node, int opset,
                                 const std::vector<const Tensor*>& inputs,
                                 const io::Model* model = nullptr);

}  // namespace porttool::runtime
