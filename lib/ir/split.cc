#include "lib/ir/split.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"

namespace porttool::ir {

const char* RoleName(SegmentRole role) {
  return role == SegmentRole::kHost ? "host" : "accelerator";
}

std::optional<uint64_t> StaticBytes(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return std::nullopt;
  size_t element = DtypeSize(type.tensor_type().elem_type());
  auto dims = StaticShape(type);
  if (element == 0 || !dims) return std::nullopt;
  return static_cast<uint64_t>(util::ByteSizeOf(*dims, element, "tensor type"));
}

// ---------------------------------------------------------------------------------------------
// Tensor types
// ---------------------------------------------------------------------------------------------
namespace {

// How much a type tells: 0 nothing, 1 dtype only, 2 a shape with unknown dims, 3 static.
int TypeScore(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return type.value_case() == onnx::TypeProto::VALUE_NOT_SET ? 0 : 2;
  const auto& t = type.tensor_type();
  if (t.elem_type() == 0) return 0;
  if (!t.has_shape()) return 1;
  return StaticShape(type) ? 3 : 2;
}

onnx::TypeProto TypeOfInitializer(const onnx::TensorProto& tensor) {
  onnx::TypeProto type;
  auto* t = type.mutable_tensor_type();
  t->set_elem_type(tensor.data_type());
  auto* shape = t->mutable_shape();
  for (auto d : tensor.dims()) shape->add_dim()->set_dim_value(d);
  return type;
}

onnx::TypeProto KnownType(const GraphView& view, const std::string& name) {
  if (const auto* info = view.ValueInfo(name)) return info->type();
  if (const auto* init = view.Initializer(name)) return TypeOfInitializer(*init);
  return {};
}

}  // namespace

TensorTypes::TensorTypes(const io::Model& model, const GraphView& view, TypeInferenceFn infer)
    : model_(model), view_(view), infer_(std::move(infer)) {}

TensorTypes::~TensorTypes() = default;

void TensorTypes::InferOnce() {
  if (inferred_) return;
  inferred_ = true;
  inferred_model_ = std::make_unique<io::Model>(model_);
  // A failure is tolerated: tensors it could not type stay unknown and the boundaries that need
  // them are reported in the notes.
  try {
    if (infer_) infer_(*inferred_model_);
  } catch (const Error&) {
  }
  inferred_view_ = std::make_unique<GraphView>(inferred_model_->proto.graph());
}

onnx::TypeProto TensorTypes::Find(const std::string& name) {
  onnx::TypeProto known = KnownType(view_, name);
  if (TypeScore(known) == 3) return known;
  InferOnce();
  onnx::TypeProto inferred = KnownType(*inferred_view_, name);
  return TypeScore(inferred) > TypeScore(known) ? inferred : known;
}

// ---------------------------------------------------------------------------------------------
// Sub-model construction (shared by split and extract)
// ---------------------------------------------------------------------------------------------
namespace {

// Everything of the source model except its graph: opsets, IR version, producer, functions.
void CopyModelShell(const onnx::ModelProto& from, onnx::ModelProto& to) {
  to.set_ir_version(from.ir_version());
  *to.mutable_opset_import() = from.opset_import();
  to.set_producer_name(from.producer_name());
  to.set_producer_version(from.producer_version());
  to.set_domain(from.domain());
  to.set_model_version(from.model_version());
  to.set_doc_string(from.doc_string());
  *to.mutable_metadata_props() = from.metadata_props();
  *to.mutable_functions() = from.functions();
}

onnx::ValueInfoProto TypedValueInfo(const std::string& name, TensorTypes& types,
                                    std::vector<std::string>* notes) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  onnx::TypeProto type = types.Find(name);
  if (TypeScore(type) == 0 && notes) {
    notes->push_back(fmt::format(
        "tensor '{}' has no known type (shape inference could not reach it); the segment that "
        "uses it may fail the ONNX checker: pin the input shapes",
        name));
  }
  if (TypeScore(type) > 0) *info.mutable_type() = std::move(type);
  return info;
}

[[noreturn]] void ThrowUndefined(const onnx::NodeProto& node, const std::string& tensor) {
  throw Error(ErrorKind::kBadInput,
              fmt::format("node '{}' ({}) reads '{}', which is neither an input of the part, an "
                          "initializer, nor produced by an earlier node in it",
                          node.name(), node.op_type(), tensor),
              node.name(), tensor);
}

}  // namespace

io::Model BuildSubModel(const io::Model& source, const GraphView& view, const SubModelSpec& spec,
                        TensorTypes& types, std::vector<std::string>* notes) {
  io::Model sub;
  sub.base_dir = source.base_dir;
  sub.maps = source.maps;
  CopyModelShell(source.proto, sub.proto);
  auto* graph = sub.proto.mutable_graph();
  graph->set_name(spec.graph_name.empty() ? view.graph().name() : spec.graph_name);
  bool initializers_are_inputs = source.proto.ir_version() < 4;

  std::unordered_set<std::string> defined(spec.inputs.begin(), spec.inputs.end());
  for (const auto& name : spec.inputs) *graph->add_input() = TypedValueInfo(name, types, notes);
  std::vector<std::string> produced;
  for (int index : spec.nodes) {
    const auto& node = view.node(index);
    for (const auto& name : view.NodeReads(index)) {
      if (defined.count(name)) continue;
      const onnx::TensorProto* init = view.Initializer(name);
      if (!init) ThrowUndefined(node, name);
      *graph->add_initializer() = *init;
      if (initializers_are_inputs) *graph->add_input() = TypedValueInfo(name, types, nullptr);
      defined.insert(name);
    }
    *graph->add_node() = node;
    for (const auto& out : node.output()) {
      if (!out.empty() && defined.insert(out).second) produced.push_back(out);
    }
  }
  std::unordered_set<std::string> outputs(spec.outputs.begin(), spec.outputs.end());
  for (const auto& name : spec.outputs) {
    if (!defined.count(name) && view.Initializer(name)) {
      *graph->add_initializer() = *view.Initializer(name);
      defined.insert(name);
    }
    if (!defined.count(name)) {
      ThrowInternal("part output '{}' is not computed by the part's nodes", name);
    }
    *graph->add_output() = TypedValueInfo(name, types, notes);
  }
  for (const auto& name : produced) {
    if (outputs.count(name)) continue;
    if (const auto* info = view.ValueInfo(name)) *graph->add_value_info() = *info;
  }
  return sub;
}

// ---------------------------------------------------------------------------------------------
// Resolving --at names
// ---------------------------------------------------------------------------------------------
namespace {

bool SubgraphHoldsNode(const onnx::GraphProto& graph, const std::string& name);

bool NodeHoldsNested(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_g() && SubgraphHoldsNode(attr.g(), name)) return true;
    for (const auto& g : attr.graphs()) {
      if (SubgraphHoldsNode(g, name)) return true;
    }
  }
  return false;
}

bool SubgraphHoldsNode(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& node : graph.node()) {
    if (node.name() == name || NodeHoldsNested(node, name)) return true;
  }
  return false;
}

int ResolveOne(const GraphView& view, const std::string& name) {
  // A name several nodes carry, or none ('' when nodes are unnamed), is ResolveNodeRef's to
  // explain; a tensor, weight or nested node given for a node gets its own message below.
  if (name.empty() || view.NodesNamed(name).size() > 1) {
    return ResolveNodeRef(view, name, "cut node");
  }
  if (int index = FindNodeRef(view, name); index >= 0) return index;
  if (view.Initializer(name)) {
    ThrowUsage(
        "'{}' is an initializer (a weight), not a node; a cut node is named by its node name",
        name);
  }
  if (view.GraphInput(name)) {
    ThrowUsage("'{}' is a graph input, not a node; a cut node is named by its node name", name);
  }
  if (int producer = view.Producer(name); producer >= 0) {
    ThrowUsage("'{}' is a tensor, not a node; it is produced by node '{}' ({}): give cut node '{}'",
               name, NodeLabel(view, producer), view.node(producer).op_type(),
               NodeLabel(view, producer));
  }
  for (int i = 0; i < view.node_count(); ++i) {
    if (NodeHoldsNested(view.node(i), name)) {
      ThrowUsage(
          "node '{}' is inside a subgraph of node '{}' ({}); a node inside a subgraph "
          "cannot be cut: cut at '{}' instead (it moves whole)",
          name, NodeLabel(view, i), view.node(i).op_type(), NodeLabel(view, i));
    }
  }
  std::vector<std::string> labels;
  for (int i = 0; i < view.node_count(); ++i) labels.push_back(NodeLabel(view, i));
  auto closest = util::ClosestNames(name, labels);
  throw Error(ErrorKind::kUsage,
              fmt::format("no node named '{}'{}", name,
                          closest.empty() ? std::string("")
                                          : "; closest node names: " + util::Join(closest, ", ")),
              name);
}

}  // namespace

std::vector<int> ResolveCutNodes(const GraphView& view, const std::vector<std::string>& names) {
  if (names.empty()) ThrowUsage("no cut node given: name at least one node");
  std::vector<int> out;
  for (const auto& name : names) out.push_back(ResolveOne(view, name));
  return out;
}

SplitResult SplitAtNodes(const io::Model& model, const std::vector<std::string>& node_names,
                         const SplitOptions& options) {
  GraphView view(model.proto.graph());
  std::vector<bool> host(view.node_count(), false);
  for (int i : ResolveCutNodes(view, node_names)) host[i] = true;
  return SplitModel(model, host, options);
}

// ---------------------------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------------------------
namespace {

// A Constant node is not a cut position: it is cloned into each segment that reads it, so a
// constant never becomes a bridge.
bool IsFloatingConstant(const GraphView& view, int index, bool host) {
  const auto& node = view.node(index);
  if (host || !IsConstantNode(node)) return false;
  for (const auto& out : node.output()) {
    if (view.IsGraphOutput(out)) return false;
  }
  return true;
}

int OutputSlot(const onnx::NodeProto& node, const std::string& tensor) {
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i) == tensor) return i;
  }
  return node.output_size();
}

class Splitter {
 public:
  Splitter(const io::Model& model, const std::vector<bool>& host, const SplitOptions& options)
      : model_(model), view_(model.proto.graph()), types_(model, view_, options.infer_types) {
    if (static_cast<int>(host.size()) != view_.node_count()) {
      ThrowInternal("split: {} host flags for {} nodes", host.size(), view_.node_count());
    }
    host_ = host;
  }

  SplitResult Run() {
    result_.source_nodes = view_.node_count();
    CheckDefinitions();
    CheckGraphOutputs();
    FormRuns();
    for (size_t s = 0; s < result_.segments.size(); ++s) BuildSegment(static_cast<int>(s));
    CheckBoundaryNames();
    CollectBridges();
    return std::move(result_);
  }

 private:
  // With a tensor defined twice, a segment would get both definitions or read the wrong one:
  // the segment models would be invalid or compute something else, silently.
  void CheckDefinitions() const {
    auto duplicates = view_.DuplicateDefinitions();
    if (duplicates.empty()) return;
    throw Error(ErrorKind::kBadInput,
                fmt::format("tensor '{}' is defined more than once (the graph is not in SSA "
                            "form): the split could not tell which definition a reader means",
                            duplicates.front()),
                "", duplicates.front());
  }

  // A graph output that no node, graph input or initializer defines cannot be placed in any
  // segment; found by fuzz_split (crash-13205638: output 'y', node output 'Y'), it used to reach
  // BuildSubModel's internal check.
  void CheckGraphOutputs() const {
    for (const auto& out : view_.graph().output()) {
      const std::string& name = out.name();
      if (view_.Producer(name) >= 0 || view_.GraphInput(name) || view_.Initializer(name)) continue;
      auto closest = util::ClosestNames(name, NodeOutputNames());
      throw Error(ErrorKind::kBadInput,
                  fmt::format("graph output '{}' is not produced by any node, nor a graph input or "
                              "an initializer: the model is malformed{}",
                              name,
                              closest.empty() ? ""
                                              : "; node outputs with a close name: " +
                                                    util::Join(closest, ", ")),
                  "", name);
    }
  }

  std::vector<std::string> NodeOutputNames() const {
    std::vector<std::string> names;
    for (int i = 0; i < view_.node_count(); ++i) {
      for (const auto& out : view_.node(i).output()) names.push_back(out);
    }
    return names;
  }

  // pipeline.json names each boundary tensor so a runner can bind it to the segment files; a
  // name that is not UTF-8 could only be written altered (util::DumpJson), and would then match
  // nothing. ONNX names are strings, so such a name is bad input.
  void CheckBoundaryNames() const {
    for (const auto& segment : result_.segments) {
      for (const auto* list : {&segment.inputs, &segment.outputs}) {
        for (const auto& t : *list) {
          if (util::IsValidUtf8(t.name)) continue;
          throw Error(ErrorKind::kBadInput,
                      fmt::format("tensor name '{}' at a segment boundary is not valid UTF-8 "
                                  "(ONNX names are strings); rename it before splitting",
                                  t.name),
                      "", t.name);
        }
      }
    }
  }

  void FormRuns() {
    int n = view_.node_count();
    floating_.assign(n, false);
    segment_of_.assign(n, -1);
    position_.assign(n, -1);
    for (int index : view_.TopoOrder()) {
      if (IsFloatingConstant(view_, index, host_[index])) {
        floating_[index] = true;
        continue;
      }
      SegmentRole role = host_[index] ? SegmentRole::kHost : SegmentRole::kAccelerator;
      auto& segments = result_.segments;
      if (segments.empty() || segments.back().role != role) {
        segments.emplace_back().role = role;
      }
      segments.back().nodes.push_back(index);
      segment_of_[index] = static_cast<int>(segments.size()) - 1;
      position_[index] = static_cast<int>(linear_.size());
      linear_.push_back(index);
    }
    if (linear_.empty()) ThrowBadInput("nothing to split: the graph has no nodes");
  }

  // Whether `tensor`, produced in segment `s`, is read by any other segment.
  bool ReadElsewhere(const std::string& tensor, int s) const {
    for (int c : view_.Consumers(tensor)) {
      if (segment_of_[c] != s) return true;
    }
    return false;
  }

  void BuildSegment(int s) {
    Segment& segment = result_.segments[s];
    std::set<int> constants;
    std::unordered_set<std::string> graph_inputs_read;
    // (producer position, output slot, tensor): bridges arrive in production order.
    std::vector<std::tuple<int, int, std::string>> bridges_in;
    std::unordered_set<std::string> seen;
    for (int index : segment.nodes) {
      for (const auto& name : view_.NodeReads(index)) {
        if (!seen.insert(name).second) continue;
        int p = view_.Producer(name);
        if (p >= 0 && floating_[p]) {
          constants.insert(p);
        } else if (p >= 0 && segment_of_[p] != s) {
          bridges_in.emplace_back(position_[p], OutputSlot(view_.node(p), name), name);
          bridge_consumers_[name].insert(s);
        } else if (p < 0 && !view_.Initializer(name) && view_.GraphInput(name)) {
          graph_inputs_read.insert(name);
        }
      }
    }
    SubModelSpec spec;
    spec.graph_name = fmt::format("{}_{:02d}_{}", view_.graph().name(), s, RoleName(segment.role));
    bool last = s + 1 == static_cast<int>(result_.segments.size());
    for (const auto& out : view_.graph().output()) {
      int p = view_.Producer(out.name());
      bool here = p >= 0 ? segment_of_[p] == s : last;  // pass-through outputs: last segment
      if (!here) continue;
      spec.outputs.push_back(out.name());
      result_.graph_outputs[out.name()] = s;
      if (p < 0 && view_.GraphInput(out.name())) graph_inputs_read.insert(out.name());
    }
    for (const auto& in : view_.graph().input()) {
      if (graph_inputs_read.count(in.name())) spec.inputs.push_back(in.name());
    }
    std::sort(bridges_in.begin(), bridges_in.end());
    for (const auto& [pos, slot, name] : bridges_in) spec.inputs.push_back(name);
    for (int index : segment.nodes) {
      for (const auto& out : view_.node(index).output()) {
        if (out.empty() || view_.IsGraphOutput(out) || !ReadElsewhere(out, s)) continue;
        spec.outputs.push_back(out);
      }
    }
    spec.nodes.assign(constants.begin(), constants.end());
    spec.nodes.insert(spec.nodes.end(), segment.nodes.begin(), segment.nodes.end());
    segment.model = BuildSubModel(model_, view_, spec, types_, &result_.notes);
    segment.file = fmt::format("{:02d}_{}.onnx", s, RoleName(segment.role));
    segment.inputs = Boundary(spec.inputs, segment.model.proto.graph().input());
    segment.outputs = Boundary(spec.outputs, segment.model.proto.graph().output());
  }

  static std::vector<BoundaryTensor> Boundary(
      const std::vector<std::string>& names,
      const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& infos) {
    // Indexed, not searched per name: a segment may have 10^5 inputs.
    std::unordered_map<std::string_view, const onnx::ValueInfoProto*> by_name;
    by_name.reserve(infos.size());
    for (const auto& info : infos) by_name.emplace(info.name(), &info);
    std::vector<BoundaryTensor> out;
    for (const auto& name : names) {
      auto it = by_name.find(name);
      if (it == by_name.end()) continue;
      out.push_back({name, it->second->type(), StaticBytes(it->second->type())});
    }
    return out;
  }

  // Graph outputs produced early and read later are bridges too; they are outputs of their
  // segment already, so only their consumers need recording.
  void CollectBridges() {
    for (const auto& [name, consumers] : bridge_consumers_) {
      int producer = segment_of_[view_.Producer(name)];
      Bridge bridge{
          name, producer, {consumers.begin(), consumers.end()}, StaticBytes(types_.Find(name))};
      result_.bridges.push_back(std::move(bridge));
    }
    std::sort(result_.bridges.begin(), result_.bridges.end(), [&](const auto& a, const auto& b) {
      return position_[view_.Producer(a.tensor)] < position_[view_.Producer(b.tensor)];
    });
  }

  const io::Model& model_;
  GraphView view_;
  TensorTypes types_;
  std::vector<bool> host_;
  std::vector<bool> floating_;
  std::vector<int> segment_of_;
  std::vector<int> position_;  // node index -> position in linear_
  std::vector<int> linear_;    // non-floating nodes in execution order
  std::unordered_map<std::string, std::set<int>> bridge_consumers_;
  SplitResult result_;
};

}  // namespace

SplitResult SplitModel(const io::Model& model, const std::vector<bool>& host,
                       const SplitOptions& options) {
  return Splitter(model, host, options).Run();
}

}  // namespace porttool::ir
