// RunStage: `porttool run` as one call: the reference executor on given or random inputs
// (lib/runtime/session.h), timed over repeated runs after a warm-up, with an optional per-node
// profile of the nodes as they run (a fused conv's time includes the tail it absorbed), as
// medians over the timed runs.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"

namespace porttool::stages {

struct RunStageOptions {
  shape::InputShapes input_shapes;
  runtime::TensorMap inputs;   // given values
  bool random_inputs = false;  // fill the others with seeded random values
  uint64_t seed = 0;
  shape::InputRanges input_ranges;  // what those random values are drawn from
  int repeat = 0;                   // timed runs after one warm-up; 0: a single run, no warm-up
  bool profile = false;
  bool fail_on_nan = false;
  bool no_fusion = false;  // run every node as the model has it (runtime/fusion.h)
  // Compute as a float16 accelerator (SessionOptions::float16), these nodes in float32.
  bool float16 = false;
  std::set<std::string> float32_nodes;
  const runtime::KernelRegistry* kernels = nullptr;
};

struct NodeTime {
  std::string name, op_type;
  double ms = 0;  // median over the timed runs
};

struct Latency {
  double median = 0, min = 0, max = 0;
};

struct RunStageResult {
  std::vector<runtime::NamedTensor> outputs;
  std::vector<double> times_ms;              // one per timed run
  std::vector<NodeTime> profile;             // by node index, with options.profile
  std::map<std::string, double> op_type_ms;  // per op type: median of each run's total
  int profile_runs = 0;
  int fused_nodes = 0;                // nodes the executor folded into a preceding conv
  std::vector<std::string> warnings;  // the executor's (NaN/Inf in inputs)
  // Under float16: the tensors past 65504, and the float64 tensors left float64 (Session's).
  std::vector<runtime::Float16Overflow> float16_overflows;
  std::vector<std::string> float16_kept_float64;
  Latency latency() const;
};

RunStageResult RunStage(const io::Model& model, const RunStageOptions& options);

}  // namespace porttool::stages
