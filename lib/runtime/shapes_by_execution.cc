#include "lib/runtime/shapes_by_execution.h"

#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "lib/ir/dtype.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {
namespace {

const std::set<std::string> kValueDependentOps = {
    "NonZero", "TopK", "NonMaxSuppression", "Unique", "Compress", "Loop", "Scan"};

// Names whose declared type has a static shape (the first declaration of a name counts, in the
// order value_info, outputs, inputs). An index: looking each node output up in the lists was
// quadratic in the model.
std::unordered_set<std::string_view> StaticallyShaped(const onnx::GraphProto& graph) {
  std::unordered_set<std::string_view> seen, shaped;
  for (const auto* list : {&graph.value_info(), &graph.output(), &graph.input()}) {
    for (const auto& vi : *list) {
      if (seen.insert(vi.name()).second && ir::StaticShape(vi.type()).has_value()) {
        shaped.insert(vi.name());
      }
    }
  }
  return shaped;
}

}  // namespace

std::vector<std::string> CompleteShapesByExecution(io::Model& model) {
  auto* graph = model.proto.mutable_graph();
  std::set<std::string> missing;
  {
    auto shaped = StaticallyShaped(*graph);
    for (const auto& node : graph->node()) {
      if (kValueDependentOps.count(node.op_type())) return {};
      for (const auto& out : node.output()) {
        if (!out.empty() && !shaped.count(out)) missing.insert(out);
      }
    }
  }
  if (missing.empty()) return {};
  Session session(model, {});
  TensorMap inputs = RandomInputs(session, 0);
  for (auto& [name, tensor] : inputs) tensor = Tensor(tensor.dtype(), tensor.shape());  // zeros
  std::map<std::string, std::pair<int32_t, std::vector<int64_t>>> seen;
  session.Run(inputs, [&](const std::string& name, const Tensor& value) {
    if (missing.count(name)) seen[name] = {value.dtype(), value.shape()};
  });
  // Graph outputs carry their (symbolic) type themselves; intermediates get value_info.
  std::unordered_map<std::string_view, onnx::ValueInfoProto*> declared;
  for (auto* list : {graph->mutable_output(), graph->mutable_value_info()}) {
    for (auto& existing : *list) declared.emplace(existing.name(), &existing);
  }
  std::vector<std::string> filled;
  for (const auto& [name, info] : seen) {
    auto it = declared.find(name);
    onnx::ValueInfoProto* vi = it == declared.end() ? nullptr : it->second;
    if (!vi) {
      vi = graph->add_value_info();
      vi->set_name(name);
    }
    auto* tensor_type = vi->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(info.first);
    tensor_type->mutable_shape()->clear_dim();
    for (int64_t d : info.second) tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
    filled.push_back(name);
  }
  return filled;
}

}  // namespace porttool::runtime
