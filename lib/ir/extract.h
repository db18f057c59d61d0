// Extract: the minimal sub-model that computes the given output tensors from the given input
// tensors, with the semantics of python onnx's `onnx.utils.extract_model` (nodes reachable
// backwards from the outputs, stopping at the inputs; initializers they read are carried), but
// without reading or inlining weights: external tensors keep their location/offset/length.
// It shares the sub-model builder with split (lib/ir/split.h).
#pragma once

#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/split.h"

namespace porttool::ir {

// Throws Error(kUsage) for a name that is no tensor of the graph (listing the closest names) and
// when an output cannot be computed from the inputs and initializers, naming the output and the
// missing tensor it depends on. Warnings (e.g. a boundary without a known type) go to `notes`.
// `infer` completes boundary types the model does not record (see TypeInferenceFn).
io::Model ExtractSubgraph(const io::Model& model, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs,
                          std::vector<std::string>* notes = nullptr,
                          const TypeInferenceFn& infer = nullptr);

}  // namespace porttool::ir
