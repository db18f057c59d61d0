#include "lib/ir/rewrite.h"

#include <unordered_map>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"

namespace porttool::ir {
namespace {

void ForEachSubgraph(onnx::NodeProto& node, const std::function<void(onnx::GraphProto&)>& fn) {
  for (auto& attr : *node.mutable_attribute()) {
    if (attr.has_g()) fn(*attr.mutable_g());
    for (auto& g : *attr.mutable_graphs()) fn(g);
  }
}

bool Defines(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& vi : graph.input()) {
    if (vi.name() == name) return true;
  }
  for (const auto& t : graph.initializer()) {
    if (t.name() == name) return true;
  }
  for (const auto& node : graph.node()) {
    for (const auto& out : node.output()) {
      if (out == name) return true;
    }
  }
  return false;
}

// Renames reads of `from` inside a subgraph body that captures it from the outer scope.
int RenameCaptures(onnx::GraphProto& body, const std::string& from, const std::string& to) {
  if (Defines(body, from)) return 0;
  int count = 0;
  for (auto& out : *body.mutable_output()) {
    if (out.name() == from) {
      out.set_name(to);
      ++count;
    }
  }
  return count + ReplaceAllUses(body, from, to);  // the body's nodes and its own subgraphs
}

void AddCount(std::unordered_map<std::string, int>& counts, const onnx::NodeProto& node, int d) {
  for (const auto& in : node.input()) {
    if (!in.empty()) counts[in] += d;
  }
  for (const auto& name : GraphView::CapturedNames(node)) counts[name] += d;
}

}  // namespace

void ForEachGraph(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& fn) {
  fn(graph);
  for (auto& node : *graph.mutable_node()) {
    ForEachSubgraph(node, [&](onnx::GraphProto& g) { ForEachGraph(g, fn); });
  }
}

void ForEachGraph(const onnx::GraphProto& graph,
                  const std::function<void(const onnx::GraphProto&)>& fn) {
  fn(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) ForEachGraph(attr.g(), fn);
      for (const auto& g : attr.graphs()) ForEachGraph(g, fn);
    }
  }
}

int ReplaceAllUses(onnx::GraphProto& graph, const std::string& from, const std::string& to) {
  int count = 0;
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) {
      if (input == from) {
        input = to;
        ++count;
      }
    }
    ForEachSubgraph(node, [&](onnx::GraphProto& g) { count += RenameCaptures(g, from, to); });
  }
  return count;
}

namespace {

// `renames` less the names `body` defines itself (a body's own tensor shadows the outer one).
std::unordered_map<std::string, std::string> VisibleIn(
    const onnx::GraphProto& body, const std::unordered_map<std::string, std::string>& renames) {
  std::unordered_map<std::string, std::string> visible = renames;
  for (const auto& vi : body.input()) visible.erase(vi.name());
  for (const auto& t : body.initializer()) visible.erase(t.name());
  for (const auto& node : body.node()) {
    for (const auto& out : node.output()) visible.erase(out);
  }
  return visible;
}

int RenameCapturesIn(onnx::GraphProto& body,
                     const std::unordered_map<std::string, std::string>& renames) {
  auto visible = VisibleIn(body, renames);
  if (visible.empty()) return 0;
  int count = 0;
  for (auto& out : *body.mutable_output()) {
    if (auto it = visible.find(out.name()); it != visible.end()) {
      out.set_name(it->second);
      ++count;
    }
  }
  return count + RenameReads(body, visible);
}

}  // namespace

int RenameReads(onnx::GraphProto& graph,
                const std::unordered_map<std::string, std::string>& renames) {
  int count = 0;
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) {
      if (auto it = renames.find(input); it != renames.end()) {
        input = it->second;
        ++count;
      }
    }
    ForEachSubgraph(node, [&](onnx::GraphProto& g) { count += RenameCapturesIn(g, renames); });
  }
  return count;
}

int RemoveNodes(onnx::GraphProto& graph, const std::vector<bool>& remove) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  int removed = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (i < static_cast<int>(remove.size()) && remove[i]) {
      ++removed;
      continue;
    }
    kept.Add()->Swap(graph.mutable_node(i));
  }
  graph.mutable_node()->Swap(&kept);
  return removed;
}

std::vector<std::string> RemoveDeadNodes(onnx::GraphProto& graph) {
  std::vector<std::string> removed_ops;
  while (true) {
    std::unordered_map<std::string, int> reads;
    for (const auto& node : graph.node()) AddCount(reads, node, +1);
    for (const auto& out : graph.output()) reads[out.name()] += 1;
    std::vector<bool> dead(graph.node_size(), false);
    bool any = false;
    // Walking backwards removes a whole dead chain in one sweep when the graph is sorted.
    for (int i = graph.node_size() - 1; i >= 0; --i) {
      const auto& node = graph.node(i);
      bool used = false;
      for (const auto& out : node.output()) used |= !out.empty() && reads[out] > 0;
      if (used) continue;
      dead[i] = any = true;
      removed_ops.push_back(node.op_type());
      AddCount(reads, node, -1);
    }
    if (!any) break;
    RemoveNodes(graph, dead);
  }
  return removed_ops;
}

std::unordered_set<std::string> ReadNames(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> names;
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input()) names.insert(in);
    for (const auto& name : GraphView::CapturedNames(node)) names.insert(name);
  }
  for (const auto& out : graph.output()) names.insert(out.name());
  return names;
}

std::vector<std::string> RemoveUnusedInitializers(onnx::GraphProto& graph,
                                                  const std::unordered_set<std::string>* only) {
  auto reads = ReadNames(graph);
  std::unordered_set<std::string> inputs;
  for (const auto& vi : graph.input()) inputs.insert(vi.name());
  std::vector<std::string> removed;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& t : *graph.mutable_initializer()) {
    if (!reads.count(t.name()) && !inputs.count(t.name()) && (!only || only->count(t.name()))) {
      removed.push_back(t.name());
      continue;
    }
    kept.Add()->Swap(&t);
  }
  graph.mutable_initializer()->Swap(&kept);
  return removed;
}

NameGenerator::NameGenerator(const onnx::GraphProto& graph) {
  ForEachGraph(graph, [&](const onnx::GraphProto& g) {
    for (const auto& vi : g.input()) tensors_.insert(vi.name());
    for (const auto& vi : g.output()) tensors_.insert(vi.name());
    for (const auto& vi : g.value_info()) tensors_.insert(vi.name());
    for (const auto& t : g.initializer()) tensors_.insert(t.name());
    for (const auto& node : g.node()) {
      nodes_.insert(node.name());
      for (const auto& name : node.input()) tensors_.insert(name);
      for (const auto& name : node.output()) tensors_.insert(name);
    }
  });
}

std::string NameGenerator::Fresh(std::unordered_set<std::string>& used, const std::string& hint) {
  std::string name = hint;
  for (int i = 1; name.empty() || used.count(name); ++i) name = hint + "_" + std::to_string(i);
  used.insert(name);
  return name;
}

std::string NameGenerator::Tensor(const std::string& hint) { return Fresh(tensors_, hint); }
std::string NameGenerator::Node(const std::string& hint) { return Fresh(nodes_, hint); }

void AddInitializer(onnx::GraphProto& graph, onnx::TensorProto tensor, const std::string& name) {
  tensor.set_name(name);
  graph.add_initializer()->Swap(&tensor);
}

void EnsureOpsetImport(onnx::ModelProto& model, const std::string& domain, int64_t version) {
  for (const auto& op : model.opset_import()) {
    if (op.domain() == domain) return;
  }
  auto* op = model.add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
}

bool DropUnusedOpsetImport(onnx::ModelProto& model, const std::string& domain) {
  if (IsOnnxDomain(domain)) return false;
  bool used = false;
  ForEachGraph(model.graph(), [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) used |= node.domain() == domain;
  });
  if (used) return false;
  auto* imports = model.mutable_opset_import();
  for (int i = 0; i < imports->size(); ++i) {
    if (imports->Get(i).domain() == domain) {
      imports->DeleteSubrange(i, 1);
      return true;
    }
  }
  return false;
}

int64_t OnnxOpset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import()) {
    if (IsOnnxDomain(op.domain())) return op.version();
  }
  return 0;
}

std::map<std::string, int> OpHistogram(const onnx::GraphProto& graph) {
  std::map<std::string, int> counts;
  ForEachGraph(graph, [&](const onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      ++counts[IsOnnxDomain(node.domain()) ? node.op_type()
                                           : node.domain() + "::" + node.op_type()];
    }
  });
  return counts;
}

}  // namespace porttool::ir
