#include "lib/decide/analyzed_model.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "lib/analysis/liveness.h"
#include "lib/analysis/macs.h"
#include "lib/analysis/static_values.h"
#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/shape_completion.h"
#include "lib/shape/infer.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"

namespace porttool::decide {
namespace {

const std::set<std::string> kOnnxDomains = {"", "ai.onnx", "ai.onnx.ml",
                                            "ai.onnx.preview.training"};
const std::set<std::string> kComputeOps = {
    "Conv",        "ConvTranspose",     "MatMul", "Gemm", "ConvInteger", "MatMulInteger",
    "QLinearConv", "QLinearMatMul",     "LSTM",   "GRU",  "RNN",         "Einsum",
    "Attention",   "MultiHeadAttention"};
const std::set<std::string> kControlFlowOps = {"If", "Loop", "Scan"};

TensorInfo InfoFromType(const onnx::TypeProto& type) {
  TensorInfo info;
  if (!type.has_tensor_type()) return info;
  info.dtype = type.tensor_type().elem_type();
  if (!type.tensor_type().has_shape()) return info;
  info.has_shape = true;
  for (const auto& d : type.tensor_type().shape().dim()) {
    info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return info;
}

TensorInfo InfoFromTensor(const onnx::TensorProto& t) {
  TensorInfo info;
  info.dtype = t.data_type();
  info.has_shape = true;
  info.dims.assign(t.dims().begin(), t.dims().end());
  return info;
}

// Calls `fn` on every node of `graph` and of its subgraphs, recursively.
void ForEachNodeDeep(const onnx::GraphProto& graph,
                     const std::function<void(const onnx::NodeProto&)>& fn) {
  for (const auto& node : graph.node()) {
    fn(node);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) ForEachNodeDeep(attr.g(), fn);
      for (const auto& g : attr.graphs()) ForEachNodeDeep(g, fn);
    }
  }
}

}  // namespace

bool TensorInfo::IsStatic() const {
  return has_shape && std::none_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; });
}

std::optional<uint64_t> TensorInfo::Bytes() const {
  size_t size = ir::DtypeSize(dtype);
  if (!IsStatic() || size == 0) return std::nullopt;
  return static_cast<uint64_t>(util::ByteSizeOf(dims, size, "tensor"));
}

std::string OpKey(const onnx::NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") return node.op_type();
  return node.domain() + ":" + node.op_type();
}

bool IsComputeLayer(const onnx::NodeProto& node) {
  return (kOnnxDomains.count(node.domain()) || node.domain() == "com.microsoft") &&
         kComputeOps.count(node.op_type());
}

AnalyzedModel::AnalyzedModel(const io::Model& model, const shape::InputShapes& shapes,
                             const ModelTransform& fold)
    : model_(model) {
  std::string incomplete;
  try {
    runtime::ShapeCompletion completion = runtime::CompleteShapes(model_, shapes);
    facts_.notes = completion.inference.notes;
    if (!completion.unresolved.empty()) incomplete = completion.Summary();
  } catch (const io::ResourceClaimError&) {
    throw;  // a tensor of 1 TiB or more is no fact to report: the model is refused (exit 3)
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUsage) throw;
    incomplete = std::string("shape inference failed: ") + e.what();
  }
  if (!incomplete.empty()) facts_.notes.push_back(incomplete);
  if (fold) fold(model_);
  view_ = std::make_unique<ir::GraphView>(model_.proto.graph());
  IndexTensors();
  MarkStaticValues();
  DeriveFacts();
  FindTail();
  // Liveness names the first tensor without a shape; the completion names the node to blame.
  if (!facts_.peak_activation_bytes && !incomplete.empty() && facts_.dynamic_inputs.empty()) {
    facts_.peak_activation_note = incomplete;
  }
}

void AnalyzedModel::IndexTensors() {
  const auto& g = graph();
  for (const auto& vi : g.input()) infos_[vi.name()] = InfoFromType(vi.type());
  for (const auto& vi : g.value_info()) infos_[vi.name()] = InfoFromType(vi.type());
  for (const auto& vi : g.output()) infos_[vi.name()] = InfoFromType(vi.type());
  for (const auto& t : g.initializer()) {
    infos_[t.name()] = InfoFromTensor(t);
    constants_[t.name()] = &t;
  }
  for (const auto& node : g.node()) {
    if (!ir::IsConstantNode(node)) continue;
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "value" && attr.has_t()) {
        infos_[node.output(0)] = InfoFromTensor(attr.t());
        constants_[node.output(0)] = &attr.t();
      }
    }
  }
}

void AnalyzedModel::MarkStaticValues() {
  static_nodes_ = analysis::StaticValueNodes(graph(), [&](const std::string& name) {
    const TensorInfo* info = Info(name);
    return info && info->IsStatic();
  });
  for (int i = 0; i < graph().node_size(); ++i) {
    if (!static_nodes_[i]) continue;
    for (const auto& out : graph().node(i).output()) static_tensors_.insert(out);
  }
}

const TensorInfo* AnalyzedModel::Info(const std::string& tensor) const {
  auto it = infos_.find(tensor);
  return it == infos_.end() ? nullptr : &it->second;
}

bool AnalyzedModel::IsConstant(const std::string& tensor) const {
  return constants_.count(tensor) > 0 || static_tensors_.count(tensor) > 0;
}

std::optional<std::vector<double>> AnalyzedModel::ConstantValues(const std::string& tensor) const {
  auto it = constants_.find(tensor);
  if (it == constants_.end()) return std::nullopt;
  const onnx::TensorProto& t = *it->second;
  int64_t count = ir::ElementCount({t.dims().begin(), t.dims().end()});
  if (count > 4096) return std::nullopt;
  return ir::ConstantAsDoubles(model_, t);
}

void AnalyzedModel::DeriveFacts() {
  const auto& g = graph();
  facts_.nodes = g.node_size();
  for (const auto& opset : model_.proto.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") facts_.opset = opset.version();
  }
  std::set<std::string> domains;
  ForEachNodeDeep(g, [&](const onnx::NodeProto& node) {
    ++facts_.op_histogram[OpKey(node)];
    if (IsComputeLayer(node)) ++facts_.compute_layers;
    if (kOnnxDomains.count(node.domain()) && kControlFlowOps.count(node.op_type())) {
      ++facts_.control_flow_ops;
    }
    if (!kOnnxDomains.count(node.domain())) {
      ++facts_.custom_domain_ops;
      domains.insert(node.domain());
    }
    if (node.op_type() == "LayerNormalization" || node.op_type() == "SkipLayerNormalization") {
      ++facts_.layernorm_patterns;
    }
  });
  facts_.custom_domains.assign(domains.begin(), domains.end());
  io::ForEachTensor(
      g, [&](const onnx::TensorProto& t) { facts_.params_bytes += io::TensorPayloadBytes(t); });
  facts_.dynamic_inputs = shape::DynamicInputDims(model_);

  // Patterns in the main graph: attention (MatMul within 3 producers of a Softmax) and the
  // decomposed layer norm ReduceMean -> Sub -> Pow -> ReduceMean.
  const auto& v = view();
  auto consumers_of = [&](int n, const std::string& op) {
    std::vector<int> out;
    for (const auto& t : v.node(n).output()) {
      for (int c : v.Consumers(t)) {
        if (v.node(c).op_type() == op) out.push_back(c);
      }
    }
    return out;
  };
  for (int n = 0; n < v.node_count(); ++n) {
    const auto& node = v.node(n);
    if (node.op_type() == "Softmax") {
      std::vector<int> frontier = {n};
      bool found = false;
      for (int hop = 0; hop < 3 && !found; ++hop) {
        std::vector<int> next;
        for (int f : frontier) {
          for (const auto& in : v.node(f).input()) {
            int p = v.Producer(in);
            if (p < 0) continue;
            if (v.node(p).op_type() == "MatMul") found = true;
            next.push_back(p);
          }
        }
        frontier = next;
      }
      facts_.attention_patterns += found;
    }
    if (node.op_type() == "ReduceMean") {
      bool found = false;
      for (int sub : consumers_of(n, "Sub")) {
        for (int pow : consumers_of(sub, "Pow")) found |= !consumers_of(pow, "ReduceMean").empty();
      }
      facts_.layernorm_patterns += found;
    }
  }

  analysis::ShapeLookup shape_of =
      [&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    const TensorInfo* info = Info(name);
    if (!info || !info->IsStatic()) return std::nullopt;
    return info->dims;
  };
  uint64_t total = 0;
  bool complete = true;
  for (int n = 0; n < v.node_count(); ++n) {
    if (!analysis::CountsMacs(v.node(n))) continue;
    auto macs = analysis::NodeMacs(v.node(n), shape_of);
    if (!macs) {
      complete = false;
      continue;
    }
    total += *macs;
    facts_.macs_by_node.push_back({n, ir::NodeLabel(v, n), v.node(n).op_type(), *macs});
  }
  std::stable_sort(facts_.macs_by_node.begin(), facts_.macs_by_node.end(),
                   [](const NodeCost& a, const NodeCost& b) { return a.macs > b.macs; });
  if (complete) facts_.total_macs = total;

  try {
    analysis::LivenessOptions lo;
    lo.include_graph_inputs = true;
    lo.include_graph_outputs = true;
    facts_.peak_activation_bytes = analysis::PeakLiveBytes(analysis::ComputeLiveness(g, lo));
  } catch (const Error& e) {
    facts_.peak_activation_note = e.what();
  }
}

void AnalyzedModel::FindTail() {
  const auto& v = view();
  feeds_compute_.assign(v.node_count(), true);
  std::vector<int> order;
  try {
    order = v.TopoOrder();
  } catch (const Error&) {
    return;  // a cycle: treat every node as backbone (the conservative answer)
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool feeds = false;
    for (const auto& t : v.node(*it).output()) {
      for (int c : v.Consumers(t)) feeds |= IsComputeLayer(v.node(c)) || feeds_compute_[c];
    }
    feeds_compute_[*it] = feeds;
  }
}

void AnalyzedModel::AddFacts(const FactCatalog& catalog, Facts& facts) const {
  auto set = [&](const char* name, nlohmann::json value) {
    facts.Set(catalog, name, std::move(value), "model");
  };
  set("model.nodes", facts_.nodes);
  set("model.compute_layers", facts_.compute_layers);
  set("model.control_flow_ops", facts_.control_flow_ops);
  set("model.custom_domain_ops", facts_.custom_domain_ops);
  set("model.attention_patterns", facts_.attention_patterns);
  set("model.layernorm_patterns", facts_.layernorm_patterns);
  set("model.transformer_like", facts_.attention_patterns + facts_.layernorm_patterns > 0);
  set("model.opset", facts_.opset);
  set("model.params_bytes", facts_.params_bytes);
  set("model.dynamic_inputs", static_cast<int64_t>(facts_.dynamic_inputs.size()));
  if (facts_.total_macs) set("model.total_macs", *facts_.total_macs);
  if (facts_.peak_activation_bytes) {
    set("model.peak_activation_bytes", *facts_.peak_activation_bytes);
  }
}

}  // namespace porttool::decide
