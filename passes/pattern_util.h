// Helpers shared by the pattern passes: the single-consumer test every fusion needs, reading a
// constant as a float tensor, and the skip note format. Kept here so each pass file holds only
// its own match and rewrite.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/runtime/tensor.h"
#include "passes/pass.h"

namespace porttool::passes {

// Why `tensor` cannot be absorbed into its only reader `reader` (it has other readers, is read by
// a subgraph, or is a graph output), or nullopt.
std::optional<std::string> WhyNotPrivate(const ir::GraphView& view, const std::string& tensor,
                                         int reader);

// The constant `tensor` as a float32 tensor, or nullopt when it is not a float constant.
std::optional<runtime::Tensor> FloatConstant(const io::Model& model,
                                             const ir::ConstantLookup& constants,
                                             const std::string& tensor);

// The per-output-channel values of `k` broadcast against a rank-`rank` conv output with
// `channels` channels (every dim of `k` 1 except the channel axis), or nullopt.
std::optional<std::vector<float>> ChannelValues(const runtime::Tensor& k, int rank,
                                                int64_t channels);

// Multiplies conv weight `w` by s[output channel]. Conv weights are [C_out, C_in/group, k...];
// ConvTranspose weights are [C_in, C_out/group, k...], so the output channel of weight (i, j) is
// (i / (C_in/group)) * (C_out/group) + j.
void ScaleWeights(runtime::Tensor& w, bool transposed, int64_t group, const std::vector<float>& s);

// A conv (Conv/ConvTranspose, ONNX domain) whose output meets a per-channel float constant in a
// two-input elementwise node: what fuse-conv-add and fuse-conv-mul fold.
struct ConvWithChannelConstant {
  int conv = -1;
  runtime::Tensor weight;               // the conv's weight
  std::optional<runtime::Tensor> bias;  // the conv's bias, when it has one
  std::vector<float> values;            // the constant, one value per output channel
  bool transposed = false;
  int64_t group = 1;
};

// Not a candidate: no input of the node is a conv output with a constant on the other side.
inline constexpr char kNotConvWithConstant[] =
    "no operand is a conv output with a constant on the other side";

// The match for elementwise node `index`, or why it cannot fold (kNotConvWithConstant when it is
// not a candidate at all; callers note only the other reasons). `what` names the constant's role
// in the reason ("bias", "scale").
std::variant<ConvWithChannelConstant, std::string> MatchConvWithChannelConstant(
    const io::Model& model, const ir::GraphView& view, const ir::ConstantLookup& constants,
    int index, const std::string& what);

// What folding one elementwise node into its conv gives the conv: new weights and/or bias.
struct ConvFold {
  std::optional<runtime::Tensor> weight, bias;
};

// fuse-conv-add and fuse-conv-mul: every ONNX `op_type` node matching
// MatchConvWithChannelConstant is folded into its conv by `fold` (one node per conv and run), the
// conv taking the node's output name; the other reasons become notes. Returns the pass result.
PassResult FoldIntoConvs(io::Model& model, const std::string& op_type, const std::string& what,
                         const std::function<ConvFold(const ConvWithChannelConstant&)>& fold);

// "kept Op 'name': reason" — one format for every skip note.
std::string SkipNote(const onnx::NodeProto& node, const std::string& reason);

// The match loop of a single-node pattern pass: `match(view, constants, index)` for every ONNX
// `op_type` node of the main graph, returning a variant holding a Plan, a std::string reason the
// node is kept (noted in `result` as a skip) or anything else (nothing to do, no note). The plans
// come back in graph order, matched on one view before any rewrite changes the graph.
template <typename Plan, typename MatchFn>
std::vector<Plan> MatchNodes(const io::Model& model, const std::string& op_type, MatchFn match,
                             PassResult& result) {
  std::vector<Plan> plans;
  ir::GraphView view(model.proto.graph());
  ir::ConstantLookup constants(view);
  for (int i = 0; i < view.node_count(); ++i) {
    const auto& node = view.node(i);
    if (node.op_type() != op_type || !ir::IsOnnxDomain(node.domain())) continue;
    auto matched = match(view, constants, i);
    if (auto* reason = std::get_if<std::string>(&matched)) {
      result.notes.push_back(SkipNote(node, *reason));
    } else if (auto* plan = std::get_if<Plan>(&matched)) {
      plans.push_back(std::move(*plan));
    }
  }
  return plans;
}

// Integer / float / string attribute of a node with a default.
int64_t AttrInt(const onnx::NodeProto& node, const std::string& name, int64_t def);
float AttrFloat(const onnx::NodeProto& node, const std::string& name, float def);
std::string AttrString(const onnx::NodeProto& node, const std::string& name,
                       const std::string& def);

}  // namespace porttool::passes

namespace porttool::passes {

// Builds the replacement of one node: new nodes named "<base>/<op>_<n>", fresh tensor names, and
// scalar float initializers. The last node built writes `final_output` when given, so the
// replaced node's output name (maybe a graph output) survives.
class NodeEmitter {
 public:
  NodeEmitter(onnx::GraphProto& graph, ir::NameGenerator& names, std::string base)
      : graph_(graph), names_(names), base_(std::move(base)) {}
  // Adds `op(inputs)`; returns its output name (`output` when non-empty).
  std::string Op(const std::string& op, const std::vector<std::string>& inputs,
                 const std::string& output = "");
  // A float scalar initializer holding `value`; returns its name.
  std::string Scalar(float value);
  std::vector<onnx::NodeProto>& nodes() { return nodes_; }

 private:
  onnx::GraphProto& graph_;
  ir::NameGenerator& names_;
  std::string base_;
  std::vector<onnx::NodeProto> nodes_;
};

// Replaces node i by `replacements[i]` for every entry, in place (topological order is kept
// because each replacement reads only what the original node read).
void ReplaceNodes(onnx::GraphProto& graph,
                  std::map<int, std::vector<onnx::NodeProto>>& replacements);

}  // namespace porttool::passes
