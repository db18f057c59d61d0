#include "lib/stages/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "lib/ir/graph_view.h"
#include "lib/runtime/initializer_inputs.h"

namespace porttool::stages {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Per-node time from the executor's hook: it is called right after each node ran, so the time
// since the previous node finished is this node's time. Nodes fused into a conv get none. Each
// run's times are kept, and the profile reports medians: on a shared machine one 10 ms stall in
// 100 runs moved a 0.1 ms op's mean by 0.1 ms.
class Profiler {
 public:
  explicit Profiler(const io::Model& model) {
    ir::GraphView view(model.proto.graph());
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& n = view.node(i);
      nodes_.push_back({n.name().empty() ? fmt::format("#{}", i) : n.name(), n.op_type()});
      index_[&n] = i;
    }
    samples_.resize(nodes_.size());
  }
  void Start() {
    last_ = Clock::now();
    for (auto& s : samples_) s.push_back(0);
  }
  void Ran(const onnx::NodeProto& node) {
    auto it = index_.find(&node);
    if (it == index_.end()) return;
    auto now = Clock::now();
    samples_[it->second].back() += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
  // Each node's median over the runs.
  std::vector<NodeTime> Medians() const {
    std::vector<NodeTime> out = nodes_;
    for (size_t i = 0; i < out.size(); ++i) out[i].ms = Median(samples_[i]);
    return out;
  }
  // Per op type, the median over the runs of that run's total for the type.
  std::map<std::string, double> OpTypeMedians() const {
    std::map<std::string, std::vector<double>> totals;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      auto& t = totals[nodes_[i].op_type];
      t.resize(samples_[i].size());
      for (size_t r = 0; r < t.size(); ++r) t[r] += samples_[i][r];
    }
    std::map<std::string, double> out;
    for (auto& [op, t] : totals) out[op] = Median(std::move(t));
    return out;
  }
  int runs() const { return samples_.empty() ? 0 : static_cast<int>(samples_[0].size()); }

 private:
  std::vector<NodeTime> nodes_;
  std::vector<std::vector<double>> samples_;  // by node, one per run
  std::unordered_map<const onnx::NodeProto*, int> index_;
  Clock::time_point last_;
};

}  // namespace

Latency RunStageResult::latency() const {
  if (times_ms.empty()) return {};
  auto [lo, hi] = std::minmax_element(times_ms.begin(), times_ms.end());
  return {Median(times_ms), *lo, *hi};
}

RunStageResult RunStage(const io::Model& model, const RunStageOptions& options) {
  io::Model pinned = model;
  if (!options.input_shapes.empty()) shape::ApplyInputShapes(pinned, options.input_shapes);
  const std::vector<std::string> fed = runtime::FeedInitializerInputs(pinned, options.inputs);
  runtime::Session session(pinned, {.fail_on_nan = options.fail_on_nan,
                                    .registry = options.kernels,
                                    .no_fusion = options.no_fusion,
                                    .float16 = options.float16,
                                    .float32_nodes = options.float32_nodes});
  runtime::TensorMap inputs = options.inputs;
  if (options.random_inputs) {
    shape::CheckInputRanges(pinned, options.input_ranges);
    inputs =
        runtime::CompleteWithRandom(session, std::move(inputs), options.seed, options.input_ranges);
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
  if (!fed.empty())
    result.warnings.insert(result.warnings.begin(), runtime::FedInitializersNote(fed));
  result.fused_nodes = session.fused_nodes();
  result.float16_overflows = session.float16_overflows();
  result.float16_kept_float64 = session.float16_kept_float64();
  if (options.profile) {
    result.profile = profiler.Medians();
    result.op_type_ms = profiler.OpTypeMedians();
    result.profile_runs = profiler.runs();
  }
  return result;
}

}  // namespace porttool::stages
