// `porttool diff A B`: what differs between two models (lib/stages/diff.h) as text, JSON or an
// HTML page; with --data or --random-inputs also how far apart every matched tensor is.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "lib/io/atomic_file.h"
#include "lib/runtime/process_settings.h"
#include "lib/stages/diff.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct DiffCliOptions {
  std::string model_a, model_b;
  std::vector<std::string> input_shapes;
  std::string data;
  bool random_inputs = false;
  uint64_t seed = kDefaultSeed;
  double rtol = 1e-3, atol = 1e-4;
  std::string html;
  size_t top = 20;
  int threads = 0;
  bool json = false;
};

stages::DiffOptions StageOptions(const DiffCliOptions& o) {
  if (!o.data.empty() && o.random_inputs) {
    ThrowUsage("--data and --random-inputs both choose the inputs of the numeric diff: give one");
  }
  stages::DiffOptions options;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  options.numeric = !o.data.empty() || o.random_inputs;
  options.data_dir = o.data;
  options.seed = o.seed;
  options.compare.tolerance = {o.rtol, o.atol};
  options.compare.scratch_dir = std::filesystem::temp_directory_path();
  return options;
}

int RunDiff(const DiffCliOptions& o) {
  runtime::ApplyProcessSettings({o.threads});
  stages::DiffOptions options = StageOptions(o);
  io::Model a = LoadModel(o.model_a);
  io::Model b = LoadModel(o.model_b);
  if (!o.html.empty()) {
    RefuseOverwritingInput(a, o.html);
    RefuseOverwritingInput(b, o.html);
    io::CheckOutputFilePath(o.html);
  }
  stages::ModelDiff diff = stages::DiffStage(a, b, options);
  if (!o.html.empty()) {
    io::WriteFileAtomic(o.html, stages::DiffHtml(diff, a, b, o.model_a, o.model_b));
  }
  if (o.json) {
    nlohmann::json doc = stages::DiffJson(diff);
    doc["a"] = o.model_a;
    doc["b"] = o.model_b;
    if (!o.html.empty()) doc["html"] = o.html;
    PrintJson(doc);
  } else {
    std::cout << fmt::format("A {}\nB {}\n", o.model_a, o.model_b) << stages::DiffText(diff, o.top);
    if (!o.html.empty()) std::cout << "wrote " << o.html << "\n";
  }
  return diff.Same() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterDiff(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<DiffCliOptions>();
  auto* cmd = app.add_subcommand(
      "diff", "What differs between two models: nodes, attributes, weights, inputs and outputs");
  cmd->footer(
      "Nodes match by name, then by structure (op, attributes, where their inputs come from), so "
      "renamed or re-ordered graphs still match; names alone are never a difference.\n"
      "Exit 0 when the models are the same (and, when run, their outputs within tolerance), 1 "
      "when they differ.\n"
      "Examples:\n  porttool diff det.onnx det.simplified.onnx\n"
      "  porttool diff det.onnx det.simplified.onnx --random-inputs --input-shape "
      "x:1x3x224x224 --html diff.html");
  cmd->add_option("model_a", opts->model_a, "The first model (A, the reference)")->required();
  cmd->add_option("model_b", opts->model_b, "The second model (B), compared with A")->required();
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("--data", opts->data,
                  "Also run both models on the first sample of DIR (<id>.<input>.npy files, as "
                  "port --data) and compare every matched tensor");
  cmd->add_flag("--random-inputs", opts->random_inputs,
                "Also run both models on random inputs and compare every matched tensor");
  AddSeedOption(*cmd, opts->seed, "--random-inputs");
  cmd->add_option("--rtol", opts->rtol, "Relative tolerance of the numeric comparison")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--atol", opts->atol, "Absolute tolerance of the numeric comparison")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--html", opts->html,
                  "Also write a self-contained HTML page: summary, the two graphs side by side "
                  "coloured by change, and the tables")
      ->type_name(kOutputFileType);
  cmd->add_option("--top", opts->top, "Rows per list in the text output (--json lists all)")
      ->capture_default_str();
  AddThreadsOption(*cmd, opts->threads);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunDiff(*opts); }; });
}

}  // namespace porttool::cli
