// topo-sort: reorders nodes into a topological order.
//
// Before: nodes stored as [Relu(b)->c, Conv(a)->b]   (a consumer before its producer)
// After:  nodes stored as [Conv(a)->b, Relu(b)->c]
//
// Preconditions: the graph has no cycle (a cycle is an error naming a node on it).
// Why: ONNX requires topological order; exporters and hand edits sometimes break it, and most
// runtimes and vendor converters then fail with obscure errors. Ties keep the original order, so
// an already sorted graph is left byte-identical.
#include "passes/topo_sort.h"

#include "lib/ir/graph_view.h"

namespace porttool::passes {

PassResult TopoSortPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto* graph = model.proto.mutable_graph();
  std::vector<int> order = ir::GraphView(*graph).TopoOrder();
  bool sorted = true;
  for (size_t i = 0; i < order.size(); ++i) sorted &= order[i] == static_cast<int>(i);
  if (sorted) return result;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> reordered;
  for (int index : order) reordered.Add()->Swap(graph->mutable_node(index));
  graph->mutable_node()->Swap(&reordered);
  result.changes = 1;
  result.notes.push_back("reordered " + std::to_string(order.size()) + " nodes topologically");
  return result;
}

}  // namespace porttool::passes
