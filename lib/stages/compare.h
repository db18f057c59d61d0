// CompareStage: `porttool compare` as one call. Two models on the same inputs (given ones, the
// rest seeded random), outputs and optionally every shared intermediate compared
// (lib/runtime/compare.h); or one model against tensors saved earlier (a TensorStore written by
// this stage or by another runtime in the same layout), or only recording model A's tensors.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/quant/task_metrics.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/isolate.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"

namespace porttool::stages {

struct CompareStageOptions {
  runtime::CompareOptions compare;
  runtime::TensorMap inputs;  // given inputs; the others are random from `seed`
  uint64_t seed = 0;
  shape::InputRanges input_ranges;     // what the random inputs are drawn from
  shape::InputShapes input_shapes;     // pinned on both models
  std::filesystem::path save_outputs;  // record A's inputs and outputs (and intermediates)
  std::filesystem::path load_outputs;  // compare A against this store instead of running a model
};

// `b` may be null when only recording A (save_outputs) or comparing A with load_outputs.
// Error(kUsage) for a combination that makes no sense (naming what to drop).
runtime::ModelComparison CompareStage(const io::Model& a, const io::Model* b,
                                      const CompareStageOptions& options);

// Task metrics (lib/quant/task_metrics.h) of B's outputs against A's, on the inputs CompareStage
// uses (given, the rest random from the seed): one more outputs-only run of each. Error(kUsage)
// for a task on an output A lacks; Error(kBadInput) for an output its task cannot read.
std::vector<quant::TaskResult> CompareTasks(const io::Model& a, const io::Model& b,
                                            const CompareStageOptions& options,
                                            const quant::TaskAssignment& tasks);

// Per-layer local and accumulated error of B against A (lib/runtime/isolate.h), over the samples
// of `data_dir` (`<id>.<input>.npy`, port's layout) when given, else over one sample: the given
// inputs, the rest random from the seed. Error(kUsage) for given inputs with a data directory.
runtime::IsolateResult IsolateStage(const io::Model& a, const io::Model& b,
                                    const CompareStageOptions& options,
                                    const std::filesystem::path& data_dir);

// {"samples", "rtol", "atol", "within_tolerance", "outputs", "unmatched_outputs", "isolate":
// [{"rank", "node", "op", "tensor", "from_a", "cone_nodes", "local_error": {stats},
// "accumulated_error": {stats}}] worst local error first, "not_comparable": [{"model", "node",
// "op", "tensor", "reason"}]}: the `compare --isolate --json` shape.
nlohmann::json IsolateJson(const runtime::IsolateResult& result,
                           const runtime::CompareOptions& options);

// {"rtol", "atol", "within_tolerance", "outputs": [stats], "unmatched_outputs", "per_tensor"?,
// "first_divergent"?}: the `compare --json` shape.
nlohmann::json CompareJson(const runtime::ModelComparison& result,
                           const runtime::CompareOptions& options, bool per_tensor);

}  // namespace porttool::stages
