// `porttool port MODEL --target NAME`: from a PC model to a verified, target-ready bundle
// (lib/stages/port.h does every step; this file parses options and prints the outcome).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/stages/port.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct PortCliOptions {
  std::string model, target, rules_dir, facts, output;
  std::vector<std::string> input_shapes, input_values, input_ranges;
  QuantizeFlags quant;
  bool dry_run = false, force = false, keep_failed = false, json = false;
  int threads = 1;
  bool ort_compatible = false;
  uint64_t seed = kDefaultSeed;
  double rtol = 1e-4, atol = 1e-5;
};

void LogStep(const stages::PortStep& step, bool finished) {
  if (!finished) {
    spdlog::debug("[{}] {}...", step.id, step.title);
    return;
  }
  auto level = step.outcome == "failed" ? spdlog::level::err : spdlog::level::info;
  spdlog::log(level, "[{}] {} in {}{}: {}", step.id, step.outcome, util::FormatMs(step.ms),
              step.verify_ms > 0 ? ", verifying " + util::FormatMs(step.verify_ms) : "",
              step.title);
  for (const auto& d : step.details) spdlog::debug("    {}", d);
}

void PrintGates(const std::vector<stages::Gate>& gates) {
  fmt::print("\ngates:\n");
  for (const auto& g : gates) {
    std::string status = stages::GateStatusName(g.status);
    if (g.status == stages::GateStatus::kNotEvaluated && !g.blocking) status += " (no block)";
    fmt::print("  {:<13} {:<24} {}\n", g.id, status, g.measured);
    if (!g.needed.empty()) fmt::print("  {:<13} {:<24} needs {}\n", "", "", g.needed);
  }
}

// A failed run says where and why in place of the verdict, and claims no file.
void PrintFailure(const stages::PortResult& r, const PortCliOptions& o) {
  const stages::PortFailure& f = *r.failure;
  fmt::print("\nfailed at step '{}': {}\n", f.step, WithFlagHint(f.message));
  if (!f.node.empty()) fmt::print("  node: {}\n", f.node);
  if (!f.tensor.empty()) fmt::print("  tensor: {}\n", f.tensor);
  if (!f.kept.empty()) {
    fmt::print("  the partial bundle is kept in {}/\n", f.kept.string());
  } else if (!o.dry_run) {
    fmt::print("  nothing was written (--keep-failed keeps the partial bundle)\n");
  }
}

void PrintText(const stages::PortResult& r, const PortCliOptions& o) {
  for (const auto& s : r.steps) {
    fmt::print("{:<9} {:<8} {}\n", s.id, s.outcome, s.details.empty() ? s.title : s.details[0]);
    for (size_t i = 1; i < s.details.size(); ++i) fmt::print("{:<18} {}\n", "", s.details[i]);
  }
  if (r.failure) return PrintFailure(r, o);
  PrintGates(r.gates);
  fmt::print("\nverdict: {}\n", r.verdict);
  for (const auto& g : r.gates) {
    if (!g.finding.empty()) fmt::print("  {}: {}\n", g.id, g.finding);
  }
  for (const auto& item : r.left) fmt::print("  left: {}\n", item);
  if (o.dry_run) {
    fmt::print("dry run: nothing written (the bundle would be {}/)\n", r.bundle.string());
  } else {
    fmt::print("bundle: {}/ ({} files)\nreport: {}\n", r.bundle.string(), r.bundle_files.size(),
               (r.bundle / "report.html").string());
  }
  double ms = 0, verify_ms = 0;
  for (const auto& s : r.steps) ms += s.ms, verify_ms += s.verify_ms;
  fmt::print("time: {}, of which verifying {}\n", util::FormatMs(ms), util::FormatMs(verify_ms));
}

int RunPort(const PortCliOptions& o) {
  ApplyOrtCompatibleFlag(o.ort_compatible);
  stages::PortOptions options;
  options.model = o.model;
  options.rules_dir = ResolveRulesDir(o.rules_dir);
  options.target = o.target;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  options.input_values = ParseInputValueFlags(o.input_values);
  options.input_ranges = ParseInputRangeFlags(o.input_ranges);
  if (!o.quant.data.empty()) options.quantize = QuantizeRequestFromFlags(o.quant, o.threads);
  if (o.quant.data.empty() && (!o.quant.accuracy_target.empty() || o.quant.target_sqnr)) {
    ThrowUsage("--accuracy-target needs --data DIR (calibration samples)");
  }
  // A float port judged on the user's samples: the float16 segments of an fp16 target.
  if (o.quant.data.empty() && !o.quant.eval_data.empty()) {
    options.float16_eval = QuantizeRequestFromFlags(o.quant, o.threads);
  }
  // Without calibration nothing is quantized: a precision choice would be silently ignored, and
  // the nodes it names never checked.
  if (o.quant.data.empty() && (!o.quant.precision.empty() || !o.quant.exclude_nodes.empty() ||
                               !o.quant.exclude_ops.empty())) {
    ThrowUsage(
        "--precision, --exclude-nodes and --exclude-ops choose what stays float in a quantized "
        "model: they need --data DIR (calibration samples); without it the port is float");
  }
  options.facts_file = o.facts;
  options.output_dir = o.output;
  options.dry_run = o.dry_run;
  options.force = o.force;
  options.keep_failed = o.keep_failed;
  options.threads = o.threads;
  options.seed = o.seed;
  options.rtol = o.rtol;
  options.atol = o.atol;
  stages::PortResult r = stages::PortStage(options, LogStep);
  // 1 when a gate fails (the bundle is written: that is where the user reads why); a failed step
  // keeps its error's code.
  int code = r.failure             ? ExitCodeFor(r.failure->kind)
             : r.status == "ready" ? kExitOk
                                   : kExitCheckFailed;
  if (r.failure) {
    spdlog::error("port failed at step '{}': {}", r.failure->step,
                  WithFlagHint(r.failure->message));
    if (!r.failure->kept.empty()) {
      spdlog::error("the partial bundle is kept in {}", r.failure->kept.string());
    } else if (!o.dry_run) {
      spdlog::error("nothing was written (--keep-failed keeps the partial bundle)");
    }
  }
  if (o.json) {
    nlohmann::json doc = stages::PortJson(r);
    if (r.failure) {
      doc["error"].update(ErrorJson(r.failure->kind, WithFlagHint(r.failure->message),
                                    r.failure->node, r.failure->tensor)["error"]);
    }
    PrintJson(doc);
  } else {
    PrintText(r, o);
  }
  return code;
}

}  // namespace

void RegisterPort(CLI::App& app, RunFn& run) {
  auto o = std::make_shared<PortCliOptions>();
  auto* cmd = app.add_subcommand(
      "port", "From a PC model to a verified, target-ready bundle (every stage, in one command)");
  cmd->footer(
      "Steps: check and pin, simplify, the target's rewrites, channel equalization (with "
      "--equalize), scan and split, quantize (with --data), emit (headers, runners, custom-op "
      "packages), report. Each is verified before the "
      "next; the bundle appears only when all pass.\nExamples:\n"
      "  porttool port testdata/demo_detector.onnx --target rknn-rk3588 --input-shape "
      "images:1x3x64x64\n"
      "  porttool port det.onnx --target rknn-rk3588 --input-shape x:1x3x640x640 --data calib/ "
      "--resize 640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 -o det.port");
  AddModelArg(*cmd, o->model);
  AddTargetOption(*cmd, o->target, "The target (required)")->required();
  AddRulesDirOption(*cmd, o->rules_dir);
  AddInputShapeOption(*cmd, o->input_shapes)
      ->description(
          "Pin an input's dims: NAME:DIMS, e.g. x:1x3x640x640 (default: the target profile's "
          "default_input_shape; repeat, or separate with ',')");
  AddInputValueOption(*cmd, o->input_values);
  AddInputRangeOption(*cmd, o->input_ranges);
  AddQuantizeOptions(*cmd, o->quant);
  cmd->add_option("--facts", o->facts, "Project facts for the decision report (docs/facts.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", o->output,
                  "Bundle directory (default: <model stem>.port in the current directory)")
      ->type_name(kOutputDirType);
  cmd->add_flag("--dry-run", o->dry_run,
                "Print the plan (steps, what each would do, the cuts) and write nothing");
  cmd->add_flag("--force", o->force, "Replace the bundle directory when it exists");
  cmd->add_flag("--keep-failed", o->keep_failed,
                "When a step fails, keep the partial bundle (its path is printed)");
  AddOrtCompatibleFlag(*cmd, o->ort_compatible);
  cmd->add_option("--threads", o->threads,
                  "Samples calibrated and evaluated at once (kernels run on one thread, so the "
                  "bundle is the same for any value)")
      ->check(InRange(1, 256))
      ->capture_default_str();
  AddSeedOption(*cmd, o->seed, "the verifications' random inputs");
  cmd->add_option("--rtol", o->rtol, "Relative tolerance of the simplify and rewrite verifications")
      ->check(InRange(0, 1))
      ->capture_default_str();
  cmd->add_option("--atol", o->atol, "Absolute tolerance of the simplify and rewrite verifications")
      ->check(InRange(0, 1e6))
      ->capture_default_str();
  AddJsonFlag(*cmd, o->json);
  cmd->callback([o, &run] { run = [o] { return RunPort(*o); }; });
}

}  // namespace porttool::cli
