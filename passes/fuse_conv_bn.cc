// fuse-conv-bn: folds BatchNormalization (inference mode) into the preceding Conv/ConvTranspose.
//
// Before: c = Conv(x, W, B); y = BatchNormalization(c, scale, bias, mean, var)
// After:  y = Conv(x, W', B')   with s = scale / sqrt(var + epsilon) per output channel,
//                               W' = W * s (along the output-channel axis), B' = (B - mean) * s +
//                               bias
//
// Preconditions (otherwise kept with the reason): W, B, scale, bias, mean, var are float
// constants; c is read by the BatchNormalization only and is not a graph output; the
// BatchNormalization is in inference mode (one output used, training_mode absent or 0).
// Grouped Conv and ConvTranspose work: ConvTranspose weights are [C_in, C_out/group, k...], so the
// output channel of weight (i, j) is (i / (C_in/group)) * (C_out/group) + j.
// Why: every NPU toolchain expects BN folded; it removes a layer and its memory traffic.
// Tolerance: float32 rounding of the fused weights (about 1e-6 relative).
#include "passes/fuse_conv_bn.h"

#include <cmath>
#include <unordered_set>
#include <variant>

#include "lib/ir/rewrite.h"
#include "lib/runtime/tensor_io.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

struct FuseConvBnPlan {
  int conv;
  int bn;
  runtime::Tensor weight;
  runtime::Tensor bias;
};

std::variant<FuseConvBnPlan, std::string> Match(const io::Model& model, const ir::GraphView& view,
                                                const ir::ConstantLookup& constants, int bn_index) {
  const auto& bn = view.node(bn_index);
  if (bn.input_size() != 5) return std::string("expected 5 inputs");
  if (AttrInt(bn, "training_mode", 0) != 0) return std::string("training_mode is set");
  for (int o = 1; o < bn.output_size(); ++o) {
    if (!bn.output(o).empty()) return std::string("its training outputs are requested");
  }
  int conv_index = view.Producer(bn.input(0));
  if (conv_index < 0) return std::string("its input is not produced by a Conv");
  const auto& conv = view.node(conv_index);
  bool transposed = conv.op_type() == "ConvTranspose";
  if ((conv.op_type() != "Conv" && !transposed) || !ir::IsOnnxDomain(conv.domain())) {
    return "its input comes from " + conv.op_type() + ", not Conv/ConvTranspose";
  }
  if (auto why = WhyNotPrivate(view, bn.input(0), bn_index)) return *why;
  auto w = FloatConstant(model, constants, conv.input(1));
  if (!w || w->rank() < 3) return std::string("the conv weight is not a float constant");
  std::vector<std::optional<runtime::Tensor>> p;
  for (int i = 1; i < 5; ++i) p.push_back(FloatConstant(model, constants, bn.input(i)));
  for (const auto& t : p) {
    if (!t) return std::string("scale/bias/mean/var are not all float constants");
  }
  int64_t group = AttrInt(conv, "group", 1);
  int64_t channels = transposed ? w->dim(1) * group : w->dim(0);
  for (const auto& t : p) {
    if (t->size() != channels) return std::string("parameter length differs from channels");
  }
  std::optional<runtime::Tensor> b;
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    b = FloatConstant(model, constants, conv.input(2));
    if (!b || b->size() != channels) return std::string("the conv bias is not a float constant");
  }
  float eps = AttrFloat(bn, "epsilon", 1e-5f);
  std::vector<float> s(channels);
  FuseConvBnPlan plan{conv_index, bn_index, w->Clone(),
                      runtime::Tensor(onnx::TensorProto::FLOAT, {channels})};
  float* out_b = plan.bias.mutable_data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    s[c] = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + eps);
    float conv_b = b ? b->data<float>()[c] : 0.0f;
    out_b[c] = (conv_b - p[2]->data<float>()[c]) * s[c] + p[1]->data<float>()[c];
  }
  ScaleWeights(plan.weight, transposed, group, s);
  return plan;
}

}  // namespace

PassResult FuseConvBnPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  if (!ir::HasOnnxOp(graph, {"BatchNormalization"})) return result;
  std::vector<FuseConvBnPlan> plans;
  {
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& node = view.node(i);
      if (node.op_type() != "BatchNormalization" || !ir::IsOnnxDomain(node.domain())) continue;
      auto match = Match(model, view, constants, i);
      if (auto* reason = std::get_if<std::string>(&match)) {
        result.notes.push_back(SkipNote(node, *reason));
      } else {
        plans.push_back(std::move(std::get<FuseConvBnPlan>(match)));
      }
    }
  }
  ir::NameGenerator names(graph);
  std::vector<bool> remove(graph.node_size(), false);
  std::unordered_set<std::string> replaced;
  for (auto& plan : plans) {
    auto* conv = graph.mutable_node(plan.conv);
    const auto& bn = graph.node(plan.bn);
    std::string w_name = names.Tensor(conv->name() + "_bn_weight");
    std::string b_name = names.Tensor(conv->name() + "_bn_bias");
    ir::AddInitializer(graph, runtime::TensorToProto(plan.weight, w_name), w_name);
    ir::AddInitializer(graph, runtime::TensorToProto(plan.bias, b_name), b_name);
    replaced.insert(conv->input(1));
    if (conv->input_size() > 2) replaced.insert(conv->input(2));
    for (int i = 1; i < 5; ++i) replaced.insert(bn.input(i));
    conv->set_input(1, w_name);
    if (conv->input_size() < 3) conv->add_input(b_name);
    conv->set_input(2, b_name);
    conv->set_output(0, bn.output(0));
    remove[plan.bn] = true;
    result.notes.push_back("fused " + bn.name() + " into " + conv->name());
  }
  result.changes = ir::RemoveNodes(graph, remove);
  ir::RemoveUnusedInitializers(graph, &replaced);
  return result;
}

}  // namespace porttool::passes
