#include "lib/shape/infer.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <deque>
#include <memory>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "lib/io/external_data.h"
#include "lib/io/functions.h"
#include "lib/io/node_attributes.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"

namespace porttool::shape {
namespace {

// Small integer tensors are what data propagation reads (Reshape targets, Slice bounds, ...);
// anything larger is a weight and stays on disk.
constexpr uint64_t kInlineLimitBytes = 64 * 1024;

bool IsIndexType(int32_t dtype) {
  return dtype == onnx::TensorProto::INT64 || dtype == onnx::TensorProto::INT32;
}

// ONNX 1.12's data propagation throws "Cannot parse data from external tensors", so small external
// integer tensors are inlined for the duration of inference and put back afterwards (the saved
// model keeps its external references).
class InlineSmallExternalTensors {
 public:
  explicit InlineSmallExternalTensors(io::Model& model) {
    io::ForEachTensor(*model.proto.mutable_graph(), [&](onnx::TensorProto& t) {
      if (!io::IsExternal(t) || !IsIndexType(t.data_type()) ||
          io::TensorPayloadBytes(t) > kInlineLimitBytes) {
        return;
      }
      io::TensorBytes bytes = io::ReadTensorBytes(model, t);
      auto original = std::make_unique<onnx::TensorProto>(t);
      t.clear_external_data();
      t.clear_data_location();
      t.set_raw_data(bytes.bytes.data(), bytes.bytes.size());
      saved_.emplace_back(&t, std::move(original));
    });
  }
  ~InlineSmallExternalTensors() {
    for (auto& [slot, original] : saved_) slot->Swap(original.get());
  }
  InlineSmallExternalTensors(const InlineSmallExternalTensors&) = delete;
  InlineSmallExternalTensors& operator=(const InlineSmallExternalTensors&) = delete;

 private:
  std::vector<std::pair<onnx::TensorProto*, std::unique_ptr<onnx::TensorProto>>> saved_;
};

// Everything inference may change, serialized: equal signatures mean a fixed point.
std::string TypeSignature(const onnx::GraphProto& graph) {
  std::string sig;
  for (const auto* list : {&graph.value_info(), &graph.output()}) {
    for (const auto& vi : *list) {
      sig += vi.name();
      vi.type().AppendToString(&sig);
    }
  }
  return sig;
}

struct GraphSize {
  int nodes = 0;
  int outputs = 0;
  int value_infos = 0;
  int initializers = 0;
};

GraphSize SizeOf(const onnx::GraphProto& g) {
  return {g.node_size(), g.output_size(), g.value_info_size(), g.initializer_size()};
}

// ONNX inference must only ever add information; anything else is reported, never saved.
void RequireNotShrunk(const GraphSize& before, const GraphSize& after) {
  if (after.nodes != before.nodes || after.outputs != before.outputs ||
      after.initializers != before.initializers || after.value_infos < before.value_infos) {
    ThrowInternal(
        "shape inference returned a smaller graph ({} -> {} nodes, {} -> {} outputs, {} -> {} "
        "value_info); refusing to use it",
        before.nodes, after.nodes, before.outputs, after.outputs, before.value_infos,
        after.value_infos);
  }
}

std::string FirstParagraph(const std::string& text) {
  auto cut = text.find("\n\n");
  std::string out = cut == std::string::npos ? text : text.substr(0, cut);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// ONNX lists one "(op_type:X, node name: N): message" line per failing node, the first being the
// cause and the rest its downstream consequences ("Input 0 expected to have type"): name the
// first node and count the others.
[[noreturn]] void ThrowInferenceError(const std::string& text) {
  static const std::regex kLine(R"(\(op_type:([^,]*), node name: ([^)]*)\): (.*))");
  auto begin = std::sregex_iterator(text.begin(), text.end(), kLine);
  std::smatch first;
  int count = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    if (count++ == 0) first = *it;
  }
  if (count == 0) ThrowBadInput("shape inference failed: {}", text);
  std::string message = first[3].str();
  message = message.substr(0, message.find('\n'));
  throw Error(
      ErrorKind::kBadInput,
      fmt::format(
          "shape inference failed at node '{}' ({}): {}{}", first[2].str(), first[1].str(), message,
          count > 1 ? fmt::format(" ({} more node(s) fail downstream of it)", count - 1) : ""),
      first[2].str());
}

// True when a node (here or in a subgraph) reads a value that nothing defined before it: an
// undefined name, or a graph that is not topologically sorted. ONNX 1.12's data propagation
// dereferences the missing type of such an input (a segfault found by fuzz_passes: Shape(X) with
// X defined nowhere, or by a later node); inference without it copes.
bool ReadsBeforeDefinition(const onnx::GraphProto& graph, std::unordered_set<std::string> known) {
  for (const auto& vi : graph.input()) known.insert(vi.name());
  for (const auto& t : graph.initializer()) known.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) known.insert(t.values().name());
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input()) {
      if (!in.empty() && !known.count(in)) return true;
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g() && ReadsBeforeDefinition(attr.g(), known)) return true;
      for (const auto& g : attr.graphs()) {
        if (ReadsBeforeDefinition(g, known)) return true;
      }
    }
    for (const auto& out : node.output()) known.insert(out);
  }
  return false;
}

// ONNX 1.12's inference functions read required attributes without looking (its checker
// verifies them first; inference alone does not): a Scan without num_scan_inputs is a null
// dereference inside libonnx (found by fuzz_check). Such a node is refused before inference.
using OpsetVersions = std::unordered_map<std::string, int64_t>;

std::string CanonicalDomain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

const onnx::OpSchema* SchemaOf(const onnx::NodeProto& node, const OpsetVersions& opsets) {
  std::string domain = CanonicalDomain(node.domain());
  auto opset = opsets.find(domain);
  if (opset == opsets.end()) return nullptr;
  return onnx::OpSchemaRegistry::Schema(node.op_type(), opset->second, domain);
}

bool HasAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

void CheckRequiredAttributes(const onnx::GraphProto& graph, const OpsetVersions& opsets) {
  for (const auto& node : graph.node()) {
    if (const onnx::OpSchema* schema = SchemaOf(node, opsets)) {
      for (const auto& [name, attr] : schema->attributes()) {
        if (!attr.required || HasAttribute(node, name)) continue;
        throw Error(ErrorKind::kBadInput,
                    fmt::format("node '{}' ({}) lacks its required attribute '{}'", node.name(),
                                node.op_type(), name),
                    node.name());
      }
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CheckRequiredAttributes(attr.g(), opsets);
      for (const auto& g : attr.graphs()) CheckRequiredAttributes(g, opsets);
    }
  }
}

void CheckRequiredAttributes(const onnx::ModelProto& proto) {
  OpsetVersions opsets;
  for (const auto& o : proto.opset_import()) opsets[CanonicalDomain(o.domain())] = o.version();
  CheckRequiredAttributes(proto.graph(), opsets);
}

void RunOnnxInference(onnx::ModelProto& proto, bool strict) {
  const bool data_prop = !ReadsBeforeDefinition(proto.graph(), {});
  onnx::ShapeInferenceOptions options(/*check_type=*/strict, /*error_mode=*/strict ? 1 : 0,
                                      data_prop);
  try {
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    ThrowInferenceError(FirstParagraph(e.what()));
  }
}

enum class ShapeState { kStatic, kSymbolic, kUnknown };

ShapeState StateOf(const onnx::ValueInfoProto* vi) {
  if (!vi || !vi->has_type()) return ShapeState::kUnknown;
  const auto& type = vi->type();
  if (!type.has_tensor_type()) {
    return type.value_case() == onnx::TypeProto::VALUE_NOT_SET ? ShapeState::kUnknown
                                                               : ShapeState::kSymbolic;
  }
  if (!type.tensor_type().has_shape()) return ShapeState::kUnknown;
  bool symbolic = false;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) continue;
    if (!d.has_dim_param()) return ShapeState::kUnknown;
    symbolic = true;
  }
  return symbolic ? ShapeState::kSymbolic : ShapeState::kStatic;
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("#{} ({})", index, node.op_type()) : node.name();
}

// Finds, for every node with an unknown output, the upstream node where shapes stopped flowing
// and why. Nodes are visited in topological order so a node's blockers are known before it.
class BlockerFinder {
 public:
  BlockerFinder(const onnx::ModelProto& model, const ir::GraphView& view) : view_(view) {
    for (const auto& op : model.opset_import()) {
      opsets_[op.domain() == "ai.onnx" ? "" : op.domain()] = static_cast<int>(op.version());
    }
  }

  struct Blocker {
    int node = -1;
    std::string reason;
  };

  // Follows the chain of producers iteratively: chains are as long as the model (a recursion
  // overflowed the stack on a fuzzed model), and a cycle must end the walk, not loop.
  const Blocker& Explain(int index) {
    std::vector<int> path;
    std::unordered_set<int> on_path;
    Blocker found;
    for (int current = index;;) {
      if (auto it = memo_.find(current); it != memo_.end()) {
        found = it->second;
        break;
      }
      if (!on_path.insert(current).second) {
        found = {current, "its inputs depend on its own output (the graph has a cycle)"};
        break;
      }
      path.push_back(current);
      int next = -1;
      found = Step(current, next);
      if (next < 0) break;
      current = next;
    }
    for (int n : path) memo_[n] = found;
    return memo_.emplace(index, found).first->second;
  }

  // Whether the tensor has at least a rank (enough for most ops to proceed).
  bool HasShape(const std::string& name) const {
    if (view_.Initializer(name)) return true;
    const auto* vi = view_.ValueInfo(name);
    if (!vi || !vi->has_type()) return false;
    const auto& type = vi->type();
    return !type.has_tensor_type() || type.tensor_type().has_shape();
  }

 private:
  // The blocker at `index` itself, or (through `next`) the producer to look at instead.
  Blocker Step(int index, int& next) {
    for (const auto& input : view_.NodeReads(index)) {
      if (HasShape(input)) continue;
      int producer = view_.Producer(input);
      if (producer < 0 || producer == index) {
        return {index, fmt::format("input '{}' has no type or shape (declare it, or pin its "
                                   "input shape)",
                                   input)};
      }
      next = producer;
      return {};
    }
    return {index, ReasonWithKnownInputs(index)};
  }

  std::string ReasonWithKnownInputs(int index) {
    const auto& node = view_.node(index);
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto version = opsets_.find(domain);
    if (version == opsets_.end()) {
      return fmt::format("domain '{}' is not in the model's opset_import", domain);
    }
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), version->second, domain);
    if (!schema) {
      return fmt::format(
          "no schema for {}{} at opset {}: a custom operator, shapes cannot flow "
          "through it",
          domain.empty() ? "" : domain + "::", node.op_type(), version->second);
    }
    if (!schema->has_type_and_shape_inference_function()) {
      return fmt::format("{} has no shape-inference function in ONNX 1.12", node.op_type());
    }
    return Probe(node, *schema);
  }

  // Re-runs the op's inference function alone to recover the error ONNX swallowed in
  // non-strict mode.
  std::string Probe(const onnx::NodeProto& original, const onnx::OpSchema& schema) {
    onnx::NodeProto node = original;
    std::deque<onnx::TypeProto> types;
    std::unordered_map<std::string, onnx::TypeProto*> types_by_name;
    std::unordered_map<std::string, const onnx::TensorProto*> data_by_name;
    for (const auto& input : node.input()) {
      if (const auto* init = view_.Initializer(input)) {
        data_by_name[input] = init;
        types.emplace_back();
        auto* tt = types.back().mutable_tensor_type();
        tt->set_elem_type(init->data_type());
        for (auto d : init->dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
        types_by_name[input] = &types.back();
      } else if (const auto* vi = view_.ValueInfo(input)) {
        types.push_back(vi->type());
        types_by_name[input] = &types.back();
      }
      int producer = view_.Producer(input);
      if (producer >= 0 && view_.node(producer).op_type() == "Constant") {
        for (const auto& attr : view_.node(producer).attribute()) {
          if (attr.name() == "value" && attr.has_t()) data_by_name[input] = &attr.t();
        }
      }
    }
    try {
      onnx::shape_inference::InferenceContextImpl ctx(node, types_by_name, data_by_name, {});
      schema.GetTypeAndShapeInferenceFunction()(ctx);
    } catch (const std::exception& e) {
      return FirstParagraph(e.what());
    }
    static const std::set<std::string> kDataDependent = {"NonZero",           "Unique", "Compress",
                                                         "NonMaxSuppression", "TopK",   "Loop"};
    if (kDataDependent.count(node.op_type())) {
      return "the output shape depends on values only known at run time (data-dependent)";
    }
    // Usually shape arithmetic (Shape -> Cast -> Slice -> Concat) that ONNX 1.12's data
    // propagation does not follow, not a value only the input data decides.
    return "the output shape depends on the value of an input that static inference could not "
           "compute (shape arithmetic it does not follow); the executor computes it";
  }

  const ir::GraphView& view_;
  std::unordered_map<std::string, int> opsets_;
  std::unordered_map<int, Blocker> memo_;
};

std::vector<int> SafeTopoOrder(const ir::GraphView& view) {
  try {
    return view.TopoOrder();
  } catch (const Error&) {
    std::vector<int> order(view.node_count());
    for (int i = 0; i < view.node_count(); ++i) order[i] = i;
    return order;
  }
}

void FillReport(const io::Model& model, InferReport& report) {
  const auto& graph = model.proto.graph();
  ir::GraphView view(graph);
  BlockerFinder finder(model.proto, view);
  for (int index : SafeTopoOrder(view)) {
    const auto& node = graph.node(index);
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      ++report.tensors_total;
      ShapeState state = StateOf(view.ValueInfo(out));
      if (state == ShapeState::kStatic) ++report.tensors_static;
      if (state == ShapeState::kSymbolic) ++report.tensors_symbolic;
      if (state != ShapeState::kUnknown) continue;
      const auto& blocker = finder.Explain(index);
      const auto& blocking_node = graph.node(blocker.node);
      std::string reason = blocker.reason;
      if (blocker.node != index) {
        reason += fmt::format(" (reached through the inputs of '{}')", NodeLabel(node, index));
      }
      report.unresolved.push_back({out, NodeLabel(blocking_node, blocker.node),
                                   blocking_node.op_type(), reason, blocker.node == index});
    }
  }
}

}  // namespace

InferReport InferShapes(io::Model& model, const InferOptions& options) {
  RegisterContribSchemas();
  ApplyInputShapes(model, options.input_shapes);
  ApplyInputValues(model, options.input_values);
  InferReport report;
  InlineSmallExternalTensors inlined(model);
  auto& graph = *model.proto.mutable_graph();
  std::string signature = TypeSignature(graph);
  bool converged = false;
  CheckRequiredAttributes(model.proto);
  io::ValidateNodeAttributes(model.proto);  // in-memory models did not come through Load
  io::ValidateFunctions(model.proto);
  while (report.iterations < options.max_iterations) {
    GraphSize before = SizeOf(graph);
    RunOnnxInference(model.proto, options.strict);
    RequireNotShrunk(before, SizeOf(graph));
    ++report.iterations;
    std::string next = TypeSignature(graph);
    converged = next == signature;
    signature = std::move(next);
    if (converged) break;
  }
  if (!converged) {
    report.notes.push_back(fmt::format(
        "shape inference had not reached a fixed point after {} iterations (the cap); shapes "
        "may be incomplete",
        report.iterations));
  }
  // Data propagation turns Expand/Tile/ConstantOfShape/Reshape data into static dims: a model
  // claiming terabytes shows up here, before any later stage plans memory for it.
  io::CheckClaimedSizes(model.proto.graph(), model.path.empty()
                                                 ? std::string("inferred shapes")
                                                 : model.path.string() + " (inferred shapes)");
  FillReport(model, report);
  return report;
}

std::function<void(io::Model&)> TypeInference() {
  return [](io::Model& model) { InferShapes(model); };
}

}  // namespace porttool::shape
