#include "lib/analysis/model_facts.h"

#include <set>

#include "lib/io/external_data.h"
#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"

namespace porttool::analysis {
namespace {

std::string TypeName(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return type.tensor_type().elem_type() == 0 ? "?"
                                                 : ir::DtypeName(type.tensor_type().elem_type());
    case onnx::TypeProto::kSequenceType:
      return "sequence";
    case onnx::TypeProto::kMapType:
      return "map";
    case onnx::TypeProto::kOptionalType:
      return "optional";
    case onnx::TypeProto::kSparseTensorType:
      return "sparse_tensor";
    default:
      return "?";
  }
}

void AddParams(ModelFacts& facts, const onnx::TensorProto& t) {
  uint64_t elements = 1;
  for (auto d : t.dims()) elements *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  uint64_t bytes = io::TensorPayloadBytes(t);
  auto& by_dtype = facts.params_by_dtype[ir::DtypeName(t.data_type())];
  for (ParamStats* stats : {&by_dtype, &facts.params}) {
    stats->count += elements;
    stats->bytes += bytes;
    ++stats->tensors;
  }
  if (io::IsExternal(t)) facts.external_bytes += bytes;
}

void WalkGraph(const onnx::GraphProto& graph, ModelFacts& facts, std::set<std::string>& domains) {
  facts.node_count_total += graph.node_size();
  for (const auto& t : graph.initializer()) AddParams(facts, t);
  for (const auto& node : graph.node()) {
    bool standard = ir::IsOnnxDomain(node.domain());
    if (!standard) domains.insert(node.domain());
    ++facts.op_histogram[standard ? node.op_type() : node.domain() + "::" + node.op_type()];
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) AddParams(facts, attr.t());
      for (const auto& t : attr.tensors()) AddParams(facts, t);
      if (attr.has_g()) {
        ++facts.subgraph_count;
        WalkGraph(attr.g(), facts, domains);
      }
      for (const auto& g : attr.graphs()) {
        ++facts.subgraph_count;
        WalkGraph(g, facts, domains);
      }
    }
  }
}

}  // namespace

TensorSignature SignatureOf(const onnx::ValueInfoProto& value) {
  TensorSignature sig;
  sig.name = value.name();
  sig.dtype = TypeName(value.type());
  sig.shape = ir::ShapeToString(value.type());
  if (value.type().has_tensor_type() && value.type().tensor_type().has_shape()) {
    sig.has_shape = true;
    for (const auto& d : value.type().tensor_type().shape().dim()) {
      sig.dims.push_back(d.has_dim_value()   ? std::to_string(d.dim_value())
                         : d.has_dim_param() ? d.dim_param()
                                             : "?");
    }
  }
  return sig;
}

ModelFacts CollectFacts(const io::Model& model) {
  const auto& proto = model.proto;
  ModelFacts facts;
  facts.ir_version = proto.ir_version();
  facts.producer_name = proto.producer_name();
  facts.producer_version = proto.producer_version();
  for (const auto& op : proto.opset_import()) {
    facts.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();
  }
  ir::GraphView view(proto.graph());
  for (const auto* input : view.RealInputs()) facts.inputs.push_back(SignatureOf(*input));
  for (const auto& output : proto.graph().output()) facts.outputs.push_back(SignatureOf(output));
  facts.node_count = proto.graph().node_size();
  std::set<std::string> domains;
  WalkGraph(proto.graph(), facts, domains);
  facts.custom_domains.assign(domains.begin(), domains.end());
  return facts;
}

}  // namespace porttool::analysis
