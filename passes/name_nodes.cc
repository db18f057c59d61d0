// name-nodes: gives every unnamed node a unique, stable name.
//
// Before: nodes [#0 (Conv) "", #1 (Relu) "", #2 (Relu) "Relu_1"]
// After:  nodes [Conv_0, Relu_1_1, Relu_2]     (Relu_1 was taken: suffixes until unique)
//
// Preconditions: none; named nodes keep their names, subgraph nodes are named after their
// position in their own body (after the top-level ones, so a top-level node's name never depends
// on what its bodies hold).
// Why: PyTorch 1.x exports name no node, so reports and vendor converters show blanks and a node
// can only be addressed by position ("#83"), which moves when a pass removes a node before it.
// A node's name is its position at the time of naming, so "#83 (Reshape)" becomes "Reshape_83".
#include "passes/name_nodes.h"

#include <fmt/format.h>

#include "lib/ir/node_names.h"

namespace porttool::passes {

PassResult NameNodesPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  result.changes = ir::NameUnnamedNodes(*model.proto.mutable_graph());
  if (result.changes > 0) {
    result.notes.push_back(fmt::format("named {} unnamed node(s) <op>_<position>", result.changes));
  }
  return result;
}

}  // namespace porttool::passes
