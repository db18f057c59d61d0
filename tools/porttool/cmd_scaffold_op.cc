// `porttool scaffold-op`: generates the custom-operator package (op.json, C99 kernel, porttool ABI
// glue, ONNX schema, test kit and C test, CMakeLists.txt, and the SDK adapters chosen with
// --target) for one node of a model.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lib/stages/scaffold.h"
#include "lib/util/error.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct ScaffoldOpOptions {
  std::string model;
  std::string node;
  std::vector<std::string> input_shapes;
  std::string output;
  std::string targets = "ort,rknn,tensorrt,tflm";
  uint64_t seed = kDefaultSeed;
  bool json = false;
  bool force = false;
};

// The library names no flags; the CLI says which one was wrong.
std::vector<std::string> ParseTargetFlag(const std::string& list) {
  try {
    return emit::ParseAdapterTargets(list);
  } catch (const Error& e) {
    throw Error(e.kind(), std::string("--target: ") + e.what(), e.node(), e.tensor());
  }
}

int RunScaffoldOp(const ScaffoldOpOptions& o) {
  // Checked first: a typo in --target is exit 2 before any work.
  std::vector<std::string> targets = ParseTargetFlag(o.targets);
  shape::InputShapes pins = ParseShapeFlags(o.input_shapes);
  io::Model model = io::Load(o.model);
  emit::ScaffoldResult result =
      stages::ScaffoldStage(model, {pins, {o.node, o.seed, targets, o.force}, o.output});
  for (const auto& note : result.notes) spdlog::warn("{}", note);
  const auto& spec = result.spec;
  if (o.json) {
    PrintJson({{"dir", o.output},
               {"op", shape::OpSpecToJson(spec)},
               {"targets", targets},
               {"files", result.files},
               {"notes", result.notes}});
    return kExitOk;
  }
  fmt::print("{}::{} (node {}): {} kernel, shape rule {}\n", spec.domain, spec.op_type,
             spec.source_node, spec.kernel == "skeleton" ? "skeleton" : "working", spec.shape_rule);
  for (const auto& f : result.files) fmt::print("  {}/{}\n", o.output, f);
  fmt::print(
      "build: cmake -S {0} -B {0}/build && cmake --build {0}/build && ctest --test-dir "
      "{0}/build\n",
      o.output);
  return kExitOk;
}

}  // namespace

void RegisterScaffoldOp(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<ScaffoldOpOptions>();
  auto* cmd = app.add_subcommand(
      "scaffold-op", "Generate a custom-operator package (kernel, schema, kit, tests) for a node");
  cmd->footer(
      "Example:\n  porttool scaffold-op testdata/demo_detector.onnx --node Custom_GELU_0 "
      "--input-shape images:1x3x64x64 -o gelu_op\n"
      "  cmake -S gelu_op -B gelu_op/build && cmake --build gelu_op/build\n"
      "  (adapters: -DONNXRUNTIME_ROOT=, -DRKNN_SDK_ROOT=, -DTENSORRT_ROOT=, -DTFLM_ROOT=; "
      "see gelu_op/<target>/README.md)\n"
      "  porttool compare testdata/demo_detector.onnx testdata/demo_detector.onnx "
      "--custom-op gelu_op --input-shape images:1x3x64x64");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--node", opts->node, "Name of the node to scaffold")->required();
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("-o,--output", opts->output, "Package directory to write")
      ->required()
      ->type_name(kOutputDirType);
  AddForceFlag(*cmd, opts->force);
  cmd->add_option("--target", opts->targets,
                  "SDK adapters to generate, comma-separated: ort, rknn, tensorrt, tflm (or all)")
      ->capture_default_str();
  AddSeedOption(*cmd, opts->seed, "the kit's random model inputs");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunScaffoldOp(*opts); }; });
}

}  // namespace porttool::cli
