// The form every ONNX graph must have, checked at load so that no subcommand works on a graph
// that has none: each tensor has one producer (static single assignment) and the nodes can be
// ordered (no cycle). The hostile round found a graph with two producers of one tensor passing
// `run`, `kit`, `quantize-calibrate` and `emit-header` with exit 0 (and `compare M M` reporting it
// over tolerance against itself), and `infer-shapes` writing self-loop and Identity-cycle models.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace porttool::io {

// Error(kBadInput) naming the tensor and the nodes: a tensor produced by two nodes, or by a node
// and as a graph input or initializer; a cycle (naming a node on it). Subgraphs are checked the
// same way, with names from outer scopes taken as given.
void ValidateGraphForm(const onnx::GraphProto& graph, const std::string& where);

}  // namespace porttool::io
