#include "lib/ir/constants.h"

#include <cstring>
#include <unordered_set>

#include "lib/util/error.h"

namespace porttool::ir {

bool IsOnnxDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

bool HasOnnxOp(const onnx::GraphProto& graph, std::initializer_list<std::string_view> op_types) {
  for (const auto& node : graph.node()) {
    if (!IsOnnxDomain(node.domain())) continue;
    for (std::string_view op : op_types) {
      if (node.op_type() == op) return true;
    }
  }
  return false;
}

bool IsConstantNode(const onnx::NodeProto& node) {
  return node.op_type() == "Constant" && IsOnnxDomain(node.domain()) && node.output_size() == 1;
}

std::optional<onnx::TensorProto> ConstantNodeValue(const onnx::NodeProto& node) {
  if (node.attribute_size() > 1) {
    ThrowBadInput("Constant node '{}' has {} value attributes; ONNX allows exactly one",
                  node.name(), node.attribute_size());
  }
  if (node.attribute_size() == 0) return std::nullopt;
  const auto& a = node.attribute(0);
  onnx::TensorProto t;
  if (a.name() == "value") {
    if (!a.has_t()) return std::nullopt;
    t = a.t();
  } else if (a.name() == "value_float") {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(a.f());
  } else if (a.name() == "value_floats") {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(a.floats_size());
    *t.mutable_float_data() = a.floats();
  } else if (a.name() == "value_int") {
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(a.i());
  } else if (a.name() == "value_ints") {
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(a.ints_size());
    *t.mutable_int64_data() = a.ints();
  } else if (a.name() == "value_string") {
    t.set_data_type(onnx::TensorProto::STRING);
    t.add_string_data(a.s());
  } else if (a.name() == "value_strings") {
    t.set_data_type(onnx::TensorProto::STRING);
    t.add_dims(a.strings_size());
    *t.mutable_string_data() = a.strings();
  } else {
    return std::nullopt;  // sparse_value: no dense value to offer
  }
  t.set_name(node.output(0));
  return t;
}

ConstantLookup::ConstantLookup(const GraphView& view) : view_(view) {
  const auto& graph = view.graph();
  std::unordered_set<std::string> inputs;
  for (const auto& vi : graph.input()) inputs.insert(vi.name());
  for (const auto& t : graph.initializer()) {
    if (!inputs.count(t.name())) direct_[t.name()] = &t;
  }
  for (const auto& node : graph.node()) {
    if (!IsConstantNode(node)) continue;
    if (node.attribute_size() == 1 && node.attribute(0).name() == "value" &&
        node.attribute(0).has_t()) {
      direct_[node.output(0)] = &node.attribute(0).t();
    } else if (auto value = ConstantNodeValue(node)) {
      owned_.push_back(std::move(*value));
      direct_[node.output(0)] = &owned_.back();
    }
  }
}

const onnx::TensorProto* ConstantLookup::Find(const std::string& tensor) const {
  std::string name = tensor;
  // An Identity chain is followed at most node_count steps, so a malformed cycle ends here.
  for (int step = 0; step <= view_.node_count(); ++step) {
    auto it = direct_.find(name);
    if (it != direct_.end()) return it->second;
    int producer = view_.Producer(name);
    if (producer < 0) return nullptr;
    const auto& node = view_.node(producer);
    if (node.op_type() != "Identity" || !IsOnnxDomain(node.domain()) || node.input_size() != 1) {
      return nullptr;
    }
    name = node.input(0);
  }
  return nullptr;
}

std::vector<std::string> ConstantLookup::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : direct_) names.push_back(name);
  return names;
}

namespace {

template <typename T>
std::vector<double> Widen(std::span<const uint8_t> bytes) {
  std::vector<double> out(bytes.size() / sizeof(T));
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
  return out;
}

}  // namespace

std::optional<std::vector<double>> ConstantAsDoubles(const io::Model& model,
                                                     const onnx::TensorProto& tensor) {
  using TP = onnx::TensorProto;
  switch (tensor.data_type()) {
    case TP::FLOAT:
      return Widen<float>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::DOUBLE:
      return Widen<double>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::INT64:
      return Widen<int64_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::INT32:
      return Widen<int32_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::INT16:
      return Widen<int16_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::INT8:
      return Widen<int8_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::UINT8:
    case TP::BOOL:
      return Widen<uint8_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::UINT16:
      return Widen<uint16_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::UINT32:
      return Widen<uint32_t>(io::ReadTensorBytes(model, tensor).bytes);
    case TP::UINT64:
      return Widen<uint64_t>(io::ReadTensorBytes(model, tensor).bytes);
    default:
      return std::nullopt;
  }
}

}  // namespace porttool::ir
