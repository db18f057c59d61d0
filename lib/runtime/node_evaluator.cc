#include "lib/runtime/node_evaluator.h"

#include <fmt/format.h>

#include "lib/runtime/kernel.h"
#include "lib/util/error.h"

namespace porttool::runtime {

std::optional<std::string> WhyNotEvaluable(const onnx::NodeProto& node, int opset) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_g() || attr.graphs_size() > 0) return std::string("it has a subgraph");
  }
  if (KernelRegistry::Default().Find(node.domain(), node.op_type(), opset) == nullptr) {
    return fmt::format("no kernel for {}{} at opset {}",
                       node.domain().empty() ? "" : node.domain() + "::", node.op_type(), opset);
  }
  return std::nullopt;
}

std::vector<Tensor> EvaluateNode(const onnx::NodeProto& node, int opset,
                                 const std::vector<const Tensor*>& inputs, const io::Model* model) {
  if (auto why = WhyNotEvaluable(node, opset)) {
    throw Error(
        ErrorKind::kBadInput,
        fmt::format("cannot evaluate node '{}' ({}): {}", node.name(), node.op_type(), *why),
        node.name());
  }
  if (static_cast<int>(inputs.size()) != node.input_size()) {
    ThrowInternal("EvaluateNode: {} inputs given for node '{}' with {}", inputs.size(), node.name(),
                  node.input_size());
  }
  KernelContext ctx(node, opset, inputs);
  ctx.set_model(model);
  (*KernelRegistry::Default().Find(node.domain(), node.op_type(), opset))(ctx);
  return std::move(ctx.outputs());
}

}  // namespace porttool::runtime
