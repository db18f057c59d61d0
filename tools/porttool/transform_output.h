// Output shared by the model-transforming subcommands (fold-constants, simplify, rewrite, chain
// --fixed-point): the onnx-simplifier style op table, per-step notes, the JSON document, and the
// rule that a failed run writes nothing.
#pragma once

#include <string>

#include "passes/transform.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {

// The flag that raises a fixed-point cap, named in the warning when the cap was hit.
void WarnIfCapped(const passes::TransformReport& report, const std::string& flag);

// Saves (unless the report failed), prints the table or JSON, returns the exit code.
int FinishTransform(io::Model& model, const passes::TransformReport& report,
                    const ModelOutputOptions& output, bool json);

// The folding limits fold-constants and simplify share, as options.
struct FoldLimits {
  uint64_t max_tensor_bytes = uint64_t{1} << 20;
  int max_rounds = 8;
};
void AddFoldLimitOptions(CLI::App& cmd, FoldLimits& limits, const std::string& rounds_help);

// A PassContext whose notes go to the debug log (-v shows them as they happen), with `limits`.
passes::PassContext LoggingContext(const FoldLimits& limits = {});

}  // namespace porttool::cli
