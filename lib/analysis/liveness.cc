#include "lib/analysis/liveness.h"

#include <algorithm>
#include <unordered_set>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"

namespace porttool::analysis {

StaticTensor ResolveStaticTensor(const std::string& name, const onnx::ValueInfoProto* info,
                                 const std::string& origin) {
  StaticTensor t;
  t.name = name;
  const char* hint =
      "shape inference could not compute it (infer-shapes names the node that blocks it)";
  if (info == nullptr || !info->type().has_tensor_type()) {
    ThrowBadInput("tensor '{}' (from {}) has no known type or shape: {}", t.name, origin, hint);
  }
  t.dtype = info->type().tensor_type().elem_type();
  if (ir::DtypeSize(t.dtype) == 0) {
    ThrowBadInput(
        "tensor '{}' (from {}) has element type '{}', which has no fixed size; a static "
        "buffer cannot hold it",
        t.name, origin, ir::DtypeName(t.dtype));
  }
  auto dims = ir::StaticShape(info->type());
  if (!dims) {
    ThrowBadInput("tensor '{}' (from {}) has no static shape ({}): {}", t.name, origin,
                  ir::ShapeToString(info->type()), hint);
  }
  t.dims = *dims;
  t.bytes = static_cast<uint64_t>(ir::ElementCount(t.dims)) * ir::DtypeSize(t.dtype);
  return t;
}

std::unordered_map<std::string, int> LastReadSteps(const ir::GraphView& view,
                                                   const std::vector<int>& order) {
  std::unordered_map<std::string, int> last;
  for (size_t step = 0; step < order.size(); ++step) {
    for (const auto& name : view.NodeReads(order[step])) last[name] = static_cast<int>(step);
  }
  return last;
}

Liveness ComputeLiveness(const onnx::GraphProto& graph, const LivenessOptions& options) {
  ir::GraphView view(graph);
  Liveness out;
  out.order = view.TopoOrder();
  std::vector<int> step_of_node(graph.node_size(), 0);
  for (size_t step = 0; step < out.order.size(); ++step) {
    step_of_node[out.order[step]] = static_cast<int>(step);
  }
  const int last_step = std::max(0, static_cast<int>(out.order.size()) - 1);
  const auto last_read = LastReadSteps(view, out.order);
  std::unordered_set<std::string> seen;

  auto add = [&](const std::string& name, const std::string& producer, int first) {
    if (name.empty() || !seen.insert(name).second) return;
    TensorLifetime t;
    static_cast<StaticTensor&>(t) = ResolveStaticTensor(name, view.ValueInfo(name), producer);
    t.graph_input = view.GraphInput(name) != nullptr;
    t.graph_output = view.IsGraphOutput(name);
    if (t.graph_output && !options.include_graph_outputs) return;
    t.first_use = first;
    auto read = last_read.find(name);
    t.last_use = t.graph_output ? last_step
                                : std::max(first, read == last_read.end() ? first : read->second);
    out.tensors.push_back(std::move(t));
  };

  if (options.include_graph_inputs) {
    for (const auto* input : view.RealInputs()) add(input->name(), "graph input", 0);
  }
  for (int node_index : out.order) {
    const onnx::NodeProto& node = graph.node(node_index);
    if (node.op_type() == "Constant" && node.domain().empty() && !options.include_constants) {
      continue;
    }
    std::string producer = "node '" + node.name() + "' (" + node.op_type() + ")";
    for (const auto& output : node.output()) add(output, producer, step_of_node[node_index]);
  }
  return out;
}

uint64_t AlignUp(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

std::vector<uint64_t> LiveBytesPerStep(const Liveness& liveness, uint64_t alignment) {
  size_t steps = std::max<size_t>(1, liveness.order.size());
  // Difference array: +size where a tensor starts, -size one past where it ends.
  std::vector<int64_t> delta(steps + 1, 0);
  for (const auto& t : liveness.tensors) {
    int64_t size = static_cast<int64_t>(AlignUp(t.bytes, alignment));
    delta[t.first_use] += size;
    delta[t.last_use + 1] -= size;
  }
  std::vector<uint64_t> live(steps, 0);
  int64_t running = 0;
  for (size_t step = 0; step < steps; ++step) {
    running += delta[step];
    live[step] = static_cast<uint64_t>(running);
  }
  return live;
}

uint64_t PeakLiveBytes(const Liveness& liveness, uint64_t alignment) {
  auto live = LiveBytesPerStep(liveness, alignment);
  return *std::max_element(live.begin(), live.end());
}

}  // namespace porttool::analysis
