#include "lib/ir/initializer_inputs.h"

#include <set>

namespace porttool::ir {

std::vector<std::string> InitializerInputs(const onnx::GraphProto& graph) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::vector<std::string> out;
  for (const auto& input : graph.input()) {
    if (initializers.count(input.name())) out.push_back(input.name());
  }
  return out;
}

std::vector<std::string> DropInitializerInputs(onnx::GraphProto& graph) {
  std::vector<std::string> dropped = InitializerInputs(graph);
  if (dropped.empty()) return dropped;
  const std::set<std::string> drop(dropped.begin(), dropped.end());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (auto& input : *graph.mutable_input()) {
    if (!drop.count(input.name())) kept.Add()->Swap(&input);
  }
  graph.mutable_input()->Swap(&kept);
  return dropped;
}

}  // namespace porttool::ir
