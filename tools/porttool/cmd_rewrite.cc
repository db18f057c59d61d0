// `porttool rewrite MODEL --rule ID[,ID...] -o OUT`: apply named rewrite passes in order.
#include "passes/transform.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"
#include "tools/porttool/transform_output.h"

namespace porttool::cli {
namespace {

struct RewriteOptions {
  std::string model;
  std::vector<std::string> rules;
  bool fixed_point = false;
  int max_rounds = 8;
  ModelOutputOptions output;
  bool json = false;
};

int RunRewrite(const RewriteOptions& o) {
  stages::RewriteStageOptions options;
  options.steps = passes::RuleSteps(o.rules);
  passes::ValidatePipeline(options.steps);  // unknown rule ids: exit 2 before any I/O
  options.fixed_point = o.fixed_point;
  options.limits.max_rounds = o.max_rounds;
  options.note_sink = LogNotes();
  io::Model model = io::Load(o.model);
  auto report = stages::RewriteStage(model, options);
  WarnIfCapped(report, "--max-rounds");
  return FinishTransform(model, report, o.output, o.json);
}

}  // namespace

void RegisterRewrite(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<RewriteOptions>();
  auto* cmd = app.add_subcommand("rewrite", "Apply rewrite rules (passes) to a model, in order");
  cmd->footer(
      "Rules are pass ids (`porttool passes`), with options in braces.\nExample:\n  porttool "
      "rewrite det.onnx --rule resize-to-upsample -o det.upsample.onnx\n  porttool rewrite "
      "demo.onnx --rule 'decompose-gelu,fuse-conv-bn' -o demo.std.onnx");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--rule,--rules", opts->rules, "Rule ids, comma-separated or repeated")
      ->required();
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  cmd->add_flag("--fixed-point", opts->fixed_point, "Repeat the rules until nothing changes");
  cmd->add_option("--max-rounds", opts->max_rounds, "With --fixed-point: cap on rounds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunRewrite(*opts); }; });
}

}  // namespace porttool::cli
