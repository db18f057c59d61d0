// Multiply-accumulate counts per node, for the decision report's bottleneck step and its
// performance estimate: Conv, ConvTranspose, MatMul and Gemm (the ops that carry almost all the
// arithmetic of CNNs and transformers). Counts need static shapes of the node's inputs/outputs,
// which the caller supplies through a lookup (typically value_info after shape inference).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace porttool::analysis {

// Static dims of a tensor, or nullopt when unknown or symbolic.
using ShapeLookup = std::function<std::optional<std::vector<int64_t>>(const std::string&)>;

// Whether NodeMacs counts this op (default domain only).
bool CountsMacs(const onnx::NodeProto& node);

// MACs of one inference of `node`: nullopt when the op is not counted or a needed shape is
// unknown. Conv: output elements x (C/group) x kernel area; ConvTranspose: input elements x
// (M/group) x kernel area; MatMul: output elements x K; Gemm: M x N x K.
std::optional<uint64_t> NodeMacs(const onnx::NodeProto& node, const ShapeLookup& shape_of);

}  // namespace porttool::analysis
