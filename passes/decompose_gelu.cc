// decompose-gelu: replaces Gelu variants by standard ONNX ops, removing the custom domain.
//
// Before: y = com.microsoft.Gelu(x)
// After:  y = Mul(Mul(x, Add(Erf(Div(x, 1.41421356)), 1)), 0.5)          (exact, Erf form)
// FastGelu(x, bias?) -> the tanh form on x (+ bias); QuickGelu(x)<alpha> -> x * Sigmoid(alpha x);
// ONNX Gelu<approximate=none|tanh> -> the Erf or tanh form.
// Preconditions: float32 input (or unknown type); the node is in the main graph. When no node of
// com.microsoft is left, its opset_import is removed, so targets without contrib ops accept it.
// Why: NPU converters (RKNN, Vela) have no contrib ops; this is the "go through ONNX" remedy for
// the GELU that `decide` reports. Tolerance: the executor's contrib kernels compute the same
// formulas; float rounding only (about 1e-6).
#include "passes/decompose_gelu.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"

namespace porttool::passes {
namespace {

constexpr char kMs[] = "com.microsoft";

std::optional<std::string> WhyNotFloat(const ir::GraphView& view, const std::string& x) {
  const auto* vi = view.ValueInfo(x);
  if (vi && vi->type().tensor_type().elem_type() != 0 &&
      vi->type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return "input '" + x + "' is not float32";
  }
  return std::nullopt;
}

std::vector<onnx::NodeProto> Decompose(onnx::GraphProto& graph, ir::NameGenerator& names,
                                       const onnx::NodeProto& node) {
  NodeEmitter e(graph, names, node.name().empty() ? node.op_type() : node.name());
  const std::string& x = node.input(0);
  const std::string& y = node.output(0);
  if (node.op_type() == "QuickGelu") {
    auto ax = e.Op("Mul", {x, e.Scalar(AttrFloat(node, "alpha", 1.702f))});
    e.Op("Mul", {x, e.Op("Sigmoid", {ax})}, y);
  } else if (node.op_type() == "FastGelu") {
    std::string in = x;
    if (node.input_size() > 1 && !node.input(1).empty()) in = e.Op("Add", {x, node.input(1)});
    EmitTanhGelu(e, in, y);
  } else if (AttrString(node, "approximate", "none") == "tanh") {
    EmitTanhGelu(e, x, y);
  } else {
    EmitErfGelu(e, x, y);
  }
  return std::move(e.nodes());
}

}  // namespace

bool IsGeluNode(const onnx::NodeProto& node) {
  if (node.domain() == kMs) {
    return node.op_type() == "Gelu" || node.op_type() == "FastGelu" ||
           node.op_type() == "QuickGelu";
  }
  return ir::IsOnnxDomain(node.domain()) && node.op_type() == "Gelu";
}

void EmitErfGelu(NodeEmitter& e, const std::string& x, const std::string& output) {
  auto scaled = e.Op("Div", {x, e.Scalar(static_cast<float>(M_SQRT2))});
  auto erf1 = e.Op("Add", {e.Op("Erf", {scaled}), e.Scalar(1.0f)});
  e.Op("Mul", {e.Op("Mul", {x, erf1}), e.Scalar(0.5f)}, output);
}

void EmitTanhGelu(NodeEmitter& e, const std::string& x, const std::string& output) {
  auto cube = e.Op("Mul", {e.Op("Mul", {x, x}), x});
  auto inner = e.Op("Add", {x, e.Op("Mul", {cube, e.Scalar(0.044715f)})});
  auto t = e.Op("Tanh", {e.Op("Mul", {inner, e.Scalar(static_cast<float>(std::sqrt(2 / M_PI)))})});
  auto one_plus = e.Op("Add", {t, e.Scalar(1.0f)});
  e.Op("Mul", {e.Op("Mul", {x, one_plus}), e.Scalar(0.5f)}, output);
}

PassResult DecomposeGeluPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  std::vector<int> matches;
  {
    ir::GraphView view(graph);
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& node = view.node(i);
      if (!IsGeluNode(node)) continue;
      if (auto why = WhyNotFloat(view, node.input(0))) {
        result.notes.push_back(SkipNote(node, *why));
      } else {
        matches.push_back(i);
      }
    }
  }
  ir::NameGenerator names(graph);
  std::map<int, std::vector<onnx::NodeProto>> replacements;
  for (int i : matches) {
    const auto& node = graph.node(i);
    replacements[i] = Decompose(graph, names, node);
    result.notes.push_back(fmt::format("decomposed {} '{}' into {} standard ops", node.op_type(),
                                       node.name(), replacements[i].size()));
  }
  ReplaceNodes(graph, replacements);
  result.changes = static_cast<int>(matches.size());
  if (ir::DropUnusedOpsetImport(model.proto, kMs)) {
    result.notes.push_back("no com.microsoft op left: removed its opset_import");
  }
  return result;
}

}  // namespace porttool::passes
