// The one shape-completion stage every subcommand that needs static shapes goes through
// (emit-header, decide, check --target, split): pin the user's input shapes, run ONNX static
// inference to a fixed point, and take what it leaves unknown from one executor run on zero
// inputs (ONNX 1.12 does not follow shape arithmetic through Cast/Slice, so a Reshape fed by
// Shape -> Cast -> Concat stays unknown although every input dim is pinned). What is still
// unknown afterwards is reported with the node that blocks it and why, so a message can point at
// that node instead of asking for shapes the user already gave.
#pragma once

#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/shape/infer.h"
#include "lib/shape/input_shapes.h"

namespace porttool::runtime {

struct ShapeCompletion {
  // Static inference's iterations and notes, with the counts and unknown tensors of the model as
  // the completion leaves it.
  shape::InferReport inference;
  std::vector<std::string> by_execution;            // tensors whose shape the executor supplied
  std::vector<shape::UnresolvedTensor> unresolved;  // still unknown after both
  std::vector<std::string> dynamic_inputs;          // "x[0]=N": inputs the pins left dynamic
  std::string execution_error;  // why the executor run failed (empty when it ran or was not needed)

  bool complete() const { return unresolved.empty() && dynamic_inputs.empty(); }
  // One sentence for error messages: the dynamic inputs, or the first root blocker with its
  // reason and how many tensors it leaves unknown, and the executor's error when it failed.
  std::string Summary() const;
};

// Pins `pins` on `model` (Error(kUsage) for a name that is not an input or a wrong rank), makes
// the inputs in `values` constants, infers shapes (at most `max_iterations` passes), and completes
// them by execution when every input is static. Writes the shapes into the model's value_info.
// Never throws for shapes it cannot complete: it reports them. Every subcommand that needs shapes
// (infer-shapes included) goes through this one function, so none sees fewer static shapes than
// another.
ShapeCompletion CompleteShapes(io::Model& model, const shape::InputShapes& pins,
                               const shape::InputValues& values = {},
                               int max_iterations = shape::InferOptions{}.max_iterations);

}  // namespace porttool::runtime
