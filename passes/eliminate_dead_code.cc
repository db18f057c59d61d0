// eliminate-dead-code: removes nodes whose outputs nothing reads.
//
// Before: y = Relu(x); unused = Neg(x)      (graph output: y)
// After:  y = Relu(x)
//
// Preconditions: none; a node is dead when no node, subgraph capture or graph output reads any of
// its outputs (repeated until none is left). Subgraph bodies are left as they are.
// Why: cuts, folds and fusions leave orphans behind, and converters count or reject them.
#include "passes/eliminate_dead_code.h"

#include <fmt/format.h>

#include <map>

#include "lib/ir/rewrite.h"

namespace porttool::passes {

PassResult EliminateDeadCodePass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  std::map<std::string, int> removed;
  for (const auto& op : ir::RemoveDeadNodes(*model.proto.mutable_graph())) ++removed[op];
  for (const auto& [op, n] : removed) {
    result.notes.push_back(fmt::format("removed {} dead {} node(s)", n, op));
    result.changes += n;
  }
  return result;
}

}  // namespace porttool::passes
