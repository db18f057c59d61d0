#include "lib/ir/extract.h"

#include <unordered_set>

#include "lib/ir/graph_view.h"
#include "lib/ir/split.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::ir {
namespace {

bool IsTensor(const GraphView& view, const std::string& name) {
  return view.Producer(name) >= 0 || view.Initializer(name) || view.GraphInput(name);
}

std::vector<std::string> TensorNames(const GraphView& view) {
  std::vector<std::string> names;
  for (const auto& i : view.graph().input()) names.push_back(i.name());
  for (const auto& t : view.graph().initializer()) names.push_back(t.name());
  for (const auto& node : view.graph().node()) {
    for (const auto& out : node.output()) names.push_back(out);
  }
  return names;
}

void CheckTensorNames(const GraphView& view, const std::vector<std::string>& names,
                      const char* option) {
  if (names.empty()) ThrowUsage("at least one tensor is needed as {}", option);
  for (const auto& name : names) {
    if (IsTensor(view, name)) continue;
    auto closest = util::ClosestNames(name, TensorNames(view));
    throw Error(
        ErrorKind::kUsage,
        fmt::format("no tensor named '{}' in the graph (asked for as {}){}", name, option,
                    closest.empty() ? "" : "; closest tensor names: " + util::Join(closest, ", ")),
        {}, name);
  }
}

// Marks the nodes `output` depends on, stopping at `inputs`; throws naming the first tensor
// that is neither an input, an initializer nor computable.
void MarkNeeded(const GraphView& view, const std::string& output,
                const std::unordered_set<std::string>& inputs, std::vector<bool>& needed,
                std::unordered_set<std::string>& visited) {
  std::vector<std::string> stack{output};
  while (!stack.empty()) {
    std::string tensor = std::move(stack.back());
    stack.pop_back();
    if (inputs.count(tensor) || !visited.insert(tensor).second) continue;
    int p = view.Producer(tensor);
    if (p < 0) {
      if (view.Initializer(tensor)) continue;
      throw Error(ErrorKind::kUsage,
                  fmt::format("output '{}' is not reachable from the given inputs: it needs "
                              "'{}', which is {}; add it to the inputs",
                              output, tensor,
                              view.GraphInput(tensor) ? "a graph input not among them"
                                                      : "defined nowhere in the graph"),
                  "", tensor);
    }
    if (needed[p]) continue;
    needed[p] = true;
    for (const auto& name : view.NodeReads(p)) stack.push_back(name);
  }
}

}  // namespace

io::Model ExtractSubgraph(const io::Model& model, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, std::vector<std::string>* notes,
                          const TypeInferenceFn& infer) {
  GraphView view(model.proto.graph());
  // No inputs is allowed: a part computed from initializers and Constant nodes alone.
  for (const auto& name : inputs) CheckTensorNames(view, {name}, "an input");
  CheckTensorNames(view, outputs, "an output");
  std::unordered_set<std::string> input_set(inputs.begin(), inputs.end());
  std::vector<bool> needed(view.node_count(), false);
  std::unordered_set<std::string> visited;
  for (const auto& out : outputs) MarkNeeded(view, out, input_set, needed, visited);

  SubModelSpec spec;
  spec.inputs = inputs;
  spec.outputs = outputs;
  for (int index : view.TopoOrder()) {
    if (needed[index]) spec.nodes.push_back(index);
  }
  TensorTypes types(model, view, infer);
  return BuildSubModel(model, view, spec, types, notes);
}

}  // namespace porttool::ir
