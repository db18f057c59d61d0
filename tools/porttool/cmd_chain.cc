// `porttool chain`: run several model-to-model stages on one in-memory model, loading once and
// saving once (for build pipelines).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "passes/pipeline.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct ChainOptions {
  std::string model;
  std::string pipeline;
  ModelOutputOptions output;
  bool fixed_point = false;
  int max_rounds = 8;
  bool json = false;
};

nlohmann::json ReportJson(const std::vector<passes::StepReport>& reports,
                          const std::vector<std::string>& files) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& r : reports) {
    steps.push_back({{"pass", r.id},
                     {"changes", r.result.changes},
                     {"failed", r.result.failed},
                     {"notes", r.result.notes}});
  }
  return {{"steps", steps}, {"output", files}, {"written", !files.empty()}};
}

void PrintText(const std::vector<passes::StepReport>& reports) {
  for (const auto& r : reports) {
    std::cout << fmt::format("{:<20} {} change(s){}\n", r.id, r.result.changes,
                             r.result.failed ? "  FAILED" : "");
    for (const auto& note : r.result.notes) std::cout << "    " << note << "\n";
  }
}

int RunChain(const ChainOptions& o) {
  auto steps = passes::ParsePipeline(o.pipeline);  // parse errors before any I/O
  io::Model model = LoadModel(o.model);
  RefuseOverwritingInput(model, o.output);
  passes::PassContext context;
  std::vector<passes::StepReport> reports;
  if (o.fixed_point) {
    bool hit_cap = false;
    int rounds = passes::RunToFixedPoint(model, steps, o.max_rounds, hit_cap, reports, context);
    if (hit_cap) spdlog::warn("no fixed point after {} rounds; raise --max-rounds", rounds);
  } else {
    reports = passes::RunPipeline(model, steps, context);
  }
  bool failed = !reports.empty() && reports.back().result.failed;
  std::vector<std::string> files;
  if (failed) {
    spdlog::error("stage '{}' failed; nothing was written", reports.back().id);
  } else if (!o.output.output.empty()) {
    files = SaveModel(model, o.output);
  } else {
    spdlog::warn("no -o given: the pipeline ran but nothing was written");
  }
  if (o.json) {
    PrintJson(ReportJson(reports, files));
  } else {
    PrintText(reports);
    for (const auto& f : files) std::cout << "wrote " << f << "\n";
    if (files.empty()) std::cout << "nothing written (no -o)\n";
  }
  return failed ? kExitCheckFailed : kExitOk;
}

}  // namespace

void RegisterChain(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<ChainOptions>();
  auto* cmd = app.add_subcommand(
      "chain", "Run several stages on one model in one process (load once, save once)");
  cmd->footer(
      "Pipeline syntax: comma-separated pass ids, options in braces (`porttool passes` lists "
      "them):\n"
      "  porttool chain model.onnx -o out.onnx \\\n"
      "    -p 'infer-shapes{input-shape=images:1x3x64x64},eliminate-identity,check'");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("-p,--pipeline", opts->pipeline,
                  "Stages to run, e.g. 'infer-shapes{input-shape=x:1x3x640x640},check'")
      ->required();
  AddModelOutputOptions(*cmd, opts->output, /*required=*/false);
  cmd->add_flag("--fixed-point", opts->fixed_point,
                "Repeat the pipeline until a round changes nothing (onnx-simplifier style)");
  cmd->add_option("--max-rounds", opts->max_rounds, "With --fixed-point: cap on rounds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunChain(*opts); }; });
}

}  // namespace porttool::cli
