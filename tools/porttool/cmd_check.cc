// `porttool check MODEL [--json] [--fix -o OUT]`: ONNX checker + strict shape inference + porting
// lints, and the fixes that need no one's judgement.
#include <fmt/format.h>

#include <iostream>

#include "lib/stages/check.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct CheckOptions {
  std::string model;
  bool json = false;
  std::vector<std::string> custom_ops;
  bool no_full_check = false;
  std::string target;
  std::string rules_dir;
  std::vector<std::string> input_shapes;
  bool fix = false;
  ModelOutputOptions output;
};

// --fix: the findings' automatic fixes on the model as loaded, written to -o (the report above
// is of the model before them).
std::vector<std::string> WriteFixed(io::Model& model, const CheckOptions& o) {
  std::vector<std::string> fixed = stages::ApplyCheckFixes(model);
  SaveModel(model, o.output);
  return fixed;
}

int RunCheck(const CheckOptions& o) {
  if (o.fix != !o.output.output.empty()) ThrowUsage("--fix and -o go together: --fix -o OUT");
  stages::CheckStageOptions options;
  options.full_check = !o.no_full_check;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  if (!o.target.empty()) options.target = LoadTargetFlag(o.rules_dir, o.target);
  io::Model model = LoadModel(o.model);
  if (o.fix) RefuseOverwritingInput(model, o.output);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/false);
  stages::CheckStageResult result = stages::CheckStage(model, options);
  const analysis::CheckReport& report = result.report;
  std::vector<std::string> fixed;
  if (o.fix) fixed = WriteFixed(model, o);
  if (o.json) {
    nlohmann::json doc = stages::CheckJson(result);
    doc["model"] = o.model;
    if (o.fix) doc["fixed"] = fixed, doc["written"] = o.output.output;
    PrintJson(doc);
  } else {
    if (result.target) std::cout << decide::TargetCheckToText(*result.target);
    for (const auto& [f, more] : analysis::SelectFindings(report, {})) {
      std::cout << fmt::format("{}[{}] {}\n", analysis::SeverityName(f->severity), f->id,
                               f->message);
      if (!f->fix.empty()) std::cout << fmt::format("    fix: {}\n", f->fix);
      if (auto command = FixCommand(*f, model, o.model)) {
        std::cout << fmt::format("    run: {}\n", *command);
      }
      if (more > 0) {
        std::cout << fmt::format("{}[{}] {} (--json lists the first {} of each kind)\n",
                                 analysis::SeverityName(f->severity), f->id,
                                 analysis::MoreLikeThis(more), stages::kJsonFindingsPerId);
      }
    }
    std::cout << fmt::format(
        "{}: {} ({} errors, {} warnings, {} infos)\n", o.model,
        report.HasErrors() ? "FAILED" : "OK", report.Count(analysis::Severity::kError),
        report.Count(analysis::Severity::kWarning), report.Count(analysis::Severity::kInfo));
    for (const auto& line : fixed) std::cout << "fixed: " << line << "\n";
    if (o.fix) {
      std::cout << fmt::format("wrote {}{}\n", o.output.output,
                               fixed.empty() ? " (nothing to fix: the model as it was)" : "");
    }
  }
  return result.ok() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterCheck(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand(
      "check", "ONNX checker, strict shape inference and porting lints (exit 1 on an error)");
  cmd->footer(
      "Exit codes: 0 no error-level finding, 1 at least one, 3 unreadable or unsafe file.\n"
      "Example:\n  porttool check testdata/demo_detector.onnx\n"
      "  porttool check model.onnx --target rknn-rk3588 --input-shape x:1x3x640x640");
  AddModelArg(*cmd, opts->model);
  cmd->add_flag("--no-full-check", opts->no_full_check,
                "Skip strict shape inference (run only the checker and the lints)");
  AddTargetOption(*cmd, opts->target,
                  "Also scan operator support and memory fit against a target; exit 1 when a "
                  "node is unsupported without CPU fallback or weights + activations exceed "
                  "the target's usable memory");
  AddRulesDirOption(*cmd, opts->rules_dir);
  AddInputShapeOption(*cmd, opts->input_shapes);
  AddCustomOpOption(*cmd, opts->custom_ops);
  cmd->add_flag("--fix", opts->fix,
                "Write the model with the fixes that need no judgement (initializers dropped from "
                "the graph inputs) to -o; the findings are of the model before them");
  AddModelOutputOptions(*cmd, opts->output, /*required=*/false);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunCheck(*opts); }; });
}

}  // namespace porttool::cli
