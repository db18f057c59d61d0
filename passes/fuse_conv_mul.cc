// fuse-conv-mul: folds a constant scale Mul after a Conv/ConvTranspose into the conv.
//
// Before: c = Conv(x, W, B); y = Mul(c, k)     [k: float[1,C,1,1], [C,1,1], [1] or scalar]
// After:  y = Conv(x, W', B')                  W' = W * k (along the output-channel axis),
//                                              B' = B * k
//
// Preconditions (otherwise kept with the reason): k is a float constant that broadcasts per
// channel only; c is read by the Mul only and is not a graph output; W (and B) are float
// constants. Grouped Conv and ConvTranspose work (see ScaleWeights).
// Why: Paddle2ONNX exports PP-LCNetV3's learnable affine blocks and unfused norms as a scalar
// Mul and Add after each conv; NPU converters then run two extra elementwise layers, and a
// quantizer puts a requantization in front of each. With fuse-conv-add after it, Conv -> Mul ->
// Add becomes one Conv. Tolerance: float32 rounding of the scaled weights (about 1e-7 relative).
#include "passes/fuse_conv_mul.h"

#include <unordered_set>
#include <variant>

#include "lib/ir/rewrite.h"
#include "lib/runtime/tensor_io.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

// Not a candidate (no conv output with a constant operand): no note, or every Add would get one.
constexpr char kNoConv[] = "no operand is a conv output with a constant on the other side";

struct Plan {
  int conv;
  int mul;
  runtime::Tensor weight;
  std::optional<runtime::Tensor> bias;
};

std::variant<Plan, std::string> Match(const io::Model& model, const ir::GraphView& view,
                                      const ir::ConstantLookup& constants, int mul_index) {
  const auto& mul = view.node(mul_index);
  if (mul.input_size() != 2) return std::string("expected 2 inputs");
  for (int side = 0; side < 2; ++side) {
    int conv_index = view.Producer(mul.input(side));
    if (conv_index < 0) continue;
    const auto& conv = view.node(conv_index);
    bool transposed = conv.op_type() == "ConvTranspose";
    if ((conv.op_type() != "Conv" && !transposed) || !ir::IsOnnxDomain(conv.domain())) continue;
    auto k = FloatConstant(model, constants, mul.input(1 - side));
    if (!k) continue;  // conv output times an activation: not this pattern
    if (auto why = WhyNotPrivate(view, mul.input(side), mul_index)) return *why;
    auto w = FloatConstant(model, constants, conv.input(1));
    if (!w || w->rank() < 3) return std::string("the conv weight is not a float constant");
    int64_t group = AttrInt(conv, "group", 1);
    int64_t channels = transposed ? w->dim(1) * group : w->dim(0);
    auto scale = ChannelValues(*k, w->rank(), channels);
    if (!scale) return std::string("the constant is not a per-channel scale");
    Plan plan{conv_index, mul_index, w->Clone(), std::nullopt};
    ScaleWeights(plan.weight, transposed, group, *scale);
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      auto b = FloatConstant(model, constants, conv.input(2));
      if (!b || b->size() != channels) return std::string("the conv bias is not a constant");
      plan.bias = b->Clone();
      float* pb = plan.bias->mutable_data<float>();
      for (int64_t c = 0; c < channels; ++c) pb[c] *= (*scale)[c];
    }
    return plan;
  }
  return std::string(kNoConv);
}

}  // namespace

PassResult FuseConvMulPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  std::vector<Plan> plans;
  {
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    std::unordered_set<int> used_convs;
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& node = view.node(i);
      if (node.op_type() != "Mul" || !ir::IsOnnxDomain(node.domain())) continue;
      auto match = Match(model, view, constants, i);
      if (auto* plan = std::get_if<Plan>(&match)) {
        if (used_convs.insert(plan->conv).second) plans.push_back(std::move(*plan));
      } else if (std::get<std::string>(match) != kNoConv) {
        result.notes.push_back(SkipNote(node, std::get<std::string>(match)));
      }
    }
  }
  ir::NameGenerator names(graph);
  std::vector<bool> remove(graph.node_size(), false);
  std::unordered_set<std::string> replaced;
  for (auto& plan : plans) {
    auto* conv = graph.mutable_node(plan.conv);
    const auto& mul = graph.node(plan.mul);
    std::string w_name = names.Tensor(conv->name() + "_mul_weight");
    ir::AddInitializer(graph, runtime::TensorToProto(plan.weight, w_name), w_name);
    for (const auto& in : mul.input()) replaced.insert(in);
    replaced.insert(conv->input(1));
    conv->set_input(1, w_name);
    if (plan.bias) {
      std::string b_name = names.Tensor(conv->name() + "_mul_bias");
      ir::AddInitializer(graph, runtime::TensorToProto(*plan.bias, b_name), b_name);
      replaced.insert(conv->input(2));
      conv->set_input(2, b_name);
    }
    conv->set_output(0, mul.output(0));
    remove[plan.mul] = true;
    result.notes.push_back("fused " + mul.name() + " into " + conv->name());
  }
  result.changes = ir::RemoveNodes(graph, remove);
  ir::RemoveUnusedInitializers(graph, &replaced);
  return result;
}

}  // namespace porttool::passes
