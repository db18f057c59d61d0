#include "lib/stages/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "lib/ir/graph_view.h"

namespace porttool::stages {
namespace {

using Clock = std::chrono::steady_clock;

// Per-node time from the executor's hook: it is called right after each node ran, so the time
// since the previous node finished is this node's time. Nodes fused into a conv get none.
class Profiler {
 public:
  explicit Profiler(const io::Model& model) {
    ir::GraphView view(model.proto.graph());
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& n = view.node(i);
      nodes_.push_back({n.name().empty() ? fmt::format("#{}", i) : n.name(), n.op_type()});
      index_[&n] = i;
    }
  }
  void Start() {
    last_ = Clock::now();
    ++runs_;
  }
  void Ran(const onnx::NodeProto& node) {
    auto it = index_.find(&node);
    if (it == index_.end()) return;
    auto now = Clock::now();
    nodes_[it->second].ms += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
  std::vector<NodeTime> Means() const {
    std::vector<NodeTime> out = nodes_;
    for (auto& n : out) n.ms /= std::max(runs_, 1);
    return out;
  }
  int runs() const { return runs_; }

 private:
  std::vector<NodeTime> nodes_;
  std::unordered_map<const onnx::NodeProto*, int> index_;
  Clock::time_point last_;
  int runs_ = 0;
};

}  // namespace

Latency RunStageResult::latency() const {
  if (times_ms.empty()) return {};
  std::vector<double> ms = times_ms;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), ms.back()};
}

RunStageResult RunStage(const io::Model& model, const RunStageOptions& options) {
  io::Model pinned = model;
  if (!options.input_shapes.empty()) shape::ApplyInputShapes(pinned, options.input_shapes);
  runtime::Session session(pinned, {.fail_on_nan = options.fail_on_nan,
                                    .registry = options.kernels,
                                    .no_fusion = options.no_fusion});
  runtime::TensorMap inputs = options.inputs;
  if (options.random_inputs) {
    inputs = runtime::CompleteWithRandom(session, std::move(inputs), options.seed);
  }
  RunStageResult result;
  if (options.repeat > 0) result.outputs = session.Run(inputs);  // warm-up
  Profiler profiler(pinned);
  const std::function<void(const onnx::NodeProto&)> ran = [&](const onnx::NodeProto& node) {
    profiler.Ran(node);
  };
  for (int i = 0; i < std::max(options.repeat, 1); ++i) {
    auto start = Clock::now();
    if (options.profile) profiler.Start();
    result.outputs = options.profile ? session.RunTimed(inputs, ran) : session.Run(inputs);
    result.times_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  result.warnings = session.warnings();
  result.fused_nodes = session.fused_nodes();
  if (options.profile) {
    result.profile = profiler.Means();
    result.profile_runs = profiler.runs();
  }
  return result;
}

}  // namespace porttool::stages
