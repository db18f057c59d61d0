// Shapes that static inference cannot see, observed by running the model once. ONNX 1.12's data
// propagation stops at ops such as Cast inside shape computations (PP-OCR cls: Shape -> Cast ->
// Slice -> Cast -> Concat -> Reshape), leaving later tensors unknown even though every input dim
// is pinned. The executor computes them exactly: run once on zero-filled inputs and record the
// shape of every produced tensor. Shapes that depend on input values (NonZero, TopK with a
// data-dependent k) would only hold for that input, so such models are left as they are.
#pragma once

#include <string>
#include <vector>

#include "lib/io/model.h"

namespace porttool::runtime {

// Adds value_info for every main-graph tensor that has no fully static shape, from one execution
// on zero inputs (all graph inputs must be static). Returns the tensors it filled.
std::vector<std::string> CompleteShapesByExecution(io::Model& model);

}  // namespace porttool::runtime
