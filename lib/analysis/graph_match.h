// Which node of one model is which node of another: the correspondence `porttool diff` reports
// on. Two exports of one network, or a model and its simplified copy, share most of their
// structure but not always their names (an exporter renumbers, a pass names unnamed nodes, a
// user renames everything), so nodes are matched in three steps:
//   1. by name, when the name is non-empty and unique on both sides and the op types agree;
//   2. by structure, to a fixed point: a node matches one of the same op, domain, attributes and
//      output count whose every input comes from the same place, meaning the matched producer's
//      same output, the matched graph input, or a value (initializer or Constant) with the same
//      bytes. A structural key is computed once per node when its inputs become known and looked
//      up in a hash table, so the pass is O(n log n), not a comparison of every pair;
//   3. loosely, for what a rewrite changed, each key only where the stricter ones left nodes
//      over: same op, domain and attributes and the same first input (a Conv that gained a fused
//      bias, a node whose weight changed); or the same consumers at the same input positions (a
//      node after a removed one); or the same inputs with other attributes. After each loose
//      match, step 2 again.
// Names never count once a node is matched: a model compared with a copy whose every node and
// tensor was renamed matches completely. Values are compared through a fingerprint (dtype, dims
// and a 64-bit hash of the bytes, read through io's maps, so external data is mapped, not copied,
// and each tensor is hashed once). Only the main graph is matched; a subgraph attribute is
// compared by a name-free fingerprint of its nodes.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"

namespace porttool::analysis {

// Where a tensor a node reads comes from, in terms the two sides share.
struct TensorSource {
  enum class Kind {
    kNone,        // an omitted optional input ("")
    kGraphInput,  // index: position in graph.input()
    kValue,       // an initializer or a Constant node's output; value: its fingerprint
    kNode,        // index: producing node, output: position among its outputs
    kUndefined,   // nothing defines the name
  };
  Kind kind = Kind::kNone;
  int index = -1;
  int output = 0;
  uint64_t value = 0;
  const onnx::TensorProto* tensor = nullptr;  // kValue: the initializer or Constant's `value`
  std::string name;                           // the tensor's name on its side
};

// One side of the comparison: the model, its index, and the value fingerprints computed so far.
class MatchSide {
 public:
  explicit MatchSide(const io::Model& model);
  const io::Model& model() const { return model_; }
  const onnx::GraphProto& graph() const { return model_.proto.graph(); }
  const ir::GraphView& view() const { return view_; }
  TensorSource SourceOf(const std::string& tensor) const;
  // dtype, dims and bytes hashed together; cached per tensor.
  uint64_t Fingerprint(const onnx::TensorProto& tensor) const;
  // Per attribute name: a name-free fingerprint of its value (tensor values by Fingerprint).
  std::map<std::string, uint64_t> AttributeKeys(const onnx::NodeProto& node) const;
  // Index in graph.input() by name, for inputs that are not initializers.
  int GraphInputIndex(const std::string& name) const;

 private:
  uint64_t AttributeKey(const onnx::AttributeProto& attr) const;
  uint64_t SubgraphKey(const onnx::GraphProto& graph) const;

  const io::Model& model_;
  ir::GraphView view_;
  std::unordered_map<std::string, int> input_index_;
  mutable std::unordered_map<const onnx::TensorProto*, uint64_t> fingerprints_;
};

// kNeighbours: by op and attributes with the same first input or the same consumers, or by op
// and all inputs with other attributes (step 3).
enum class MatchedBy { kNone, kName, kStructure, kNeighbours };

struct GraphMatch {
  std::vector<int> a_to_b;  // per node of A: the matched node of B, or -1
  std::vector<int> b_to_a;
  std::vector<MatchedBy> how;  // per node of A
  // Per graph.input() of A: the matched entry of B's graph.input(), or -1 (initializers
  // listed as inputs are -1: they are values). Matched by name, then by position.
  std::vector<int> inputs_a_to_b;
  std::vector<int> inputs_b_to_a;
  // Per graph.output() of A: the matched output of B, or -1 (by name, then by position).
  std::vector<int> outputs_a_to_b;
  std::vector<int> outputs_b_to_a;
  int rounds = 0;  // structural passes run until nothing more matched
  size_t matched() const;
};

// Matches `b`'s nodes to `a`'s (steps above). Both sides must outlive the result's use.
GraphMatch MatchGraphs(const MatchSide& a, const MatchSide& b);

// Whether source `x` of A and source `y` of B are the same under `match`.
bool SameSource(const GraphMatch& match, const TensorSource& x, const TensorSource& y);

// A tensor name of A -> the name of the same tensor in B: matched graph inputs and the outputs
// of matched nodes, position by position. Names equal on both sides are included too.
std::map<std::string, std::string> MatchedTensors(const GraphMatch& match, const MatchSide& a,
                                                  const MatchSide& b);

}  // namespace porttool::analysis
