// fuse-conv-add: folds a constant bias Add after a Conv/ConvTranspose into the conv's bias.
//
// Before: c = ConvTranspose(x, W); y = Add(c, k)     [k: float[1,C,1,1], [C,1,1], [1] or scalar]
// After:  y = ConvTranspose(x, W, B')                B' = B + k (per output channel)
//
// Preconditions (otherwise kept with the reason): k is a float constant that broadcasts per
// channel only (every dim 1 except the channel axis, right-aligned to the conv output rank); c is
// read by the Add only and is not a graph output; the conv weight rank is known (constant W).
// Why: exporters (Paddle2ONNX, some PyTorch paths) emit the bias as a separate Add; NPU
// converters then run an extra elementwise layer. Tolerance: exact (one float add, reordered).
#include "passes/fuse_conv_add.h"

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
  int add;
  runtime::Tensor bias;
};

std::variant<Plan, std::string> Match(const io::Model& model, const ir::GraphView& view,
                                      const ir::ConstantLookup& constants, int add_index) {
  const auto& add = view.node(add_index);
  if (add.input_size() != 2) return std::string("expected 2 inputs");
  for (int side = 0; side < 2; ++side) {
    int conv_index = view.Producer(add.input(side));
    if (conv_index < 0) continue;
    const auto& conv = view.node(conv_index);
    bool transposed = conv.op_type() == "ConvTranspose";
    if ((conv.op_type() != "Conv" && !transposed) || !ir::IsOnnxDomain(conv.domain())) continue;
    auto k = FloatConstant(model, constants, add.input(1 - side));
    if (!k) continue;  // a conv output with an activation: not this pattern
    if (auto why = WhyNotPrivate(view, add.input(side), add_index)) return *why;
    auto w = FloatConstant(model, constants, conv.input(1));
    if (!w || w->rank() < 3) return std::string("the conv weight is not a float constant");
    int64_t channels = transposed ? w->dim(1) * AttrInt(conv, "group", 1) : w->dim(0);
    auto values = ChannelValues(*k, w->rank(), channels);
    if (!values) return std::string("the constant is not a per-channel bias");
    Plan plan{conv_index, add_index, runtime::Tensor(onnx::TensorProto::FLOAT, {channels})};
    float* out = plan.bias.mutable_data<float>();
    std::optional<runtime::Tensor> b;
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      b = FloatConstant(model, constants, conv.input(2));
      if (!b || b->size() != channels) return std::string("the conv bias is not a constant");
    }
    for (int64_t c = 0; c < channels; ++c) out[c] = (b ? b->data<float>()[c] : 0.0f) + (*values)[c];
    return plan;
  }
  return std::string(kNoConv);
}

}  // namespace

PassResult FuseConvAddPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  std::vector<Plan> plans;
  {
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    std::unordered_set<int> used_convs;
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& node = view.node(i);
      if (node.op_type() != "Add" || !ir::IsOnnxDomain(node.domain())) continue;
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
    const auto& add = graph.node(plan.add);
    std::string b_name = names.Tensor(conv->name() + "_add_bias");
    ir::AddInitializer(graph, runtime::TensorToProto(plan.bias, b_name), b_name);
    for (const auto& in : add.input()) replaced.insert(in);
    if (conv->input_size() > 2) replaced.insert(conv->input(2));
    if (conv->input_size() < 3) conv->add_input(b_name);
    conv->set_input(2, b_name);
    conv->set_output(0, add.output(0));
    remove[plan.add] = true;
    result.notes.push_back("fused " + add.name() + " into " + conv->name());
  }
  result.changes = ir::RemoveNodes(graph, remove);
  ir::RemoveUnusedInitializers(graph, &replaced);
  return result;
}

}  // namespace porttool::passes
