// Model-to-model transformation runs as the `fold-constants`, `simplify` and `rewrite`
// subcommands use them: a pipeline run once or to a fixed point, with the op histogram before and
// after (the onnx-simplifier table), and simplify's fixed pipeline in one place.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "passes/pipeline.h"

namespace porttool::passes {

struct TransformReport {
  std::map<std::string, int> ops_before;  // op type ("domain::Op" outside ONNX) -> count
  std::map<std::string, int> ops_after;
  int nodes_before = 0;
  int nodes_after = 0;
  std::vector<StepReport> steps;
  int rounds = 1;
  bool hit_cap = false;  // the fixed point was not reached within context.max_rounds
  bool failed = false;   // a check step failed: the model must not be written
};

// One op type's count before and after, for every op in either histogram, sorted by name: the
// table simplify prints and every report of a transformation shows.
struct OpCount {
  std::string op;
  int before = 0;
  int after = 0;
};
std::vector<OpCount> OpCounts(const TransformReport& report);

// Runs `steps` on `model`, once or (fixed_point) until a round changes nothing.
TransformReport Transform(io::Model& model, const std::vector<PipelineStep>& steps,
                          bool fixed_point, PassContext& context);

// simplify: name-nodes first (once), then fold-constants, inline-if,
// eliminate-identity/dead-code/unused-initializers and the exact fusions (fuse-conv-bn,
// fuse-conv-mul, fuse-conv-add), run to a fixed point, then `check`. Folding and inlining
// alternate: a condition computed from shapes or from a given input value folds to a constant, its
// If is inlined, and the nested Ifs of the taken branch reach the main graph for the next round.
TransformReport Simplify(io::Model& model, const std::string& input_shape, PassContext& context);

// Before quantization (what ONNX Runtime's quant_pre_process does with its basic fusions): the
// exact conv fusions to a fixed point, so a BatchNormalization or a constant scale/shift after a
// conv is in the conv's int8 weights and int32 bias instead of behind an extra requantization.
// Output names are kept, so a table calibrated on the prepared model applies to a prepared
// segment of it.
TransformReport PrepareForQuantization(io::Model& model, PassContext& context);

// Steps from a rule list "a,b{k=v}" (the `rewrite --rule` syntax is the pipeline syntax).
std::vector<PipelineStep> RuleSteps(const std::vector<std::string>& rules);

}  // namespace porttool::passes
