// Which nodes compute a value that is known before the model runs: a target's converter (RKNN
// Toolkit, Vela, ST Edge AI) folds them into constants, so they never reach its operator list.
// Static are initializers, Constant outputs, Shape/Size of a tensor whose shape is static, and
// the outputs of deterministic nodes whose every input is static (the Shape -> Cast -> Gather ->
// Concat -> Reshape-shape arithmetic exporters emit). This is structure only: no value is
// computed, so it also serves before constant folding has run (and stays true after it).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

namespace porttool::analysis {

// static_node[i] is true when every output of node i of `graph` is known at conversion time.
// `has_static_shape(name)` says whether a tensor's shape is fully static (after the caller's
// shape completion).
std::vector<bool> StaticValueNodes(const onnx::GraphProto& graph,
                                   const std::function<bool(const std::string&)>& has_static_shape);

}  // namespace porttool::analysis
