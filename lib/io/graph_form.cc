#include "lib/io/graph_form.h"

#include <map>
#include <vector>

#include "lib/util/error.h"

namespace porttool::io {
namespace {

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("#{} ({})", index, node.op_type())
                             : fmt::format("'{}'", node.name());
}

// Tensor name -> index of the node producing it; -1 for graph inputs and initializers.
std::map<std::string, int> Producers(const onnx::GraphProto& graph, const std::string& where) {
  std::map<std::string, int> producer;
  for (const auto& in : graph.input()) producer.emplace(in.name(), -1);
  for (const auto& init : graph.initializer()) producer.emplace(init.name(), -1);
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;  // an optional output left out
      auto [it, fresh] = producer.emplace(out, i);
      if (fresh) continue;
      std::string first = it->second < 0 ? "a graph input or initializer"
                                         : "node " + NodeLabel(graph.node(it->second), it->second);
      ThrowBadInput(
          "{}: graph '{}': tensor '{}' is produced by node {} and by {}; an ONNX graph gives "
          "each tensor one producer",
          where, graph.name(), out, NodeLabel(graph.node(i), i), first);
    }
  }
  return producer;
}

// Kahn's algorithm: the nodes left unordered are on a cycle or behind one.
void CheckAcyclic(const onnx::GraphProto& graph, const std::map<std::string, int>& producer,
                  const std::string& where) {
  const int n = graph.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (int i = 0; i < n; ++i) {
    for (const auto& in : graph.node(i).input()) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end() || it->second < 0) continue;
      ++pending[i];
      readers[it->second].push_back(i);
    }
  }
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  int ordered = 0;
  while (!ready.empty()) {
    int i = ready.back();
    ready.pop_back();
    ++ordered;
    for (int r : readers[i]) {
      if (--pending[r] == 0) ready.push_back(r);
    }
  }
  if (ordered == n) return;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) continue;
    ThrowBadInput(
        "{}: graph '{}': node {} ({}) is on a cycle, or reads a tensor computed from its own "
        "output; an ONNX graph has no cycles",
        where, graph.name(), NodeLabel(graph.node(i), i), graph.node(i).op_type());
  }
}

}  // namespace

void ValidateGraphForm(const onnx::GraphProto& graph, const std::string& where) {
  auto producer = Producers(graph, where);
  CheckAcyclic(graph, producer, where);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) ValidateGraphForm(attr.g(), where);
      for (const auto& g : attr.graphs()) ValidateGraphForm(g, where);
    }
  }
}

}  // namespace porttool::io
