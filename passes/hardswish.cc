// fuse-hardswish / decompose-hardswish: the two spellings of hard-swish, both ways.
//
// fuse:      h = HardSigmoid<alpha=1/6, beta=0.5>(x); y = Mul(x, h)   ->   y = HardSwish(x)
//            a = Add(x, 3); c = Clip(a, 0, 6); t = Mul(x, c); y = Div(t, 6)   ->   y = HardSwish(x)
//            a = Add(x, 3); c = Clip(a, 0, 6); t = Div(c, 6); y = Mul(x, t)   ->   y = HardSwish(x)
//            (the relu6 spelling `x * relu6(x + 3) / 6` of hand-written MobileNetV3 blocks; a
//            Mul by 1/6 is accepted wherever the Div by 6 is, and either operand order)
// decompose: y = HardSwish(x)   ->   h = HardSigmoid<alpha=1/6, beta=0.5>(x); y = Mul(x, h)
//
// Preconditions: fuse needs opset 14+ (HardSwish's first version; older models are reported, not
// changed), alpha within 1e-6 of 1/6 and beta 0.5 (the constants 3, 0, 6 and 1/6 likewise), and
// every intermediate read by the next node of the pattern only. Both keep the output name.
// Why: targets differ — some NPUs run HardSwish natively and split the pair into two layers,
// others lack HardSwish but have HardSigmoid. Tolerance: the same function; the float rounding
// of the division differs (a few ulp, tested below 1e-6).
#include "passes/hardswish.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <variant>

#include "lib/ir/constants.h"
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

// One scalar constant (any numeric type, one element), or nullopt.
std::optional<double> ScalarConstant(const io::Model& model, const ir::ConstantLookup& constants,
                                     const std::string& tensor) {
  const auto* proto = constants.Find(tensor);
  if (!proto) return std::nullopt;
  auto values = ir::ConstantAsDoubles(model, *proto);
  if (!values || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

bool Near(std::optional<double> v, double want) { return v && std::fabs(*v - want) < 1e-6; }

bool IsOnnxOp(const onnx::NodeProto& n, const char* op) {
  return n.op_type() == op && ir::IsOnnxDomain(n.domain());
}

// The input of binary `node` other than `operand`, or "" when `operand` is not one of them.
std::string OtherOperand(const onnx::NodeProto& node, const std::string& operand) {
  if (node.input_size() != 2) return "";
  if (node.input(0) == operand) return node.input(1);
  if (node.input(1) == operand) return node.input(0);
  return "";
}

// `node` divides `value` by 6 (Div(value, 6) or Mul(value, 1/6) in either order).
bool DividesBySix(const io::Model& model, const ir::ConstantLookup& constants,
                  const onnx::NodeProto& node, const std::string& value) {
  if (IsOnnxOp(node, "Div")) {
    return node.input_size() == 2 && node.input(0) == value &&
           Near(ScalarConstant(model, constants, node.input(1)), 6);
  }
  return IsOnnxOp(node, "Mul") &&
         Near(ScalarConstant(model, constants, OtherOperand(node, value)), 1.0 / 6);
}

// Clip(a, 0, 6): bounds as attributes before opset 11, as constant inputs from 11 on.
bool ClipsToZeroSix(const io::Model& model, const ir::ConstantLookup& constants,
                    const onnx::NodeProto& clip) {
  if (clip.input_size() < 3) {
    return clip.input_size() == 1 && AttrFloat(clip, "min", -1) == 0 &&
           AttrFloat(clip, "max", -1) == 6;
  }
  return Near(ScalarConstant(model, constants, clip.input(1)), 0) &&
         Near(ScalarConstant(model, constants, clip.input(2)), 6);
}

// The one reader of `tensor` when it is private to that reader, else -1.
int SoleReader(const ir::GraphView& view, const std::string& tensor) {
  const auto& readers = view.Consumers(tensor);
  if (readers.size() != 1 || WhyNotPrivate(view, tensor, readers[0])) return -1;
  return readers[0];
}

// A match: the nodes it removes, the node that becomes HardSwish and its input x.
struct Fusion {
  std::vector<int> removed;
  int last;
  std::string x;
};

// x * relu6(x + 3) / 6 around the Clip node `clip`, or nullopt when the nodes around it are not
// that pattern.
std::optional<Fusion> MatchRelu6Spelling(const io::Model& model,
                                         const ir::ConstantLookup& constants,
                                         const ir::GraphView& view, int clip) {
  const auto& c = view.node(clip);
  if (!IsOnnxOp(c, "Clip") || c.input_size() < 1 || !ClipsToZeroSix(model, constants, c)) {
    return std::nullopt;
  }
  int add = view.Producer(c.input(0));
  if (add < 0 || !IsOnnxOp(view.node(add), "Add") || SoleReader(view, c.input(0)) != clip) {
    return std::nullopt;
  }
  const auto& a = view.node(add);
  std::string x;
  for (int side = 0; side < 2 && a.input_size() == 2; ++side) {
    if (Near(ScalarConstant(model, constants, a.input(side)), 3)) x = a.input(1 - side);
  }
  int mid = SoleReader(view, c.output(0));
  if (x.empty() || mid < 0) return std::nullopt;
  const auto& m = view.node(mid);
  int last = SoleReader(view, m.output(0));
  if (last < 0) return std::nullopt;
  const auto& l = view.node(last);
  bool mul_first = IsOnnxOp(m, "Mul") && OtherOperand(m, c.output(0)) == x &&
                   DividesBySix(model, constants, l, m.output(0));
  bool divide_first = DividesBySix(model, constants, m, c.output(0)) && IsOnnxOp(l, "Mul") &&
                      OtherOperand(l, m.output(0)) == x;
  if (!mul_first && !divide_first) return std::nullopt;
  return Fusion{{add, clip, mid}, last, x};
}

// The skip note's tail, with the remedy.
std::string NeedsOpset14(int64_t opset) {
  return fmt::format(
      "which needs opset 14; the model is opset {} (rewrite with convert-opset{{to=14}} first)",
      opset);
}

// Turns `node` into HardSwish(x), keeping its name and output.
void BecomeHardSwish(onnx::NodeProto& node, std::string x) {  // x by value: it may be node.input(i)
  node.set_op_type("HardSwish");
  node.clear_domain();
  node.clear_attribute();
  node.clear_input();
  node.add_input(x);
}

// Every hard-swish spelling in the graph; matches below opset 14 become notes instead.
std::vector<Fusion> FindFusions(const io::Model& model, const ir::GraphView& view,
                                std::vector<std::string>& notes) {
  const int64_t opset = ir::OnnxOpset(model.proto);
  ir::ConstantLookup constants(view);
  std::vector<Fusion> fusions;
  auto accept = [&](Fusion f, const char* spelling) {
    if (opset >= 14) return fusions.push_back(std::move(f));
    notes.push_back(SkipNote(view.node(f.last),
                             std::string(spelling) + " is HardSwish, " + NeedsOpset14(opset)));
  };
  for (int i = 0; i < view.node_count(); ++i) {
    if (IsOnnxOp(view.node(i), "Mul")) {
      auto match = MatchMul(view, i);
      if (auto* h = std::get_if<int>(&match)) {
        const auto& mul = view.node(i);
        std::string x = mul.input(0) == view.node(*h).output(0) ? mul.input(1) : mul.input(0);
        accept({{*h}, i, x}, "x * HardSigmoid(x)");
      } else if (!std::get<std::string>(match).empty()) {
        notes.push_back(SkipNote(view.node(i), std::get<std::string>(match)));
      }
    }
    if (auto m = MatchRelu6Spelling(model, constants, view, i)) {
      accept(std::move(*m), "x * relu6(x + 3) / 6");
    }
  }
  return fusions;
}

}  // namespace

PassResult FuseHardSwishPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  std::vector<Fusion> fusions;
  {
    ir::GraphView view(graph);  // indexes the graph: rewrite only after matching
    fusions = FindFusions(model, view, result.notes);
  }
  std::vector<bool> remove(graph.node_size(), false);
  for (const Fusion& f : fusions) {
    for (int r : f.removed) remove[r] = true;
    BecomeHardSwish(*graph.mutable_node(f.last), f.x);
  }
  ir::RemoveNodes(graph, remove);
  result.changes = static_cast<int>(fusions.size());
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
