// eliminate-identity: removes Identity and inference-mode Dropout nodes.
//
// Before: y = Identity(x); z = Relu(y)        d, mask = Dropout(x)  (mask unused)
// After:  z = Relu(x)                         (consumers of d read x)
//
// Preconditions (otherwise the node is kept and the reason recorded):
//   - the node's output is not a graph output (renaming it would change the model's interface);
//   - its output is not read from inside a subgraph (If/Loop bodies refer to it by name);
//   - Dropout: the mask output is unused and training_mode (opset >= 12 input) is absent, or is
//     an initializer equal to false.
// Why: exporters leave these in inference graphs; vendor converters count them as layers, some
// reject Dropout outright, and they block pattern matches of later rewrite passes.
#include "passes/eliminate_identity.h"

#include <fmt/format.h>

#include <optional>

#include "lib/io/model.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/util/error.h"

namespace porttool::passes {
namespace {

// Why `node` cannot be removed, or nullopt when it can.
std::optional<std::string> SkipReason(const io::Model& model, const ir::GraphView& view,
                                      const onnx::NodeProto& node) {
  if (node.input_size() < 1 || node.input(0).empty()) return "it has no data input";
  const std::string& out = node.output(0);
  if (view.IsGraphOutput(out)) return "its output '" + out + "' is a graph output";
  for (int consumer : view.Consumers(out)) {
    const auto& inputs = view.node(consumer).input();
    if (std::find(inputs.begin(), inputs.end(), out) == inputs.end()) {
      return "its output '" + out + "' is read inside a subgraph of '" +
             view.node(consumer).name() + "'";
    }
  }
  if (node.op_type() == "Dropout") {
    if (node.output_size() > 1 && !node.output(1).empty() &&
        (!view.Consumers(node.output(1)).empty() || view.IsGraphOutput(node.output(1)))) {
      return std::string("its mask output is used");
    }
    if (node.input_size() > 2 && !node.input(2).empty()) {
      const auto* t = view.Initializer(node.input(2));
      if (!t) return std::string("training_mode is not a constant");
      auto bytes = io::ReadTensorBytes(model, *t);
      if (bytes.bytes.empty() || bytes.bytes[0] != 0) return std::string("training_mode is true");
    }
  }
  return std::nullopt;
}

}  // namespace

PassResult EliminateIdentityPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto* graph = model.proto.mutable_graph();
  if (!ir::HasOnnxOp(*graph, {"Identity", "Dropout"})) return result;
  ir::GraphView view(*graph);
  // removed output -> (its source, the removed node's name)
  std::map<std::string, std::pair<std::string, std::string>> rename;
  std::vector<bool> remove(graph->node_size(), false);
  for (int i = 0; i < graph->node_size(); ++i) {
    const auto& node = graph->node(i);
    if (node.op_type() != "Identity" && node.op_type() != "Dropout") continue;
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    if (auto reason = SkipReason(model, view, node)) {
      result.notes.push_back("kept " + node.op_type() + " '" + node.name() + "': " + *reason);
      continue;
    }
    if (node.input(0) == node.output(0)) {
      throw Error(ErrorKind::kBadInput,
                  fmt::format("{} node '{}' reads and writes the same tensor '{}': the model is "
                              "malformed (a tensor cannot be its own source)",
                              node.op_type(), node.name(), node.output(0)),
                  node.name(), node.output(0));
    }
    remove[i] = true;
    rename[node.output(0)] = {node.input(0), node.name()};
  }
  // A chain longer than the number of removed nodes can only be a cycle (a = Identity(b),
  // b = Identity(a)): malformed input, reported instead of looping forever.
  auto source_of = [&](std::string name) {
    size_t steps = 0;
    for (auto it = rename.find(name); it != rename.end(); it = rename.find(name)) {
      if (++steps > rename.size()) {
        throw Error(ErrorKind::kBadInput,
                    fmt::format("Identity/Dropout nodes form a cycle through tensor '{}' (node "
                                "'{}'): the model is malformed",
                                name, it->second.second),
                    it->second.second, name);
      }
      name = it->second.first;
    }
    return name;
  };
  for (const auto& entry : rename) source_of(entry.first);  // a cycle fails before any edit
  for (int i = 0; i < graph->node_size(); ++i) {
    if (remove[i]) continue;
    for (auto& input : *graph->mutable_node(i)->mutable_input()) {
      if (!input.empty()) input = source_of(input);
    }
  }
  result.changes = ir::RemoveNodes(*graph, remove);
  if (result.changes) {
    result.notes.push_back("removed " + std::to_string(result.changes) + " Identity/Dropout nodes");
  }
  return result;
}

}  // namespace porttool::passes
