// Initializers that a model also lists as graph inputs (IR 3 exports, and IR 4+ exports such as
// PyTorch 1.2's that kept the habit). ONNX reads them as defaults a caller may override; porttool
// treats them as the initializers they are (no subcommand asks for their values, shape inference
// and the executor use them), `check` reports them and its fix drops them from the inputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace porttool::ir {

// Names of the initializers `graph` also lists as graph inputs, in graph-input order.
std::vector<std::string> InitializerInputs(const onnx::GraphProto& graph);

// Removes those names from the graph inputs (the initializers stay); returns them.
std::vector<std::string> DropInitializerInputs(onnx::GraphProto& graph);

}  // namespace porttool::ir
