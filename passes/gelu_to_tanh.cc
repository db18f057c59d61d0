// gelu-to-tanh: the exact Gelu replaced by its tanh approximation.
//
// Before: y = com.microsoft.Gelu(x)   or   y = Gelu(x) <approximate=none>
// After:  y = Mul(Mul(x, Add(Tanh(Mul(Add(x, Mul(x^3, 0.044715)), sqrt(2/pi))), 1)), 0.5)
//
// Preconditions: float32 input (or unknown type). FastGelu is already the tanh form; QuickGelu is
// another approximation and is left alone.
// Why: some NPUs have Tanh in hardware but no Erf; the approximation differs by at most the
// measured deviation the pass reports (about 4.7e-4 on [-8, 8]).
#include "passes/gelu_to_tanh.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "passes/decompose_gelu.h"

namespace porttool::passes {

double MaxTanhGeluDeviation(double lo, double hi, double step) {
  double worst = 0;
  for (double x = lo; x <= hi; x += step) {
    float xf = static_cast<float>(x);
    float exact = 0.5f * xf * (1.0f + std::erf(xf / static_cast<float>(M_SQRT2)));
    float inner = static_cast<float>(std::sqrt(2 / M_PI)) * (xf + 0.044715f * xf * xf * xf);
    float approx = 0.5f * xf * (1.0f + std::tanh(inner));
    worst = std::max(worst, static_cast<double>(std::fabs(exact - approx)));
  }
  return worst;
}

PassResult GeluToTanhPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  std::vector<int> matches;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (!IsGeluNode(node) || node.op_type() != "Gelu") continue;
    if (AttrString(node, "approximate", "none") == "tanh") continue;
    matches.push_back(i);
  }
  ir::NameGenerator names(graph);
  std::map<int, std::vector<onnx::NodeProto>> replacements;
  for (int i : matches) {
    const auto& node = graph.node(i);
    NodeEmitter e(graph, names, node.name().empty() ? "gelu" : node.name());
    EmitTanhGelu(e, node.input(0), node.output(0));
    replacements[i] = std::move(e.nodes());
    result.notes.push_back(fmt::format("'{}' now uses the tanh approximation", node.name()));
  }
  ReplaceNodes(graph, replacements);
  result.changes = static_cast<int>(matches.size());
  if (result.changes) {
    result.notes.push_back(fmt::format("max deviation from the exact Gelu on [-8, 8]: {:.3g}",
                                       MaxTanhGeluDeviation(-8, 8, 1e-3)));
    ir::DropUnusedOpsetImport(model.proto, "com.microsoft");
  }
  return result;
}

}  // namespace porttool::passes
