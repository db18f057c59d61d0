// `porttool split`: cut a model at named nodes into accelerator/host segments chained by bridge
// tensors, written with pipeline.json (lib/ir/split.h does the work).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/ir/split.h"
#include "lib/shape/input_shapes.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct SplitOptions {
  std::string model;
  std::vector<std::string> at;
  std::string output;
  bool copy_weights = false;
  uint64_t bridge_warn_bytes = uint64_t{1} << 20;
  std::vector<std::string> input_shapes;
  bool json = false;
};

// Which nodes go to the host. `--auto --target NAME` (decision engine) plugs in here: mark the
// nodes the target cannot run and call ir::SplitModel(model, host, options) instead.
ir::SplitResult PlanSplit(const io::Model& model, const SplitOptions& o) {
  ir::SplitOptions options;
  options.bridge_warn_bytes = o.bridge_warn_bytes;
  options.input_shapes = shape::ParseInputShapes(o.input_shapes);
  return ir::SplitAtNodes(model, o.at, options);
}

int RunSplit(const SplitOptions& o) {
  io::Model model = io::Load(o.model);
  ir::SplitResult result = PlanSplit(model, o);
  std::filesystem::path dir =
      o.output.empty() ? ir::DefaultSplitDir(o.model) : std::filesystem::path(o.output);
  ir::WriteSplitOptions write_options;
  write_options.copy_weights = o.copy_weights;
  ir::WriteSplitResult written = ir::WriteSplit(result, model, dir, write_options);
  // `--verify` (executor) plugs in here: run `model` and the chained `result.segments` on the
  // same inputs, passing bridges by name, and return kExitCheckFailed on a mismatch.
  for (const auto& note : result.notes) spdlog::warn("{}", note);
  for (const auto& note : written.notes) spdlog::warn("{}", note);
  for (const auto& advice : result.advice) spdlog::warn("{}", advice.message);
  if (o.json) {
    nlohmann::json doc = written.manifest;
    doc["dir"] = written.dir.string();
    PrintJson(doc);
    return kExitOk;
  }
  std::cout << fmt::format("{} -> {}/ ({} segments, {} bridges, weights {})\n", o.model,
                           written.dir.string(), result.segments.size(), result.bridges.size(),
                           o.copy_weights ? "copied" : "zero-copy");
  std::cout << ir::FormatSplitTable(result);
  return kExitOk;
}

}  // namespace

void RegisterSplit(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<SplitOptions>();
  auto* cmd = app.add_subcommand(
      "split", "Cut a model at nodes into accelerator/host segments with a pipeline.json");
  cmd->footer(
      "Each --at node runs on the host (CPU); the graph between cuts becomes accelerator\n"
      "segments. Tensors crossing a cut (skip connections included) become bridges.\n"
      "Example:\n  porttool split model.onnx --at Custom_GELU_0 -o model.split");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--at", opts->at,
                  "Node to run on the host (repeat for several cuts; adjacent cut nodes share "
                  "one host segment)")
      ->required();
  cmd->add_option("-o,--output", opts->output,
                  "Output directory (default: <model stem>.split in the current directory); "
                  "replaced only if it holds a previous split");
  cmd->add_flag("--copy-weights", opts->copy_weights,
                "Write self-contained segments holding only their own weights (default: "
                "zero-copy, segments refer to the hard-linked original data file)");
  cmd->add_option("--bridge-warn-bytes", opts->bridge_warn_bytes,
                  "Warn, with smaller cut candidates nearby, when a bridge exceeds this size")
      ->capture_default_str();
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunSplit(*opts); }; });
}

}  // namespace porttool::cli
