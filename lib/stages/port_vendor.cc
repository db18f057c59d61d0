#include "lib/stages/port_vendor.h"

#include <memory>
#include <set>

#include "lib/quant/samples.h"
#include "lib/runtime/chain.h"
#include "lib/util/error.h"

namespace porttool::stages {
namespace fs = std::filesystem;
namespace {

// `nodes` that are in `graph`, in the order given, once each.
std::vector<std::string> NodesIn(const onnx::GraphProto& graph,
                                 const std::vector<std::string>& nodes) {
  std::set<std::string> here;
  for (const auto& n : graph.node()) here.insert(n.name());
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& n : nodes) {
    if (here.count(n) && seen.insert(n).second) out.push_back(n);
  }
  return out;
}

// The tensors the named nodes produce, in graph order.
std::vector<std::string> OutputsOf(const onnx::GraphProto& graph,
                                   const std::vector<std::string>& nodes) {
  std::set<std::string> wanted(nodes.begin(), nodes.end());
  std::vector<std::string> out;
  for (const auto& n : graph.node()) {
    if (!wanted.count(n.name())) continue;
    for (const auto& o : n.output()) {
      if (!o.empty()) out.push_back(o);
    }
  }
  return out;
}

std::optional<emit::VendorToolSpec> ToolOf(const decide::TargetProfile& t) {
  if (!t.vendor_tool) return std::nullopt;
  const decide::VendorTool& v = *t.vendor_tool;
  return emit::VendorToolSpec{v.tool,  v.version, v.platform, v.float_precision, v.raised_precision,
                              v.source};
}

// The image input of a calibration from images, and how porttool normalised it; none for
// tensor samples or raw uint8 pixels (nothing to undo).
std::optional<std::pair<std::string, emit::PixelInput>> PixelInputOf(const quant::SampleSet& set) {
  if (!set.images || set.files.empty() || set.preprocess.dtype != "float32") return std::nullopt;
  const quant::Preprocess& p = set.preprocess;
  emit::PixelInput pixel;
  pixel.scale = p.scale;
  pixel.mean = p.mean;
  pixel.std = p.std;
  pixel.channel_order = p.channel_order;
  pixel.channel_axis = p.layout == "NCHW" ? 1 : 3;
  return std::pair{set.files.front().begin()->first, pixel};
}

// The tensors of calibration sample k every accelerator segment takes: the graph inputs as
// porttool preprocessed them, and the bridges the float segments compute from them.
std::function<runtime::TensorMap(size_t)> SampleSource(const PortState& s,
                                                       const std::vector<std::string>& wanted) {
  const quant::SampleSet& set = *s.quant->whole.calibration_samples_used;
  std::vector<runtime::InputSpec> inputs = runtime::Session(s.model).inputs();
  std::set<std::string> graph_inputs;
  for (const auto& in : inputs) graph_inputs.insert(in.name);
  std::vector<std::string> bridges;
  std::set<std::string> seen;
  for (const auto& name : wanted) {
    if (!graph_inputs.count(name) && seen.insert(name).second) bridges.push_back(name);
  }
  std::shared_ptr<runtime::ChainSession> chain;
  if (!bridges.empty()) {
    std::vector<const io::Model*> segments;
    for (const auto& m : s.segments) segments.push_back(&m);
    chain = std::make_shared<runtime::ChainSession>(segments, inputs, bridges);
  }
  auto cache = std::make_shared<quant::DecodedImage>();
  return [&set, inputs, chain, cache](size_t k) {
    runtime::TensorMap m = quant::LoadSample(set, k, inputs, cache.get());
    if (chain) {
      for (auto& t : chain->Run(m)) m[t.name] = std::move(t.value);
    }
    return m;
  };
}

}  // namespace

emit::VendorStepResult WritePortVendorSteps(const PortState& s) {
  emit::VendorStepRequest r;
  r.target = s.target.name;
  r.tool = ToolOf(s.target);
  std::vector<std::string> kept_float, int16;
  std::optional<std::pair<std::string, emit::PixelInput>> pixel;
  if (s.quant) {
    kept_float = s.quant->kept_float;
    int16 = s.quant->whole.final_qdq.int16_nodes;
    if (!s.quant->whole.calibration_samples_used) {
      ThrowInternal("port calibrated, but the calibration samples are not recorded");
    }
    pixel = PixelInputOf(*s.quant->whole.calibration_samples_used);
  }
  std::map<int, std::string> qdq;
  if (s.quant) qdq.insert(s.quant->qdq_files.begin(), s.quant->qdq_files.end());
  std::vector<std::string> wanted;  // every tensor an accelerator segment takes
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const ir::Segment& plan = s.plan->split.segments[i];
    if (plan.role != ir::SegmentRole::kAccelerator) continue;
    const onnx::GraphProto& graph = s.segments[i].proto.graph();
    emit::VendorSegment seg;
    seg.index = static_cast<int>(i);
    seg.stem = fs::path(plan.file).stem().string();
    seg.file = plan.file;
    if (auto it = qdq.find(seg.index); it != qdq.end()) seg.qdq_file = it->second;
    runtime::Session session(s.segments[i]);
    for (const auto& in : session.inputs()) {
      seg.inputs.push_back(in.name);
      seg.input_dims.push_back(in.dims);
      if (pixel && in.name == pixel->first) seg.pixel_inputs[in.name] = pixel->second;
      wanted.push_back(in.name);
    }
    for (const auto& out : graph.output()) seg.outputs.push_back(out.name());
    seg.float_nodes = NodesIn(graph, kept_float);
    seg.int16_nodes = NodesIn(graph, int16);
    seg.float_outputs = OutputsOf(graph, seg.float_nodes);
    seg.int16_outputs = OutputsOf(graph, seg.int16_nodes);
    r.segments.push_back(std::move(seg));
  }
  if (s.quant && !r.segments.empty()) {
    emit::VendorCalibration cal;
    cal.method = s.quant->table.method;
    cal.per_channel = s.options.quantize->qdq.per_channel;
    cal.symmetric = s.options.quantize->calibration.symmetric_activations;
    cal.tensorrt_cache = s.quant->table.ToTensorRtCache();
    cal.samples = s.quant->whole.calibration_samples_used->size();
    cal.sample = SampleSource(s, wanted);
    r.calibration = std::move(cal);
  }
  return emit::WriteVendorSteps(r, s.dir);
}

}  // namespace porttool::stages
