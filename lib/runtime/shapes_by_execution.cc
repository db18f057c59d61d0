#include "lib/runtime/shapes_by_execution.h"

#include <map>
#include <set>

#include "lib/ir/dtype.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {
namespace {

const std::set<std::string> kValueDependentOps = {
    "NonZero", "TopK", "NonMaxSuppression", "Unique", "Compress", "Loop", "Scan"};

bool HasStaticShape(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto* list : {&graph.value_info(), &graph.output(), &graph.input()}) {
    for (const auto& vi : *list) {
      if (vi.name() == name) return ir::StaticShape(vi.type()).has_value();
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> CompleteShapesByExecution(io::Model& model) {
  auto* graph = model.proto.mutable_graph();
  std::set<std::string> missing;
  for (const auto& node : graph->node()) {
    if (kValueDependentOps.count(node.op_type())) return {};
    for (const auto& out : node.output()) {
      if (!out.empty() && !HasStaticShape(*graph, out)) missing.insert(out);
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
  std::vector<std::string> filled;
  for (const auto& [name, info] : seen) {
    // Graph outputs carry their (symbolic) type themselves; intermediates get value_info.
    onnx::ValueInfoProto* vi = nullptr;
    for (auto* list : {graph->mutable_output(), graph->mutable_value_info()}) {
      for (auto& existing : *list) {
        if (existing.name() == name && !vi) vi = &existing;
      }
    }
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
