// GraphView: a read-only index over one GraphProto — who produces and who consumes each tensor,
// which names are initializers or graph inputs, a topological order, and the outer-scope names
// that If/Loop/Scan bodies capture. The model stays a ModelProto; a pass that edits the graph
// rebuilds the view (it is cheap: one pass over the nodes).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace porttool::ir {

class GraphView {
 public:
  // Indexes `graph`, which must outlive the view and not change while it is used.
  explicit GraphView(const onnx::GraphProto& graph);

  const onnx::GraphProto& graph() const { return graph_; }
  int node_count() const { return graph_.node_size(); }
  const onnx::NodeProto& node(int index) const { return graph_.node(index); }

  // Index of the node that produces `tensor`, or -1 (graph input, initializer, or undefined).
  int Producer(const std::string& tensor) const;
  // Indices of nodes that read `tensor`, directly or from inside one of their subgraphs
  // (outer-scope capture), in node order, each once.
  const std::vector<int>& Consumers(const std::string& tensor) const;

  const onnx::TensorProto* Initializer(const std::string& name) const;
  const onnx::ValueInfoProto* GraphInput(const std::string& name) const;
  bool IsGraphOutput(const std::string& name) const;
  // Type info for a tensor from graph inputs, outputs or value_info (nullptr when unknown).
  const onnx::ValueInfoProto* ValueInfo(const std::string& name) const;
  // Graph inputs that are not also initializers (the inputs a caller must feed).
  std::vector<const onnx::ValueInfoProto*> RealInputs() const;

  // Node index by node name; -1 when absent. Names are not required to be unique by ONNX:
  // NodesNamed returns all matches.
  int FindNode(const std::string& name) const;
  std::vector<int> NodesNamed(const std::string& name) const;
  std::vector<std::string> NodeNames() const;

  // Nodes in a topological order (Kahn, stable: ties keep file order). Throws Error(kBadInput)
  // naming a node on a cycle. Inputs that nothing defines are ignored here (see check's lints).
  std::vector<int> TopoOrder() const;
  // Whether the nodes as stored are already topologically ordered.
  bool IsTopologicallySorted() const;

  // Every tensor name produced by more than one source (node output, initializer, graph input
  // that is not an initializer).
  std::vector<std::string> DuplicateDefinitions() const;

  // What nothing defines (no node output, initializer or graph input): names nodes read, as
  // (node index, name) in node order, then graph outputs as (-1, name).
  std::vector<std::pair<int, std::string>> UndefinedReads() const;

  // Names a node reads: its inputs plus outer-scope names captured by its subgraphs.
  std::vector<std::string> NodeReads(int index) const;

  // Outer-scope names that the subgraphs of `node` read without defining them.
  static std::vector<std::string> CapturedNames(const onnx::NodeProto& node);

 private:
  const onnx::GraphProto& graph_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> inputs_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> value_infos_;
  std::unordered_set<std::string> outputs_;
  std::unordered_map<std::string, std::vector<int>> nodes_by_name_;
  std::vector<std::vector<std::string>> reads_;  // per node: NodeReads
  std::vector<std::string> duplicates_;
};

// What UndefinedReads' (index, name) means, in words: "node 'concat' (Concat) reads 't0', which
// no node, initializer or graph input defines", or for a graph output (index -1) "graph output
// 'y' is not produced by anything". Unnamed nodes are "#3 (Concat)".
std::string DescribeUndefinedRead(const onnx::GraphProto& graph, int index,
                                  const std::string& name);

// Throws Error(kBadInput) naming the first name of `graph` that nothing defines and counting the
// rest: the stages that transform, emit or judge a model refuse one whose wiring is broken rather
// than pass the breakage on (`porttool check` lists every such name).
void RequireDefinedNames(const onnx::GraphProto& graph);

}  // namespace porttool::ir
