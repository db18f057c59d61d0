// constant-to-initializer: Constant nodes become initializers of the same name.
//
// Before: k = Constant<value = float[4] {...}>(); y = Mul(x, k)
// After:  y = Mul(x, k)        [k: an initializer]
//
// Preconditions: the Constant's output is not a graph output, and its value is dense (every
// value_* form converts; sparse_value is kept with a note). Subgraph bodies are converted into
// their own initializers.
// Why: many vendor converters and runtimes look for weights among initializers only, and a
// Constant node counts as a layer in their reports.
#include "passes/constant_to_initializer.h"

#include <fmt/format.h>

#include <set>

#include "lib/ir/constants.h"
#include "lib/ir/rewrite.h"

namespace porttool::passes {

int ConstantsToInitializers(onnx::GraphProto& root, std::vector<std::string>& notes) {
  int changes = 0;
  ir::ForEachGraph(root, [&](onnx::GraphProto& graph) {
    std::set<std::string> outputs;
    for (const auto& o : graph.output()) outputs.insert(o.name());
    std::vector<bool> remove(graph.node_size(), false);
    std::vector<onnx::TensorProto> values;
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& node = graph.node(i);
      if (!ir::IsConstantNode(node)) continue;
      if (outputs.count(node.output(0))) {
        notes.push_back("kept Constant '" + node.name() + "': its output is a graph output");
        continue;
      }
      auto value = ir::ConstantNodeValue(node);
      if (!value) {
        notes.push_back("kept Constant '" + node.name() + "': sparse or missing value");
        continue;
      }
      values.push_back(std::move(*value));
      remove[i] = true;
    }
    for (auto& v : values) {
      std::string name = v.name();
      ir::AddInitializer(graph, std::move(v), name);
    }
    changes += ir::RemoveNodes(graph, remove);
  });
  return changes;
}

PassResult ConstantToInitializerPass::Run(io::Model& model, const PassOptions&,
                                          PassContext&) const {
  PassResult result;
  result.changes = ConstantsToInitializers(*model.proto.mutable_graph(), result.notes);
  if (result.changes) {
    result.notes.push_back(fmt::format("{} Constant node(s) became initializers", result.changes));
  }
  return result;
}

}  // namespace porttool::passes
