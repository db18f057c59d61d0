#include "lib/stages/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "lib/ir/graph_view.h"

namespace porttool::stages {
namespace {

using Clock = std::chrono::steady_clock;

// Per-node time from the executor's observer: it is called right after each node ran, so the
// time since the previous node finished is this node's time (a node's later outputs add none).
class Profiler {
 public:
  explicit Profiler(const io::Model& model) {
    ir::GraphView view(model.proto.graph());
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& n = view.node(i);
      nodes_.push_back({n.name().empty() ? fmt::format("#{}", i) : n.name(), n.op_type()});
      for (const auto& out : n.output()) producer_[out] = i;
    }
  }
  void Start() {
    last_ = Clock::now();
    last_node_ = -1;
    ++runs_;
  }
  void Observe(const std::string& tensor) {
    auto it = producer_.find(tensor);
    if (it == producer_.end() || it->second == last_node_) return;
    auto now = Clock::now();
    nodes_[it->second].ms += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    last_node_ = it->second;
  }
  std::vector<NodeTime> Means() const {
    std::vector<NodeTime> out = nodes_;
    for (auto& n : out) n.ms /= std::max(runs_, 1);
    return out;
  }
  int runs() const { return runs_; }

 private:
  std::vector<NodeTime> nodes_;
  std::map<std::string, int> producer_;
  Clock::time_point last_;
  int last_node_ = -1;
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
  runtime::Session session(pinned, {options.fail_on_nan, options.kernels});
  runtime::TensorMap inputs = options.inputs;
  if (options.random_inputs) {
    inputs = runtime::CompleteWithRandom(session, std::move(inputs), options.seed);
  }
  RunStageResult result;
  if (options.repeat > 0) result.outputs = session.Run(inputs);  // warm-up
  Profiler profiler(pinned);
  runtime::Observer observer;
  if (options.profile) {
    observer = [&](const std::string& name, const runtime::Tensor&) { profiler.Observe(name); };
  }
  for (int i = 0; i < std::max(options.repeat, 1); ++i) {
    auto start = Clock::now();
    if (options.profile) profiler.Start();
    result.outputs = session.Run(inputs, observer);
    result.times_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  result.warnings = session.warnings();
  if (options.profile) {
    result.profile = profiler.Means();
    result.profile_runs = profiler.runs();
  }
  return result;
}

}  // namespace porttool::stages
