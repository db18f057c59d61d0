// `porttool fold-constants MODEL -o OUT [--input-shape ...] [--max-tensor-bytes N]`.
#include <spdlog/spdlog.h>

#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"
#include "tools/porttool/transform_output.h"

namespace porttool::cli {
namespace {

struct FoldConstantsOptions {
  std::string model;
  std::vector<std::string> input_shapes, input_values;
  stages::TransformLimits limits;
  ModelOutputOptions output;
  bool json = false;
};

int RunFoldConstants(const FoldConstantsOptions& o) {
  shape::InputValues values = ParseInputValueFlags(o.input_values);  // usage errors first
  io::Model model = io::Load(o.model);
  auto report =
      stages::FoldStage(model, {util::Join(o.input_shapes, ","), o.limits, LogNotes(), values});
  for (const auto& note : report.steps.back().result.notes) {
    if (note.rfind("stopped at the round cap", 0) == 0) {
      spdlog::warn("{}; raise --max-rounds to go on", note);
    }
  }
  return FinishTransform(model, report, o.output, o.json);
}

}  // namespace

void RegisterFoldConstants(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<FoldConstantsOptions>();
  auto* cmd = app.add_subcommand(
      "fold-constants", "Evaluate every node whose inputs are constant and store the results");
  cmd->footer(
      "Never grows the model: results over --max-tensor-bytes or larger than their inputs stay "
      "unfolded, each named with its reason.\nExample:\n  porttool fold-constants det.onnx "
      "--input-shape x:1x3x640x640 -o det.folded.onnx");
  AddModelArg(*cmd, opts->model);
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddInputValueOption(*cmd, opts->input_values);
  AddFoldLimitOptions(*cmd, opts->limits, "Cap on infer-fold-cleanup rounds");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunFoldConstants(*opts); }; });
}

}  // namespace porttool::cli
