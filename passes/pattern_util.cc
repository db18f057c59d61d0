#include "passes/pattern_util.h"

#include <fmt/format.h>

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
