#include "lib/analysis/static_values.h"

#include <set>
#include <unordered_set>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"

namespace porttool::analysis {
namespace {

// Ops whose output differs between runs even with constant inputs.
const std::set<std::string> kNondeterministic = {"RandomNormal",  "RandomNormalLike",
                                                 "RandomUniform", "RandomUniformLike",
                                                 "Multinomial",   "Bernoulli"};

bool HasSubgraph(const onnx::NodeProto& node) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_g() || attr.graphs_size() > 0) return true;
  }
  return false;
}

}  // namespace

std::vector<bool> StaticValueNodes(
    const onnx::GraphProto& graph,
    const std::function<bool(const std::string&)>& has_static_shape) {
  ir::GraphView view(graph);
  std::vector<bool> out(graph.node_size(), false);
  std::vector<int> order;
  try {
    order = view.TopoOrder();
  } catch (const Error&) {
    return out;  // a cycle: claim nothing
  }
  std::unordered_set<std::string> known;
  for (const auto& t : graph.initializer()) known.insert(t.name());
  for (const auto* input : view.RealInputs()) known.erase(input->name());
  for (int i : order) {
    const auto& node = graph.node(i);
    if (!ir::IsOnnxDomain(node.domain()) || HasSubgraph(node) ||
        kNondeterministic.count(node.op_type())) {
      continue;
    }
    bool is_static;
    if ((node.op_type() == "Shape" || node.op_type() == "Size") && node.input_size() > 0) {
      is_static = has_static_shape(node.input(0));
    } else {
      is_static = true;
      for (const auto& in : node.input()) is_static &= in.empty() || known.count(in) > 0;
    }
    if (!is_static) continue;
    out[i] = true;
    for (const auto& o : node.output()) known.insert(o);
  }
  return out;
}

}  // namespace porttool::analysis
