// Output shared by the model-transforming subcommands (fold-constants, simplify, rewrite, chain
// --fixed-point): the onnx-simplifier style op table, per-step notes, the JSON document, and the
// rule that a failed run writes nothing.
#pragma once

#include <string>

#include "lib/stages/rewrite.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {

// The flag that raises a fixed-point cap, named in the warning when the cap was hit.
void WarnIfCapped(const passes::TransformReport& report, const std::string& flag);

// Saves (unless the report failed), prints the table or JSON, returns the exit code.
int FinishTransform(io::Model& model, const passes::TransformReport& report,
                    const ModelOutputOptions& output, bool json);

// The folding limits fold-constants and simplify share, as options.
void AddFoldLimitOptions(CLI::App& cmd, stages::TransformLimits& limits,
                         const std::string& rounds_help);

// Pass notes to the debug log (-v shows them as they happen).
stages::NoteSink LogNotes();

}  // namespace porttool::cli
