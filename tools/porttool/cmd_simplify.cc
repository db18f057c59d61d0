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
  std::vector<std::string> input_shapes;
  stages::TransformLimits limits;
  ModelOutputOptions output;
  bool json = false;
};

int RunSimplify(const SimplifyOptions& o) {
  io::Model model = io::Load(o.model);
  auto report =
      stages::SimplifyStage(model, {util::Join(o.input_shapes, ","), o.limits, LogNotes()});
  WarnIfCapped(report, "--max-rounds");
  return FinishTransform(model, report, o.output, o.json);
}

}  // namespace

void RegisterSimplify(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<SimplifyOptions>();
  auto* cmd = app.add_subcommand(
      "simplify", "Fold constants, drop Identity/dead code, fuse Conv+BN/Add, to a fixed point");
  cmd->footer(
      "Runs fold-constants, eliminate-identity, fuse-conv-bn, fuse-conv-mul, fuse-conv-add, "
      "eliminate-dead-code "
      "and eliminate-unused-initializers until nothing changes, then check (exit 1, nothing "
      "written, if it fails).\nExample:\n  porttool simplify det.onnx --input-shape "
      "x:1x3x640x640 -o det.sim.onnx");
  AddModelArg(*cmd, opts->model);
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddFoldLimitOptions(*cmd, opts->limits, "Cap on fixed-point rounds");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunSimplify(*opts); }; });
}

}  // namespace porttool::cli
