#include "lib/ir/graph_view.h"

#include <algorithm>
#include <queue>
#include <string_view>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::ir {
namespace {

// Collects names a subgraph reads that it does not define itself (recursively).
void CollectCaptures(const onnx::GraphProto& g, std::unordered_set<std::string> defined,
                     std::vector<std::string>& out, std::unordered_set<std::string>& seen) {
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& node : g.node()) {
    auto use = [&](const std::string& name) {
      if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
    };
    for (const auto& in : node.input()) use(in);
    for (const auto& attr : node.attribute()) {
      std::vector<const onnx::GraphProto*> subs;
      if (attr.has_g()) subs.push_back(&attr.g());
      for (const auto& sg : attr.graphs()) subs.push_back(&sg);
      for (const auto* sg : subs) {
        std::vector<std::string> inner;
        std::unordered_set<std::string> inner_seen;
        CollectCaptures(*sg, defined, inner, inner_seen);
        for (const auto& n : inner) use(n);
      }
    }
    for (const auto& o : node.output()) defined.insert(o);
  }
  for (const auto& o : g.output()) {
    if (!defined.count(o.name()) && seen.insert(o.name()).second) out.push_back(o.name());
  }
}

}  // namespace

std::vector<std::string> GraphView::CapturedNames(const onnx::NodeProto& node) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto& attr : node.attribute()) {
    if (attr.has_g()) CollectCaptures(attr.g(), {}, out, seen);
    for (const auto& g : attr.graphs()) CollectCaptures(g, {}, out, seen);
  }
  return out;
}

GraphView::GraphView(const onnx::GraphProto& graph) : graph_(graph) {
  // Sized up front: rehashing tables of 10^5-10^6 names was a third of building the view.
  const size_t nodes = graph.node_size();
  std::unordered_set<std::string> defined;
  defined.reserve(nodes + graph.initializer_size() + graph.input_size());
  producer_.reserve(nodes);
  consumers_.reserve(nodes + graph.input_size());
  nodes_by_name_.reserve(nodes);
  initializers_.reserve(graph.initializer_size());
  inputs_.reserve(graph.input_size());
  value_infos_.reserve(graph.input_size() + graph.value_info_size() + graph.output_size());
  auto define = [&](const std::string& name) {
    if (!defined.insert(name).second) duplicates_.push_back(name);
  };
  for (const auto& t : graph.initializer()) {
    initializers_[t.name()] = &t;
    define(t.name());
  }
  for (const auto& i : graph.input()) {
    inputs_[i.name()] = &i;
    value_infos_[i.name()] = &i;
    if (!initializers_.count(i.name())) define(i.name());
  }
  for (const auto& v : graph.value_info()) value_infos_.emplace(v.name(), &v);
  for (const auto& o : graph.output()) {
    outputs_.insert(o.name());
    value_infos_.emplace(o.name(), &o);
  }
  reads_.resize(graph.node_size());
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    nodes_by_name_[node.name()].push_back(i);
    // A set, not a search of `reads`: one Concat may read 10^5 tensors.
    auto& reads = reads_[i];
    std::unordered_set<std::string_view> seen;
    auto read = [&](const std::string& name) {
      if (!name.empty() && seen.insert(name).second) reads.push_back(name);
    };
    for (const auto& in : node.input()) read(in);
    for (const auto& name : CapturedNames(node)) read(name);
    for (const auto& name : reads) consumers_[name].push_back(i);
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      define(out);
      producer_.emplace(out, i);
    }
  }
}

int GraphView::Producer(const std::string& tensor) const {
  auto it = producer_.find(tensor);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphView::Consumers(const std::string& tensor) const {
  static const std::vector<int> kNone;
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? kNone : it->second;
}

const onnx::TensorProto* GraphView::Initializer(const std::string& name) const {
  auto it = initializers_.find(name);
  return it == initializers_.end() ? nullptr : it->second;
}

const onnx::ValueInfoProto* GraphView::GraphInput(const std::string& name) const {
  auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : it->second;
}

bool GraphView::IsGraphOutput(const std::string& name) const { return outputs_.count(name) > 0; }

const onnx::ValueInfoProto* GraphView::ValueInfo(const std::string& name) const {
  auto it = value_infos_.find(name);
  return it == value_infos_.end() ? nullptr : it->second;
}

std::vector<const onnx::ValueInfoProto*> GraphView::RealInputs() const {
  std::vector<const onnx::ValueInfoProto*> out;
  for (const auto& i : graph_.input()) {
    if (!initializers_.count(i.name())) out.push_back(&i);
  }
  return out;
}

int GraphView::FindNode(const std::string& name) const {
  auto it = nodes_by_name_.find(name);
  return it == nodes_by_name_.end() ? -1 : it->second.front();
}

std::vector<int> GraphView::NodesNamed(const std::string& name) const {
  auto it = nodes_by_name_.find(name);
  return it == nodes_by_name_.end() ? std::vector<int>{} : it->second;
}

std::vector<std::string> GraphView::NodeNames() const {
  std::vector<std::string> out;
  for (const auto& node : graph_.node()) {
    if (!node.name().empty()) out.push_back(node.name());
  }
  return out;
}

std::vector<std::string> GraphView::NodeReads(int index) const { return reads_[index]; }

std::vector<std::pair<int, std::string>> GraphView::UndefinedReads() const {
  auto defined = [&](const std::string& name) {
    return producer_.count(name) || initializers_.count(name) || inputs_.count(name);
  };
  std::vector<std::pair<int, std::string>> out;
  for (int i = 0; i < node_count(); ++i) {
    for (const auto& name : reads_[i]) {
      if (!defined(name)) out.emplace_back(i, name);
    }
  }
  for (const auto& o : graph_.output()) {
    if (!defined(o.name())) out.emplace_back(-1, o.name());
  }
  return out;
}

std::string DescribeUndefinedRead(const onnx::GraphProto& graph, int index,
                                  const std::string& name) {
  if (index < 0) return fmt::format("graph output '{}' is not produced by anything", name);
  const auto& node = graph.node(index);
  std::string label =
      node.name().empty() ? fmt::format("#{} ({})", index, node.op_type()) : node.name();
  return fmt::format("node '{}' ({}) reads '{}', which no node, initializer or graph input defines",
                     label, node.op_type(), name);
}

void RequireDefinedNames(const onnx::GraphProto& graph) {
  auto undefined = GraphView(graph).UndefinedReads();
  if (undefined.empty()) return;
  const auto& [index, name] = undefined.front();
  std::string more =
      undefined.size() == 1
          ? ""
          : fmt::format(" (and {} more names nothing defines; porttool check lists them)",
                        util::GroupDigits(undefined.size() - 1));
  throw Error(ErrorKind::kBadInput, DescribeUndefinedRead(graph, index, name) + more,
              index < 0 ? "" : graph.node(index).name(), name);
}

std::vector<int> GraphView::TopoOrder() const {
  const int n = graph_.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    for (const auto& name : reads_[i]) {
      int p = Producer(name);
      if (p >= 0) {
        if (p == i) {
          throw Error(ErrorKind::kBadInput,
                      fmt::format("node '{}' ({}) reads its own output '{}' (a cycle)",
                                  graph_.node(i).name(), graph_.node(i).op_type(), name),
                      graph_.node(i).name(), name);
        }
        users[p].push_back(i);
        ++pending[i];
      }
    }
  }
  // Kahn's algorithm with a min-heap so ties keep the original node order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[i] > 0) {
        const auto& node = graph_.node(i);
        throw Error(ErrorKind::kBadInput,
                    fmt::format("the graph has a cycle through node '{}' ({})", node.name(),
                                node.op_type()),
                    node.name());
      }
    }
  }
  return order;
}

bool GraphView::IsTopologicallySorted() const {
  for (int i = 0; i < graph_.node_size(); ++i) {
    for (const auto& name : reads_[i]) {
      if (Producer(name) >= i) return false;
    }
  }
  return true;
}

std::vector<std::string> GraphView::DuplicateDefinitions() const { return duplicates_; }

}  // namespace porttool::ir
