#include "lib/runtime/shape_completion.h"

#include <fmt/format.h>

#include <map>

#include "lib/ir/node_names.h"
#include "lib/runtime/shapes_by_execution.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {

std::string ShapeCompletion::Summary() const {
  if (!dynamic_inputs.empty()) {
    return fmt::format("inputs with dynamic dims: {}", util::Join(dynamic_inputs, ", "));
  }
  if (unresolved.empty()) return "every tensor has a static shape";
  std::map<std::string, int> blocked;
  for (const auto& u : unresolved) ++blocked[u.node];
  const shape::UnresolvedTensor* root = &unresolved.front();
  for (const auto& u : unresolved) {
    if (u.root) {
      root = &u;
      break;
    }
  }
  std::string reason = root->reason.substr(0, root->reason.find(" (reached through the inputs"));
  std::string out = fmt::format("{} tensor(s) have no static shape: node {} blocks {} of them: {}",
                                unresolved.size(), ir::QuotedNodeLabel(root->node, root->op_type),
                                blocked[root->node], reason);
  if (blocked.size() > 1) out += fmt::format(" ({} blocking nodes in all)", blocked.size());
  if (!execution_error.empty()) {
    out += fmt::format("; running the model to measure them failed: {}", execution_error);
  }
  return out;
}

ShapeCompletion CompleteShapes(io::Model& model, const shape::InputShapes& pins,
                               const shape::InputValues& values, int max_iterations) {
  ShapeCompletion c;
  shape::InferOptions options;
  options.input_shapes = pins;
  options.input_values = values;
  options.max_iterations = max_iterations;
  c.inference = shape::InferShapes(model, options);
  c.dynamic_inputs = shape::DynamicInputDims(model);
  c.unresolved = c.inference.unresolved;
  if (c.unresolved.empty() || !c.dynamic_inputs.empty()) return c;
  try {
    c.by_execution = CompleteShapesByExecution(model);
  } catch (const Error& e) {
    c.execution_error = e.what();
  }
  if (c.by_execution.empty()) return c;
  shape::InferReport after = shape::DescribeShapes(model);
  c.inference.tensors_total = after.tensors_total;
  c.inference.tensors_static = after.tensors_static;
  c.inference.tensors_symbolic = after.tensors_symbolic;
  c.inference.unresolved = after.unresolved;
  c.unresolved = std::move(after.unresolved);
  return c;
}

}  // namespace porttool::runtime
