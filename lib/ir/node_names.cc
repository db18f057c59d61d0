#include "lib/ir/node_names.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::ir {
namespace {

struct PositionalRef {
  int64_t index = -1;
  std::string op;  // empty without the " (Op)" suffix
};

// "(Op)" after the last space, when the text ends with one: what NodeLabel prints.
std::optional<std::pair<std::string, std::string>> SplitOpSuffix(std::string_view ref) {
  if (ref.size() < 4 || ref.back() != ')') return std::nullopt;
  size_t open = ref.rfind(" (");
  if (open == std::string_view::npos || open + 3 > ref.size() - 1) return std::nullopt;
  return std::make_pair(std::string(ref.substr(0, open)),
                        std::string(ref.substr(open + 2, ref.size() - open - 3)));
}

std::optional<PositionalRef> ParsePositional(std::string_view ref) {
  PositionalRef out;
  if (auto split = SplitOpSuffix(ref)) {
    ref = ref.substr(0, split->first.size());
    out.op = split->second;
  }
  if (ref.size() < 2 || ref.front() != '#') return std::nullopt;
  std::string_view digits = ref.substr(1);
  // from_chars takes a sign: "#-1" would index before the first node.
  if (digits.front() < '0' || digits.front() > '9') return std::nullopt;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.index);
  if (ec == std::errc::result_out_of_range) {
    out.index = INT64_MAX;
  } else if (ec != std::errc() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return out;
}

void RequireOp(const GraphView& view, int index, const std::string& ref, const std::string& op) {
  const std::string& actual = view.node(index).op_type();
  if (op.empty() || op == actual) return;
  throw Error(ErrorKind::kUsage, fmt::format("node '{}' is a {}, not a {}", ref, actual, op), ref);
}

int FindPositional(const GraphView& view, const std::string& ref, const PositionalRef& p) {
  if (p.index >= view.node_count()) {
    throw Error(ErrorKind::kUsage,
                view.node_count() == 0
                    ? fmt::format("node '{}' is out of range: the graph has no nodes", ref)
                    : fmt::format("node '{}' is out of range: the graph has {} node(s), #0 to #{}",
                                  ref, view.node_count(), view.node_count() - 1),
                ref);
  }
  int index = static_cast<int>(p.index);
  RequireOp(view, index, ref, p.op);
  return index;
}

// Labels of the nodes `indices`, the first few and a count: an ambiguous name in a PyTorch 1.x
// export (every node unnamed) matches hundreds.
std::string LabelsText(const GraphView& view, const std::vector<int>& indices) {
  std::vector<std::string> labels;
  for (int index : indices) {
    labels.push_back(fmt::format("#{} ({})", index, view.node(index).op_type()));
  }
  return util::JoinFirst(labels);
}

std::vector<std::string> Labels(const GraphView& view) {
  std::vector<std::string> out;
  out.reserve(view.node_count());
  for (int i = 0; i < view.node_count(); ++i) out.push_back(NodeLabel(view, i));
  return out;
}

void CollectNames(const onnx::GraphProto& graph, std::unordered_set<std::string>& names) {
  for (const auto& node : graph.node()) {
    if (!node.name().empty()) names.insert(node.name());
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectNames(attr.g(), names);
      for (const auto& g : attr.graphs()) CollectNames(g, names);
    }
  }
}

int NameNodesIn(onnx::GraphProto& graph, std::unordered_set<std::string>& taken) {
  int named = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto& node = *graph.mutable_node(i);
    if (!node.name().empty()) continue;
    node.set_name(UniqueNodeName(node, i, taken));
    ++named;
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) named += NameNodesIn(*attr.mutable_g(), taken);
      for (auto& g : *attr.mutable_graphs()) named += NameNodesIn(g, taken);
    }
  }
  return named;
}

}  // namespace

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("#{} ({})", index, node.op_type()) : node.name();
}

std::string NodeLabel(const GraphView& view, int index) {
  return NodeLabel(view.node(index), index);
}

std::string LabelWithOp(const std::string& label, const std::string& op_type) {
  const std::string suffix = " (" + op_type + ")";
  if (label.size() > suffix.size() && label.front() == '#' &&
      label.compare(label.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return label;
  }
  return label + suffix;
}

std::string QuotedNodeLabel(const std::string& label, const std::string& op_type) {
  std::string with_op = LabelWithOp(label, op_type);
  return with_op == label ? "'" + label + "'" : fmt::format("'{}' ({})", label, op_type);
}

int FindNodeRef(const GraphView& view, const std::string& ref) {
  if (ref.empty()) return -1;  // unnamed nodes carry "": it addresses none of them
  if (int exact = view.FindNode(ref); exact >= 0) return exact;
  if (auto positional = ParsePositional(ref)) return FindPositional(view, ref, *positional);
  if (auto split = SplitOpSuffix(ref)) {
    if (int named = view.FindNode(split->first); named >= 0) {
      RequireOp(view, named, ref, split->second);
      return named;
    }
  }
  return -1;
}

int ResolveNodeRef(const GraphView& view, const std::string& ref, std::string_view role) {
  if (ref.empty()) {
    std::vector<int> unnamed = view.NodesNamed("");
    throw Error(ErrorKind::kUsage,
                unnamed.empty()
                    ? fmt::format("{} '' names no node: give a node name or '#N'", role)
                    : fmt::format("{} '' names no node: {} node(s) have no name ({}); address one "
                                  "by its position, e.g. '#{}'",
                                  role, unnamed.size(), LabelsText(view, unnamed), unnamed.front()),
                ref);
  }
  std::vector<int> same_name = view.NodesNamed(ref);
  if (same_name.size() > 1) {
    throw Error(
        ErrorKind::kUsage,
        fmt::format("{} '{}' is ambiguous: {} nodes carry that name ({}); address one by "
                    "its position, e.g. '#{}'",
                    role, ref, same_name.size(), LabelsText(view, same_name), same_name.front()),
        ref);
  }
  if (int index = FindNodeRef(view, ref); index >= 0) return index;
  auto closest = util::ClosestNames(ref, Labels(view), 3);
  throw Error(
      ErrorKind::kUsage,
      fmt::format("{} '{}' is not a node of the graph{}", role, ref,
                  closest.empty() ? std::string() : "; closest: " + util::Join(closest, ", ")),
      ref);
}

std::unordered_set<std::string> AllNodeNames(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> names;
  CollectNames(graph, names);
  return names;
}

std::string UniqueNodeName(const onnx::NodeProto& node, int index,
                           std::unordered_set<std::string>& taken) {
  const std::string base = fmt::format("{}_{}", node.op_type(), index);
  std::string name = base;
  for (int suffix = 1; taken.count(name); ++suffix) name = fmt::format("{}_{}", base, suffix);
  taken.insert(name);
  return name;
}

int NameUnnamedNodes(onnx::GraphProto& graph) {
  std::unordered_set<std::string> taken = AllNodeNames(graph);
  return NameNodesIn(graph, taken);
}

std::vector<std::string> NameAddressedNodes(onnx::GraphProto& graph,
                                            const std::vector<std::string>& refs,
                                            std::string_view role) {
  std::vector<int> indices;
  {
    GraphView view(graph);
    for (const auto& ref : refs) indices.push_back(ResolveNodeRef(view, ref, role));
  }
  std::unordered_set<std::string> taken = AllNodeNames(graph);
  std::vector<std::string> names;
  for (int index : indices) {
    auto& node = *graph.mutable_node(index);
    if (node.name().empty()) node.set_name(UniqueNodeName(node, index, taken));
    names.push_back(node.name());
  }
  return names;
}

}  // namespace porttool::ir
