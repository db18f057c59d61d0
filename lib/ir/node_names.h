// Node addressing, in one place: how a node is shown and how a user names one. ONNX does not
// require node names (PyTorch 1.x exports leave every node unnamed), so a node is shown by its
// name or, without one, as "#N (Op)", N being its 0-based position in the top-level graph.node
// list; every option that takes a node accepts what is shown: a name, "#N" or "#N (Op)" (and
// "name (Op)"). Nodes inside subgraphs are not addressed by position. Stages that transform the
// graph before using a node (quantize, port) turn the user's references into real names first,
// giving an addressed unnamed node the name the name-nodes pass would give it.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "lib/ir/graph_view.h"

namespace porttool::ir {

// The node's name, or "#N (Op)" when it has none.
std::string NodeLabel(const onnx::NodeProto& node, int index);
// NodeLabel of the node at `index` in the top-level graph.
std::string NodeLabel(const GraphView& view, int index);
// "label (Op)" for text that shows a node with its op, without repeating the op an unnamed
// node's label already ends with ("#83 (Reshape)", not "#83 (Reshape) (Reshape)").
std::string LabelWithOp(const std::string& label, const std::string& op_type);
// "'name' (Op)", or "'#N (Op)'" for an unnamed node: what the node options take is between the
// quotes.
std::string QuotedNodeLabel(const std::string& label, const std::string& op_type);

// The index of the node `ref` addresses: a node carrying that exact name (the first, when
// several do), else "#N" or "#N (Op)", else "name (Op)". -1 when nothing matches. Throws
// Error(kUsage) for "#N" beyond the node count (naming the range) and for an "(Op)" that is not
// the node's op type.
int FindNodeRef(const GraphView& view, const std::string& ref);

// FindNodeRef for a user's option: Error(kUsage) also when nothing matches ("no node 'x' in the
// graph; closest: ...") and when the name is ambiguous (several nodes carry it, each listed as
// "#N (Op)" to address it instead). `role` says what the node is for ("cut node", "excluded
// node"), so the CLI can add its flag.
int ResolveNodeRef(const GraphView& view, const std::string& ref, std::string_view role);

// Every node name of the graph and its subgraphs (what a new name must not collide with).
std::unordered_set<std::string> AllNodeNames(const onnx::GraphProto& graph);

// "<op>_<index>", suffixed "_1", "_2", ... until it is not in `taken`; the result is added to
// `taken`, so successive calls never return the same name.
std::string UniqueNodeName(const onnx::NodeProto& node, int index,
                           std::unordered_set<std::string>& taken);

// Gives every unnamed node (subgraphs included) a UniqueNodeName: top-level nodes first, in
// order, each named after its position; then each subgraph's. Returns how many it named.
int NameUnnamedNodes(onnx::GraphProto& graph);

// The real names of the top-level nodes `refs` address (ResolveNodeRef), naming an addressed
// node that has no name with UniqueNodeName (the graph changes only then). An empty list stays
// empty.
std::vector<std::string> NameAddressedNodes(onnx::GraphProto& graph,
                                            const std::vector<std::string>& refs,
                                            std::string_view role);

}  // namespace porttool::ir
