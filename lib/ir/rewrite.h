// The rewrite toolkit: the graph edits every pass makes, written once so that passes do not
// hand-edit protos. Edits keep the model's interface stable (graph input and output names never
// change), reach into If/Loop/Scan bodies where a renamed tensor is captured, and generate names
// that collide with nothing in the model, subgraphs included. Indexes (GraphView,
// ConstantLookup) are invalidated by every edit: rebuild them afterwards.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace porttool::ir {

// Calls `fn` on `graph` and on every subgraph below it (graph attributes of nodes), outermost
// first.
void ForEachGraph(onnx::GraphProto& graph, const std::function<void(onnx::GraphProto&)>& fn);
void ForEachGraph(const onnx::GraphProto& graph,
                  const std::function<void(const onnx::GraphProto&)>& fn);

// Makes every reader of `from` read `to` instead: node inputs of `graph` and captures inside its
// subgraphs (unless a subgraph defines its own `from`). Graph outputs are not renamed; callers
// that remove the producer of a graph output must make the replacement produce that name.
// Returns the number of inputs rewritten.
int ReplaceAllUses(onnx::GraphProto& graph, const std::string& from, const std::string& to);

// ReplaceAllUses for many names at once (one walk): every reader of a key of `renames` reads its
// value instead, in `graph`'s nodes and in captures inside subgraphs that do not define the name
// themselves. Graph outputs of `graph` are not renamed. Returns the number of reads rewritten.
int RenameReads(onnx::GraphProto& graph,
                const std::unordered_map<std::string, std::string>& renames);

// Removes the nodes flagged in `remove` (one flag per node), keeping the order of the rest.
int RemoveNodes(onnx::GraphProto& graph, const std::vector<bool>& remove);

// Removes nodes whose outputs nothing reads (no node, subgraph capture or graph output), to a
// fixed point. Returns the op types removed, one entry per node.
std::vector<std::string> RemoveDeadNodes(onnx::GraphProto& graph);

// Removes initializers nothing reads (graph inputs keep theirs), or only those among `only` when
// given (a pass cleaning up the weights it replaced). Returns their names.
std::vector<std::string> RemoveUnusedInitializers(
    onnx::GraphProto& graph, const std::unordered_set<std::string>* only = nullptr);

// Every tensor name read anywhere in `graph`: node inputs, subgraph captures, graph outputs.
std::unordered_set<std::string> ReadNames(const onnx::GraphProto& graph);

// Fresh names: `Tensor("conv_bn_w")` returns the hint itself when unused, else "hint_1",
// "hint_2"... Names seen are every tensor, initializer, node and value_info name in the graph and
// its subgraphs, plus every name generated so far.
class NameGenerator {
 public:
  explicit NameGenerator(const onnx::GraphProto& graph);
  std::string Tensor(const std::string& hint);
  std::string Node(const std::string& hint);

 private:
  std::string Fresh(std::unordered_set<std::string>& used, const std::string& hint);
  std::unordered_set<std::string> tensors_;
  std::unordered_set<std::string> nodes_;
};

// Adds `tensor` as an initializer named `name`. Large tensors stay inline in memory; io::Save
// moves tensors over its threshold to external data when asked (--external-data).
void AddInitializer(onnx::GraphProto& graph, onnx::TensorProto tensor, const std::string& name);

// Adds an opset_import for `domain` at `version` when the model has none for it.
void EnsureOpsetImport(onnx::ModelProto& model, const std::string& domain, int64_t version);
// Removes the opset_import of a non-ONNX `domain` when no node (subgraphs included) uses it.
// Returns true when it was removed.
bool DropUnusedOpsetImport(onnx::ModelProto& model, const std::string& domain);
// The model's version of the default ONNX domain (0 when absent).
int64_t OnnxOpset(const onnx::ModelProto& model);

// Per-op-type node counts, subgraphs included (for before/after tables).
std::map<std::string, int> OpHistogram(const onnx::GraphProto& graph);

}  // namespace porttool::ir
