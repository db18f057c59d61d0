#include "passes/pattern_util.h"

#include <fmt/format.h>

#include <cctype>
#include <unordered_set>

#include "lib/runtime/tensor_io.h"

namespace porttool::passes {

std::optional<std::string> WhyNotPrivate(const ir::GraphView& view, const std::string& tensor,
                                         int reader) {
  if (view.IsGraphOutput(tensor)) return "'" + tensor + "' is a graph output";
  const auto& consumers = view.Consumers(tensor);
  if (consumers.size() != 1 || consumers[0] != reader) {
    return "'" + tensor + "' has other consumers";
  }
  const auto& inputs = view.node(reader).input();
  if (std::find(inputs.begin(), inputs.end(), tensor) == inputs.end()) {
    return "'" + tensor + "' is read inside a subgraph";
  }
  return std::nullopt;
}

std::optional<runtime::Tensor> FloatConstant(const io::Model& model,
                                             const ir::ConstantLookup& constants,
                                             const std::string& tensor) {
  const auto* proto = constants.Find(tensor);
  if (!proto || proto->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  return runtime::TensorFromProto(model, *proto);
}

std::optional<std::vector<float>> ChannelValues(const runtime::Tensor& k, int rank,
                                                int64_t channels) {
  if (k.rank() > rank) return std::nullopt;
  int64_t per_channel = 1;
  for (int i = 0; i < k.rank(); ++i) {
    int axis = rank - k.rank() + i;
    if (axis == 1) {
      per_channel = k.dim(i);
    } else if (k.dim(i) != 1) {
      return std::nullopt;
    }
  }
  if (per_channel != 1 && per_channel != channels) return std::nullopt;
  std::vector<float> values(channels);
  for (int64_t c = 0; c < channels; ++c) values[c] = k.data<float>()[per_channel == 1 ? 0 : c];
  return values;
}

void ScaleWeights(runtime::Tensor& w, bool transposed, int64_t group, const std::vector<float>& s) {
  int64_t d0 = w.dim(0), d1 = w.dim(1);
  int64_t inner = w.size() / (d0 * d1);
  float* data = w.mutable_data<float>();
  for (int64_t i = 0; i < d0; ++i) {
    for (int64_t j = 0; j < d1; ++j) {
      int64_t oc = transposed ? (i / (d0 / group)) * d1 + j : i;
      float* p = data + (i * d1 + j) * inner;
      for (int64_t k = 0; k < inner; ++k) p[k] *= s[oc];
    }
  }
}

std::variant<ConvWithChannelConstant, std::string> MatchConvWithChannelConstant(
    const io::Model& model, const ir::GraphView& view, const ir::ConstantLookup& constants,
    int index, const std::string& what) {
  const auto& node = view.node(index);
  if (node.input_size() != 2) return std::string("expected 2 inputs");
  for (int side = 0; side < 2; ++side) {
    int conv_index = view.Producer(node.input(side));
    if (conv_index < 0) continue;
    const auto& conv = view.node(conv_index);
    bool transposed = conv.op_type() == "ConvTranspose";
    if ((conv.op_type() != "Conv" && !transposed) || !ir::IsOnnxDomain(conv.domain())) continue;
    auto k = FloatConstant(model, constants, node.input(1 - side));
    if (!k) continue;  // a conv output with an activation: not this pattern
    if (auto why = WhyNotPrivate(view, node.input(side), index)) return *why;
    auto w = FloatConstant(model, constants, conv.input(1));
    if (!w || w->rank() < 3) return std::string("the conv weight is not a float constant");
    ConvWithChannelConstant m{conv_index, std::move(*w), std::nullopt,
                              {},         transposed,    AttrInt(conv, "group", 1)};
    int64_t channels = transposed ? m.weight.dim(1) * m.group : m.weight.dim(0);
    auto values = ChannelValues(*k, m.weight.rank(), channels);
    if (!values) return "the constant is not a per-channel " + what;
    m.values = std::move(*values);
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      m.bias = FloatConstant(model, constants, conv.input(2));
      if (!m.bias || m.bias->size() != channels) {
        return std::string("the conv bias is not a constant");
      }
    }
    return m;
  }
  return std::string(kNotConvWithConstant);
}

PassResult FoldIntoConvs(io::Model& model, const std::string& op_type, const std::string& what,
                         const std::function<ConvFold(const ConvWithChannelConstant&)>& fold) {
  PassResult result;
  auto& graph = *model.proto.mutable_graph();
  if (!ir::HasOnnxOp(graph, {op_type}) || !ir::HasOnnxOp(graph, {"Conv", "ConvTranspose"})) {
    return result;
  }
  std::vector<std::pair<int, ConvFold>> plans;  // (elementwise node, fold), conv in conv_of
  std::vector<int> conv_of;
  {
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    std::unordered_set<int> used_convs;
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& node = view.node(i);
      if (node.op_type() != op_type || !ir::IsOnnxDomain(node.domain())) continue;
      auto match = MatchConvWithChannelConstant(model, view, constants, i, what);
      if (auto* m = std::get_if<ConvWithChannelConstant>(&match)) {
        if (!used_convs.insert(m->conv).second) continue;
        plans.emplace_back(i, fold(*m));
        conv_of.push_back(m->conv);
      } else if (std::get<std::string>(match) != kNotConvWithConstant) {
        result.notes.push_back(SkipNote(node, std::get<std::string>(match)));
      }
    }
  }
  ir::NameGenerator names(graph);
  std::vector<bool> remove(graph.node_size(), false);
  std::unordered_set<std::string> replaced;
  std::string suffix = "_" + op_type;  // "_add", "_mul": names tell where a tensor came from
  for (char& ch : suffix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (size_t p = 0; p < plans.size(); ++p) {
    auto* conv = graph.mutable_node(conv_of[p]);
    const auto& node = graph.node(plans[p].first);
    const ConvFold& f = plans[p].second;
    for (const auto& in : node.input()) replaced.insert(in);
    if (f.weight) {
      std::string w_name = names.Tensor(conv->name() + suffix + "_weight");
      ir::AddInitializer(graph, runtime::TensorToProto(*f.weight, w_name), w_name);
      replaced.insert(conv->input(1));
      conv->set_input(1, w_name);
    }
    if (f.bias) {
      std::string b_name = names.Tensor(conv->name() + suffix + "_bias");
      ir::AddInitializer(graph, runtime::TensorToProto(*f.bias, b_name), b_name);
      if (conv->input_size() > 2) replaced.insert(conv->input(2));
      if (conv->input_size() < 3) conv->add_input(b_name);
      conv->set_input(2, b_name);
    }
    conv->set_output(0, node.output(0));
    remove[plans[p].first] = true;
    result.notes.push_back("fused " + node.name() + " into " + conv->name());
  }
  result.changes = ir::RemoveNodes(graph, remove);
  ir::RemoveUnusedInitializers(graph, &replaced);
  return result;
}

std::string SkipNote(const onnx::NodeProto& node, const std::string& reason) {
  return fmt::format("kept {} '{}': {}", node.op_type(), node.name(), reason);
}

namespace {
const onnx::AttributeProto* Find(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
}  // namespace

int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t def) {
  const auto* a = Find(node, name);
  return a ? a->i() : def;
}
float AttrFloat(const onnx::NodeProto& node, const std::string& name, float def) {
  const auto* a = Find(node, name);
  return a ? a->f() : def;
}
std::string AttrString(const onnx::NodeProto& node, const std::string& name,
                       const std::string& def) {
  const auto* a = Find(node, name);
  return a ? a->s() : def;
}

}  // namespace porttool::passes

namespace porttool::passes {

std::string NodeEmitter::Op(const std::string& op, const std::vector<std::string>& inputs,
                            const std::string& output) {
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(names_.Node(base_ + "/" + op));
  for (const auto& in : inputs) node.add_input(in);
  std::string out = output.empty() ? names_.Tensor(base_ + "/" + op + "_out") : output;
  node.add_output(out);
  nodes_.push_back(std::move(node));
  return out;
}

std::string NodeEmitter::Scalar(float value) {
  std::string name = names_.Tensor(base_ + "/const");
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  ir::AddInitializer(graph_, std::move(t), name);
  return name;
}

void ReplaceNodes(onnx::GraphProto& graph,
                  std::map<int, std::vector<onnx::NodeProto>>& replacements) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto it = replacements.find(i);
    if (it == replacements.end()) {
      nodes.Add()->Swap(graph.mutable_node(i));
      continue;
    }
    for (auto& n : it->second) nodes.Add()->Swap(&n);
  }
  graph.mutable_node()->Swap(&nodes);
}

}  // namespace porttool::passes
