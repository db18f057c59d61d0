#include "passes/infer_shapes.h"

#include <fmt/format.h>

#include "lib/runtime/shape_completion.h"
#include "passes/input_shape_spec.h"

namespace porttool::passes {

PassResult InferShapesPass::Run(io::Model& model, const PassOptions& options, PassContext&) const {
  shape::InferOptions infer;
  if (options.Has("input-shape"))
    infer.input_shapes = ParseInputShapes({options.Get("input-shape")});
  infer.max_iterations = static_cast<int>(options.GetInt("max-iterations", 8));
  runtime::ShapeCompletion completion =
      runtime::CompleteShapes(model, infer.input_shapes, {}, infer.max_iterations);
  const shape::InferReport& report = completion.inference;
  PassResult result;
  result.changes = 0;  // annotations only: never a reason to run another fixed-point round
  result.notes.push_back(fmt::format("{} of {} tensors static, {} symbolic, {} unresolved",
                                     report.tensors_static, report.tensors_total,
                                     report.tensors_symbolic, report.unresolved.size()));
  if (!completion.by_execution.empty()) {
    result.notes.push_back(fmt::format("{} tensor shape(s) measured by one executor run",
                                       completion.by_execution.size()));
  }
  if (!completion.execution_error.empty()) {
    result.notes.push_back("running the model to measure shapes failed: " +
                           completion.execution_error);
  }
  for (const auto& u : report.unresolved) {
    result.notes.push_back(
        fmt::format("unresolved '{}' (node '{}', {}): {}", u.tensor, u.node, u.op_type, u.reason));
  }
  for (const auto& note : report.notes) result.notes.push_back(note);
  return result;
}

}  // namespace porttool::passes
