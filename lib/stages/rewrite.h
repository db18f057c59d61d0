// SimplifyStage and RewriteStage: the model-to-model transformations of `simplify`,
// `fold-constants` and `rewrite` (passes/transform.h runs the pass pipelines), with the limits
// and the note sink as options, and the report's JSON shape shared by the subcommands and `port`.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/shape/input_values.h"
#include "passes/transform.h"

namespace porttool::stages {

// Sees each pass note as it is made (the CLI logs them at -v).
using NoteSink = std::function<void(const std::string& pass, const std::string& note)>;

struct TransformLimits {
  uint64_t max_tensor_bytes = uint64_t{1} << 20;  // largest tensor folding creates
  int max_rounds = 8;                             // fixed-point cap
};

struct SimplifyStageOptions {
  std::string input_shape;  // NAME:DIMS[,...] pinned before folding; empty: as the model is
  TransformLimits limits{};
  NoteSink note_sink{};
  shape::InputValues input_values{};  // inputs made constants (after the pins) before folding
};

// name-nodes, then fold-constants, inline-if, eliminate-identity/dead-code/unused-initializers and
// the exact conv fusions to a fixed point, then `check` (report.failed: the model must not be
// written).
passes::TransformReport SimplifyStage(io::Model& model, const SimplifyStageOptions& options);

struct FoldStageOptions {
  std::string input_shape;
  TransformLimits limits{};
  NoteSink note_sink{};
  shape::InputValues input_values{};
};

// fold-constants alone, once (it iterates internally up to the round cap).
passes::TransformReport FoldStage(io::Model& model, const FoldStageOptions& options);

struct RewriteStageOptions {
  std::vector<passes::PipelineStep> steps;  // e.g. passes::ParsePipeline("decompose-gelu,...")
  bool fixed_point = false;
  TransformLimits limits{};
  NoteSink note_sink{};
};

// The steps in order, once or to a fixed point. Unknown pass ids and bad options are
// Error(kUsage) before anything changes.
passes::TransformReport RewriteStage(io::Model& model, const RewriteStageOptions& options);

// A step's notes in --json: the first this many, and `notes_omitted` counts the rest.
inline constexpr size_t kJsonNotesPerStep = 100;

// {"nodes_before", "nodes_after", "ops": [{op, before, after}], "rounds", "hit_cap", "failed",
// "steps": [{pass, changes, failed, notes, notes_omitted}]}: the --json shape of the transforming
// subcommands.
nlohmann::json TransformJson(const passes::TransformReport& report);

}  // namespace porttool::stages
