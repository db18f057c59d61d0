// fold-constants: evaluates every node whose inputs are all constant and stores its outputs as
// initializers; then constant-to-initializer, dead-node and unused-initializer cleanup; repeated
// with shape inference in between until a round folds nothing (capped).
//
// Before: s = Shape(x)            [x: float[1,3,640,640] after --input-shape]
//         d = Gather(s, 2); c = Concat(d, k); y = Reshape(x, c)
// After:  y = Reshape(x, c)       [c: an int64 initializer]
//
// Preconditions, per node (otherwise it is kept and the reason noted):
//   - every input is constant (initializer, Constant node, or a Shape/Size of a static shape);
//   - ONNX domain, a kernel in the executor, no subgraph, not a random op;
//   - no output is a graph output (the interface stays a computed tensor);
//   - no float16/bfloat16/string tensor (the executor computes float16 in float32);
//   - the result is at most max-tensor-bytes and, above kSmallResultBytes, not larger than the
//     constant inputs it replaces: folding must never grow the model (Tile/Expand/ConstantOfShape).
// Why: exporters leave shape arithmetic and constant subgraphs that NPU converters reject or count
// as layers; onnx-simplifier's main job. Numerics are the executor's (the single source).
#include "passes/fold_constants.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <variant>

#include "lib/io/model.h"
#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "passes/constant_to_initializer.h"
#include "passes/input_shape_spec.h"
#include "passes/pattern_util.h"

namespace porttool::passes {
namespace {

// Results up to this size may exceed their inputs: shape vectors built from scalars grow a few
// bytes, which is what folding shape chains is for.
constexpr uint64_t kSmallResultBytes = 256;

const std::set<std::string> kRandomOps = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                          "RandomUniformLike", "Multinomial",   "Bernoulli"};

bool IsHalfOrString(int32_t dtype) {
  return dtype == onnx::TensorProto::FLOAT16 || dtype == onnx::TensorProto::BFLOAT16 ||
         dtype == onnx::TensorProto::STRING;
}

std::map<std::string, int> Opsets(const onnx::ModelProto& model) {
  std::map<std::string, int> opsets;
  for (const auto& op : model.opset_import()) {
    opsets[ir::IsOnnxDomain(op.domain()) ? "" : op.domain()] = static_cast<int>(op.version());
  }
  return opsets;
}

// The static dims of `tensor` from value_info, or nullopt.
std::optional<std::vector<int64_t>> StaticDims(const ir::GraphView& view,
                                               const std::string& tensor) {
  const auto* vi = view.ValueInfo(tensor);
  if (!vi || !vi->type().has_tensor_type() || !vi->type().tensor_type().has_shape()) {
    return std::nullopt;
  }
  std::vector<int64_t> dims;
  for (const auto& d : vi->type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

onnx::TensorProto Int64Tensor(const std::vector<int64_t>& values, bool scalar) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// Shape/Size of a tensor whose shape is static: a value known without its data.
std::optional<onnx::TensorProto> FoldShapeOf(const ir::GraphView& view,
                                             const onnx::NodeProto& node) {
  if (!ir::IsOnnxDomain(node.domain()) || node.input_size() != 1) return std::nullopt;
  if (node.op_type() != "Shape" && node.op_type() != "Size") return std::nullopt;
  auto dims = StaticDims(view, node.input(0));
  if (!dims) return std::nullopt;
  if (node.op_type() == "Size") return Int64Tensor({ir::ElementCount(*dims)}, true);
  auto rank = static_cast<int64_t>(dims->size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(AttrInt(node, "start", 0)), end = clamp(AttrInt(node, "end", rank));
  return Int64Tensor({dims->begin() + start, dims->begin() + std::max(start, end)}, false);
}

// Names the node in notes; unnamed nodes (allowed by ONNX) by op type and first output.
std::string Label(const onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  return node.op_type() + " -> " + (node.output_size() ? node.output(0) : std::string("?"));
}

class Folder {
 public:
  Folder(io::Model& model, const PassContext& context, uint64_t max_bytes)
      : model_(model), context_(context), max_bytes_(max_bytes), opsets_(Opsets(model.proto)) {}

  // One sweep over the main graph in topological order. Returns the number of nodes folded;
  // `kept` receives the reason for every all-constant node left in place.
  int Sweep(std::map<std::string, std::string>& kept) {
    auto& graph = *model_.proto.mutable_graph();
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    std::unordered_map<std::string, onnx::TensorProto> folded;
    std::vector<bool> remove(graph.node_size(), false);
    auto find = [&](const std::string& name) -> const onnx::TensorProto* {
      auto it = folded.find(name);
      return it != folded.end() ? &it->second : constants.Find(name);
    };
    for (int index : view.TopoOrder()) {
      const auto& node = graph.node(index);
      if (ir::IsConstantNode(node)) continue;
      std::vector<onnx::TensorProto> outputs;
      if (auto shape = FoldShapeOf(view, node); shape && !view.IsGraphOutput(node.output(0))) {
        outputs.push_back(std::move(*shape));
      } else {
        std::vector<const onnx::TensorProto*> inputs;
        bool all_constant = true;
        for (const auto& in : node.input()) {
          inputs.push_back(in.empty() ? nullptr : find(in));
          all_constant &= in.empty() || inputs.back() != nullptr;
        }
        if (!all_constant || node.input_size() == 0) {
          if (kRandomOps.count(node.op_type())) kept[Label(node)] = "random op: value not fixed";
          continue;
        }
        auto result = Evaluate(view, node, inputs);
        if (auto* reason = std::get_if<std::string>(&result)) {
          kept[Label(node)] = *reason;
          continue;
        }
        outputs = std::move(std::get<std::vector<onnx::TensorProto>>(result));
      }
      for (int o = 0; o < node.output_size(); ++o) {
        if (!node.output(o).empty()) folded[node.output(o)] = std::move(outputs[o]);
      }
      remove[index] = true;
    }
    for (auto& [name, tensor] : folded) ir::AddInitializer(graph, std::move(tensor), name);
    return ir::RemoveNodes(graph, remove);
  }

 private:
  using Outcome = std::variant<std::string, std::vector<onnx::TensorProto>>;

  Outcome Evaluate(const ir::GraphView& view, const onnx::NodeProto& node,
                   const std::vector<const onnx::TensorProto*>& inputs) {
    if (!ir::IsOnnxDomain(node.domain())) return "custom domain '" + node.domain() + "'";
    if (kRandomOps.count(node.op_type())) return std::string("random op: value not fixed");
    for (const auto& out : node.output()) {
      if (view.IsGraphOutput(out)) return "its output '" + out + "' is a graph output";
    }
    uint64_t input_bytes = 0;
    for (const auto* t : inputs) {
      if (!t) continue;
      if (IsHalfOrString(t->data_type())) {
        return std::string("float16/bfloat16/string input: the executor computes in float32");
      }
      input_bytes += io::TensorPayloadBytes(*t);
    }
    if (node.op_type() == "Cast" && IsHalfOrString(static_cast<int32_t>(AttrInt(node, "to", 0)))) {
      return std::string("casts to float16/bfloat16/string: the executor stores float32");
    }
    auto it = opsets_.find("");
    int opset = it == opsets_.end() ? 1 : it->second;
    const auto& evaluator = context_.evaluator_or_default();
    if (auto why = evaluator.WhyNot(node, opset)) return *why;
    std::vector<onnx::TensorProto> outputs;
    try {
      outputs = evaluator.Evaluate(model_, node, opset, inputs);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInternal) throw;
      return std::string("evaluation failed: ") + e.what();
    }
    uint64_t output_bytes = 0;
    for (const auto& t : outputs) output_bytes += io::TensorPayloadBytes(t);
    if (output_bytes > max_bytes_) {
      return fmt::format("result of {} exceeds max-tensor-bytes ({})",
                         util::FormatBytes(output_bytes), util::FormatBytes(max_bytes_));
    }
    if (output_bytes > kSmallResultBytes && output_bytes > input_bytes) {
      return fmt::format("folding would grow the model: {} result from {} of constant inputs",
                         util::FormatBytes(output_bytes), util::FormatBytes(input_bytes));
    }
    return outputs;
  }

  io::Model& model_;
  const PassContext& context_;
  uint64_t max_bytes_;
  std::map<std::string, int> opsets_;
};

}  // namespace

PassResult FoldConstantsPass::Run(io::Model& model, const PassOptions& options,
                                  PassContext& context) const {
  shape::InferOptions infer;
  if (options.Has("input-shape")) {
    infer.input_shapes = ParseInputShapes({options.Get("input-shape")});
  }
  uint64_t max_bytes = static_cast<uint64_t>(
      options.GetInt("max-tensor-bytes", static_cast<int64_t>(context.max_tensor_bytes)));
  int max_rounds = static_cast<int>(options.GetInt("max-rounds", context.max_rounds));
  PassResult result;
  std::map<std::string, int> removed;
  std::map<std::string, std::string> kept;
  Folder folder(model, context, max_bytes);
  int round = 0;
  bool changed = true;
  for (; changed && round < max_rounds; ++round) {
    try {
      shape::InferShapes(model, infer);
    } catch (const io::ResourceClaimError&) {
      throw;  // a tensor of 1 TiB or more: the model is refused (exit 3), not folded around
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kUsage) throw;
      result.notes.push_back(std::string("shape inference failed, shapes not used: ") + e.what());
    }
    infer.input_shapes.clear();  // pinned on the model by the first round
    kept.clear();
    int folded = folder.Sweep(kept);
    std::vector<std::string> notes;
    int constants = ConstantsToInitializers(*model.proto.mutable_graph(), notes);
    for (const auto& op : ir::RemoveDeadNodes(*model.proto.mutable_graph())) {
      ++removed[op];
      ++result.changes;
    }
    auto unused = ir::RemoveUnusedInitializers(*model.proto.mutable_graph());
    changed = folded > 0;
    result.changes += folded + constants + static_cast<int>(unused.size());
  }
  for (const auto& node : model.proto.graph().node()) {
    if (!ir::GraphView::CapturedNames(node).empty() || node.op_type() == "If" ||
        node.op_type() == "Loop" || node.op_type() == "Scan") {
      result.notes.push_back("subgraph bodies are not folded (node '" + node.name() + "')");
    }
  }
  if (changed) {
    result.notes.push_back(fmt::format(
        "stopped at the round cap (max-rounds={}); the model may fold further", max_rounds));
  }
  for (const auto& [op, n] : removed) {
    result.notes.push_back(fmt::format("removed {} dead {} node(s)", n, op));
  }
  for (const auto& [node, reason] : kept) {
    result.notes.push_back(fmt::format("kept '{}': {}", node, reason));
  }
  return result;
}

}  // namespace porttool::passes
