// `porttool check MODEL [--json]`: ONNX checker + strict shape inference + porting lints.
#include <fmt/format.h>

#include <iostream>

#include "lib/analysis/check.h"
#include "lib/decide/scan.h"
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
};

nlohmann::json ReportJson(const analysis::CheckReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    findings.push_back({{"severity", analysis::SeverityName(f.severity)},
                        {"id", f.id},
                        {"node", f.node},
                        {"tensor", f.tensor},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  return {{"ok", !report.HasErrors()},
          {"errors", report.Count(analysis::Severity::kError)},
          {"warnings", report.Count(analysis::Severity::kWarning)},
          {"infos", report.Count(analysis::Severity::kInfo)},
          {"findings", findings}};
}

void PrintText(const std::string& path, const analysis::CheckReport& report) {
  for (const auto& f : report.findings) {
    std::cout << fmt::format("{}[{}] {}\n", analysis::SeverityName(f.severity), f.id, f.message);
    if (!f.fix.empty()) std::cout << fmt::format("    fix: {}\n", f.fix);
  }
  std::cout << fmt::format(
      "{}: {} ({} errors, {} warnings, {} infos)\n", path, report.HasErrors() ? "FAILED" : "OK",
      report.Count(analysis::Severity::kError), report.Count(analysis::Severity::kWarning),
      report.Count(analysis::Severity::kInfo));
}

int RunCheck(const CheckOptions& o) {
  shape::InputShapes pins = ParseShapeFlags(o.input_shapes);
  io::Model model = LoadModel(o.model);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/false);
  analysis::CheckOptions options;
  options.full_check = !o.no_full_check;
  options.input_shapes = pins;
  analysis::CheckReport report = analysis::CheckModel(model, options);
  nlohmann::json target_json;
  if (!o.target.empty()) {
    // The compatibility scan and memory fit against a target profile (rules/targets/); its
    // failures join the findings so that the run has one verdict.
    StageTimer timer("target scan");
    decide::TargetCheck target =
        decide::CheckModelOnTarget(model, LoadTargetFlag(o.rules_dir, o.target), pins);
    decide::AddTargetFindings(target, report);
    target_json = decide::TargetCheckToJson(target);
    if (!o.json) std::cout << decide::TargetCheckToText(target);
  }
  if (o.json) {
    nlohmann::json doc = ReportJson(report);
    doc["model"] = o.model;
    if (!target_json.is_null()) doc["target"] = target_json;
    PrintJson(doc);
  } else {
    PrintText(o.model, report);
  }
  return report.HasErrors() ? kExitCheckFailed : kExitOk;
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
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunCheck(*opts); }; });
}

}  // namespace porttool::cli
