// fuse-hardswish / decompose-hardswish: the two spellings of hard-swish, both ways.
//
// fuse:      h = HardSigmoid<alpha=1/6, beta=0.5>(x); y = Mul(x, h)   ->   y = HardSwish(x)
// decompose: y = HardSwish(x)   ->   h = HardSigmoid<alpha=1/6, beta=0.5>(x); y = Mul(x, h)
//
// Preconditions: fuse needs opset 14+ (HardSwish's first version; older models are reported, not
// changed), alpha within 1e-6 of 1/6 and beta 0.5, and h read by the Mul only. Both keep the
// output name. The Add -> Clip -> Div -> Mul spelling is not matched yet.
// Why: targets differ — some NPUs run HardSwish natively and split the pair into two layers,
// others lack HardSwish but have HardSigmoid. Tolerance: identical formulas (float rounding).
#include "passes/hardswish.h"

#include <fmt/format.h>

#include <cmath>
#include <variant>

#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

bool IsHardSwishSigmoid(const onnx::NodeProto& n) {
  return n.op_type() == "HardSigmoid" && ir::IsOnnxDomain(n.domain()) &&
         std::fabs(AttrFloat(n, "alpha", 0.2f) - 1.0f / 6) < 1e-6f &&
         AttrFloat(n, "beta", 0.5f) == 0.5f;
}

// The HardSigmoid node index feeding `mul` as x * HardSigmoid(x), or a reason.
std::variant<int, std::string> MatchMul(const ir::GraphView& view, int mul) {
  const auto& node = view.node(mul);
  if (node.input_size() != 2) return std::string("not binary");
  for (int side = 0; side < 2; ++side) {
    int h = view.Producer(node.input(side));
    if (h < 0 || !IsHardSwishSigmoid(view.node(h))) continue;
    if (view.node(h).input(0) != node.input(1 - side)) continue;
    if (auto why = WhyNotPrivate(view, node.input(side), mul)) return *why;
    return h;
  }
  return std::string();
}

}  // namespace

PassResult FuseHardSwishPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  int64_t opset = ir::OnnxOpset(model.proto);
  ir::GraphView view(graph);
  std::vector<bool> remove(graph.node_size(), false);
  std::vector<int> muls;
  for (int i = 0; i < view.node_count(); ++i) {
    if (view.node(i).op_type() != "Mul" || !ir::IsOnnxDomain(view.node(i).domain())) continue;
    auto match = MatchMul(view, i);
    if (auto* reason = std::get_if<std::string>(&match)) {
      if (!reason->empty()) result.notes.push_back(SkipNote(view.node(i), *reason));
      continue;
    }
    if (opset < 14) {
      result.notes.push_back(SkipNote(
          view.node(i), fmt::format("HardSwish needs opset 14; the model is opset {}", opset)));
      continue;
    }
    remove[std::get<int>(match)] = true;
    muls.push_back(i);
  }
  for (int i : muls) {
    auto* mul = graph.mutable_node(i);
    int h0 = view.Producer(mul->input(0));
    std::string x = (h0 >= 0 && remove[h0]) ? mul->input(1) : mul->input(0);
    mul->set_op_type("HardSwish");
    mul->clear_input();
    mul->add_input(x);
  }
  result.changes = ir::RemoveNodes(graph, remove);
  if (result.changes) result.notes.push_back(fmt::format("fused {} HardSwish", result.changes));
  return result;
}

PassResult DecomposeHardSwishPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  ir::NameGenerator names(graph);
  std::map<int, std::vector<onnx::NodeProto>> replacements;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (node.op_type() != "HardSwish" || !ir::IsOnnxDomain(node.domain())) continue;
    NodeEmitter e(graph, names, node.name().empty() ? "hardswish" : node.name());
    auto h = e.Op("HardSigmoid", {node.input(0)});
    auto* alpha = e.nodes().back().add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(1.0f / 6);
    e.Op("Mul", {node.input(0), h}, node.output(0));
    replacements[i] = std::move(e.nodes());
  }
  ReplaceNodes(graph, replacements);
  result.changes = static_cast<int>(replacements.size());
  if (result.changes) {
    result.notes.push_back(fmt::format("decomposed {} HardSwish", result.changes));
  }
  return result;
}

}  // namespace porttool::passes
