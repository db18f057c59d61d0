// Constant lookup: the one answer to "is this tensor a constant, and what is its value?" shared by
// the passes, split, emit and decide. A constant is an initializer that is not also a graph input
// (a graph input with an initializer is only a default the caller may override), the output of a
// `Constant` node in the ONNX domain (every value_* form, converted to a TensorProto), or either
// of those reached through a chain of ONNX `Identity` nodes. Values are not read here: callers
// read bytes with io::ReadTensorBytes, so external weights stay mapped, not loaded.
#pragma once

#include <onnx/onnx_pb.h>

#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"

namespace porttool::ir {

// Whether the domain names the default ONNX operator set ("" or "ai.onnx").
bool IsOnnxDomain(const std::string& domain);

// Whether `graph` (not its subgraphs) has an ONNX-domain node of one of `op_types`. Passes that
// match by op type test this first: indexing a 10^5-node graph that has nothing to match costs
// far more than this scan.
bool HasOnnxOp(const onnx::GraphProto& graph, std::initializer_list<std::string_view> op_types);

// Whether `node` is an ONNX `Constant` node with one output.
bool IsConstantNode(const onnx::NodeProto& node);

// The value of a Constant node as a TensorProto named after its output: `value` as is, the
// value_float(s)/value_int(s)/value_string(s) forms converted. nullopt for sparse_value or a
// node without a value. Throws Error(kBadInput) naming the node for more than one value attribute.
std::optional<onnx::TensorProto> ConstantNodeValue(const onnx::NodeProto& node);

class ConstantLookup {
 public:
  // Indexes the constants of `view`'s graph; `view` must outlive the lookup.
  explicit ConstantLookup(const GraphView& view);

  // The constant value of `tensor`, or nullptr. The pointer stays valid while the lookup and the
  // graph live (converted Constant values are owned by the lookup).
  const onnx::TensorProto* Find(const std::string& tensor) const;
  bool IsConstant(const std::string& tensor) const { return Find(tensor) != nullptr; }
  // Every constant tensor name (initializers and Constant-node outputs, not Identity aliases).
  std::vector<std::string> Names() const;

 private:
  const GraphView& view_;
  std::unordered_map<std::string, const onnx::TensorProto*> direct_;
  std::deque<onnx::TensorProto> owned_;
};

// Small helpers for passes that need a constant's numbers (shape vectors, scales, BN params).
// nullopt when the tensor is not constant or its element type is not numeric.
std::optional<std::vector<double>> ConstantAsDoubles(const io::Model& model,
                                                     const onnx::TensorProto& tensor);

}  // namespace porttool::ir
