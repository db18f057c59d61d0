// `porttool simplify MODEL -o OUT [--input-shape ...]`: the onnx-simplifier equivalent.
#include <spdlog/spdlog.h>

#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"
#include "tools/porttool/transform_output.h"

namespace porttool::cli {
namespace {

struct SimplifyOptions {
  std::string model;
  std::vector<std::string> input_shapes, input_values;
  stages::TransformLimits limits;
  ModelOutputOptions output;
  bool json = false;
};

int RunSimplify(const SimplifyOptions& o) {
  shape::InputValues values = ParseInputValueFlags(o.input_values);  // usage errors first
  io::Model model = io::Load(o.model);
  auto report =
      stages::SimplifyStage(model, {util::Join(o.input_shapes, ","), o.limits, LogNotes(), values});
  WarnIfCapped(report, "--max-rounds");
  return FinishTransform(model, report, o.output, o.json);
}

}  // namespace

void RegisterSimplify(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<SimplifyOptions>();
  auto* cmd = app.add_subcommand(
      "simplify", "Fold constants, drop Identity/dead code, fuse Conv+BN/Add, to a fixed point");
  cmd->footer(
      "Runs fold-constants, inline-if, eliminate-identity, fuse-conv-bn, fuse-conv-mul, "
      "fuse-conv-add, eliminate-dead-code and eliminate-unused-initializers until nothing "
      "changes, then check (exit 1, nothing written, if it fails). An If whose condition becomes "
      "constant (from --input-value or the pinned shapes) is replaced by its taken branch.\n"
      "Examples:\n  porttool simplify det.onnx --input-shape x:1x3x640x640 -o det.sim.onnx\n"
      "  porttool simplify vad.onnx --input-value sr=16000 -o vad.sim.onnx");
  AddModelArg(*cmd, opts->model);
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddInputValueOption(*cmd, opts->input_values);
  AddFoldLimitOptions(*cmd, opts->limits, "Cap on fixed-point rounds");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunSimplify(*opts); }; });
}

}  // namespace porttool::cli
