// Pipeline strings, LLVM/MLIR style: a comma-separated list of pass ids, each with optional
// options in braces, e.g. `infer-shapes{input-shape=x:1x3x640x640},eliminate-identity,check`.
// Options are separated by spaces or ';' (`convert-fp16{keep=a,b; io=fp16}`); an unquoted value
// runs to the next space, ';' or brace, so it may hold commas (a list). Values may be quoted ('...'
// or "...") to contain spaces, ';' or braces. A malformed string is
// an Error(kUsage) that quotes the string and marks the column, never an abort.
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace porttool::passes {

struct PipelineStep {
  std::string id;
  PassOptions options;
};

std::vector<PipelineStep> ParsePipeline(const std::string& text);

struct StepReport {
  std::string id;
  PassResult result;
};

// Runs the steps in order on `model`. Stops after a step whose result failed (the remaining steps
// are not run). Every step id is resolved before anything runs.
std::vector<StepReport> RunPipeline(io::Model& model, const std::vector<PipelineStep>& steps,
                                    PassContext& context);
// With a default PassContext.
std::vector<StepReport> RunPipeline(io::Model& model, const std::vector<PipelineStep>& steps);

// onnx-simplifier style: runs the steps repeatedly until a round makes no change, at most
// `max_rounds` rounds. Returns the number of rounds run; sets `hit_cap` when the cap was reached.
int RunToFixedPoint(io::Model& model, const std::vector<PipelineStep>& steps, int max_rounds,
                    bool& hit_cap, std::vector<StepReport>& reports, PassContext& context);
int RunToFixedPoint(io::Model& model, const std::vector<PipelineStep>& steps, int max_rounds,
                    bool& hit_cap, std::vector<StepReport>& reports);

// Resolves every step id and checks its options (Error(kUsage) with the closest ids / the known
// options) without running anything.
void ValidatePipeline(const std::vector<PipelineStep>& steps);

}  // namespace porttool::passes
