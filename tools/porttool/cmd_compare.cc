// `porttool compare`: runs two models on the same inputs and reports how far apart their outputs
// (and, with --per-tensor, their shared intermediates) are.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "lib/ir/node_names.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/tensor_io.h"
#include "lib/stages/compare.h"
#include "lib/util/error.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct CompareCliOptions {
  std::string model_a, model_b;
  std::vector<std::string> inputs, input_ranges;
  uint64_t seed = kDefaultSeed;
  std::vector<std::string> input_shapes;
  bool per_tensor = false;
  std::vector<std::string> rtol, atol;
  std::string save_outputs, load_outputs;
  int threads = 0;
  bool ort_compatible = false;
  size_t top = 20;
  bool json = false;
  std::vector<std::string> custom_ops;
  std::vector<std::string> tasks;
  std::vector<std::string> precision;
  bool isolate = false;  // --isolate: per-layer local vs accumulated error
  std::string data;      // --data DIR: the samples --isolate runs
};

// "1e-3" sets the default, "score:1e-2" one output's (the last ':' separates: names may hold ':').
void ParseTolerances(const std::vector<std::string>& specs, const char* flag,
                     runtime::CompareOptions& options, double runtime::Tolerance::*field) {
  for (const auto& spec : specs) {
    size_t colon = spec.rfind(':');
    std::string name = colon == std::string::npos ? "" : spec.substr(0, colon);
    std::string text = colon == std::string::npos ? spec : spec.substr(colon + 1);
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      ThrowUsage("{} '{}': expected VALUE or OUTPUT:VALUE with a number", flag, spec);
    }
    if (!std::isfinite(value) || value < 0) {
      ThrowUsage("{} '{}': the tolerance must be a finite number >= 0", flag, spec);
    }
    if (name.empty()) {
      options.tolerance.*field = value;
    } else {
      if (!options.per_output.count(name)) options.per_output[name] = options.tolerance;
      options.per_output[name].*field = value;
    }
  }
  // An output named only in the other flag's specs takes this flag's default.
  for (auto& [name, tol] : options.per_output) {
    bool named = false;
    for (const auto& spec : specs) named |= spec.rfind(name + ":", 0) == 0;
    if (!named) tol.*field = options.tolerance.*field;
  }
}

void PrintRow(const runtime::TensorComparison& c) {
  const auto& s = c.stats;
  if (!s.comparable) {
    fmt::print("  {}  NOT COMPARABLE: {}\n", c.name, s.note);
    return;
  }
  fmt::print(
      "  {}  max_abs {:.3g}  mean_abs {:.3g}  median_abs {:.3g}  max_rel {:.3g}  cosine {:.6f}  "
      "sqnr {} {}\n",
      c.name, s.max_abs, s.mean_abs, s.median_abs, s.max_rel, s.cosine,
      std::isinf(s.sqnr_db) ? "inf" : fmt::format("{:.1f} dB", s.sqnr_db),
      s.within_tolerance ? "ok" : "OVER TOLERANCE");
}

void PrintText(const runtime::ModelComparison& result, const CompareCliOptions& o,
               const runtime::CompareOptions& options) {
  fmt::print("outputs (rtol {}, atol {}{}):\n", options.tolerance.rtol, options.tolerance.atol,
             options.per_output.empty() ? "" : "; per-output overrides in --json");
  for (const auto& c : result.outputs) PrintRow(c);
  for (const auto& name : result.unmatched_outputs) fmt::print("  {}  MISSING\n", name);
  if (o.per_tensor) {
    if (result.first_divergent) {
      const auto& c = result.intermediates[*result.first_divergent];
      fmt::print("first divergent tensor (execution order): {} from node {}\n", c.name,
                 ir::QuotedNodeLabel(c.node, c.op));
      PrintRow(c);
    }
    size_t over = 0;
    for (const auto& c : result.intermediates) over += !c.stats.within_tolerance;
    fmt::print("per-tensor in execution order ({} shared tensors, {} over tolerance):\n",
               result.intermediates.size(), over);
    for (size_t i = 0; i < result.intermediates.size() && i < o.top; ++i) {
      PrintRow(result.intermediates[i]);
    }
  }
  fmt::print("{}\n", result.within_tolerance ? "within tolerance" : "OVER TOLERANCE");
}

// --precision fp16 computes the candidate in float16 (MODEL_B; the model itself when it is the
// only one) against the reference in float32: what the device loses, not two devices' drift.
void WarnFloat16(const runtime::ModelComparison& result) {
  for (const auto& o : result.float16_overflows) {
    spdlog::warn("in the candidate: {}", Float16OverflowMessage(o));
  }
  if (!result.float16_kept_float64.empty()) {
    spdlog::warn("{}", Float64KeptMessage(result.float16_kept_float64));
  }
}

std::string Sqnr(const runtime::TensorStats& s) {
  if (!s.comparable) return "n/a";
  return std::isinf(s.sqnr_db) ? "inf" : fmt::format("{:.1f}", s.sqnr_db);
}

void PrintIsolate(const runtime::IsolateResult& r, const CompareCliOptions& o,
                  const runtime::CompareOptions& options) {
  fmt::print("outputs over {} sample{} (rtol {}, atol {}):\n", r.samples, r.samples == 1 ? "" : "s",
             options.tolerance.rtol, options.tolerance.atol);
  for (const auto& c : r.outputs) PrintRow(c);
  for (const auto& name : r.unmatched_outputs) fmt::print("  {}  MISSING\n", name);
  fmt::print(
      "per-layer error, worst local first ({} shared tensors, top {}): local = the layer on "
      "MODEL_A's inputs, accumulated = MODEL_B's own run\n",
      r.tensors.size(), std::min(o.top, r.tensors.size()));
  fmt::print("  {:>4}  {:>10}  {:>10}  {:>12}  {:>12}  {}\n", "rank", "local dB", "accum dB",
             "local maxabs", "accum maxabs", "tensor (node)");
  for (size_t i = 0; i < r.tensors.size() && i < o.top; ++i) {
    const auto& t = r.tensors[i];
    fmt::print("  {:>4}  {:>10}  {:>10}  {:>12.4g}  {:>12.4g}  {} ({})\n", i + 1, Sqnr(t.local),
               Sqnr(t.accumulated), t.local.max_abs, t.accumulated.max_abs, t.tensor,
               ir::QuotedNodeLabel(t.node, t.op));
    if (!t.local.comparable) fmt::print("        local: {}\n", t.local.note);
  }
  if (!r.not_comparable.empty()) {
    fmt::print("not comparable ({} nodes):\n", r.not_comparable.size());
    for (size_t i = 0; i < r.not_comparable.size() && i < o.top; ++i) {
      const auto& n = r.not_comparable[i];
      fmt::print("  {} of {}: {}\n", ir::QuotedNodeLabel(n.node, n.op),
                 n.model == "a" ? "MODEL_A" : "MODEL_B", n.reason);
    }
    if (r.not_comparable.size() > o.top) {
      fmt::print("  ... and {} more (--top, --json)\n", r.not_comparable.size() - o.top);
    }
  }
  fmt::print("{}\n", r.within_tolerance ? "within tolerance" : "OVER TOLERANCE");
}

// --isolate: its own pass over the samples (lib/runtime/isolate.h); exit status as compare's.
int RunIsolate(const CompareCliOptions& o, stages::CompareStageOptions& stage) {
  if (o.model_b.empty())
    ThrowUsage("--isolate compares MODEL_B's layers with MODEL_A's: give both");
  if (o.per_tensor || !o.save_outputs.empty() || !o.load_outputs.empty() || !o.tasks.empty()) {
    ThrowUsage(
        "--isolate reports every shared tensor already: drop --per-tensor, --save-outputs, "
        "--load-outputs and --task");
  }
  if (!o.data.empty() && !o.inputs.empty()) {
    ThrowUsage("--isolate takes --data DIR or --input NAME=FILE, not both");
  }
  io::Model a = LoadModel(o.model_a);
  io::Model b = LoadModel(o.model_b);
  runtime::IsolateResult result;
  try {
    result = stages::IsolateStage(a, b, stage, o.data);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUsage) throw;
    throw Error(ErrorKind::kUsage, fmt::format("--isolate: {}", e.what()));
  }
  if (o.json) {
    PrintJson(stages::IsolateJson(result, stage.compare));
  } else {
    PrintIsolate(result, o, stage.compare);
  }
  return result.within_tolerance ? kExitOk : kExitCheckFailed;
}

int RunCompare(const CompareCliOptions& o) {
  runtime::ApplyProcessSettings({o.threads});
  ApplyOrtCompatibleFlag(o.ort_compatible);
  runtime::CompareOptions options;
  ParseTolerances(o.rtol, "--rtol", options, &runtime::Tolerance::rtol);
  ParseTolerances(o.atol, "--atol", options, &runtime::Tolerance::atol);
  options.per_tensor = o.per_tensor;
  options.scratch_dir = std::filesystem::temp_directory_path();
  auto custom = LoadCustomOps(o.custom_ops, nullptr, /*with_kernels=*/true);
  options.session.registry = custom->FillKernels();
  options.kernels_b = custom->Kernels();
  const PrecisionFlags precision = ParsePrecisionFlags(o.precision, PrecisionUse::kExecute);
  if (precision.fp16) ApplyPrecisionFlags(precision, options.session_b.emplace(options.session));
  // fp16 with one model: the model against itself in float32 (its float16 error budget).
  const bool self = precision.fp16 && o.model_b.empty() && o.load_outputs.empty();
  if (o.model_b.empty() && o.save_outputs.empty() && o.load_outputs.empty() && !self) {
    ThrowUsage(
        "give MODEL_B, or --save-outputs DIR (record MODEL_A), or --load-outputs DIR, or "
        "--precision fp16 (MODEL_A in float16 against itself in float32)");
  }
  if (!o.load_outputs.empty() &&
      (!o.model_b.empty() || !o.save_outputs.empty() || !o.inputs.empty())) {
    ThrowUsage(
        "--load-outputs compares ONE model against saved tensors (inputs included): drop "
        "MODEL_B, --save-outputs and --input");
  }
  stages::CompareStageOptions stage;
  stage.compare = options;
  stage.inputs = ReadInputFlags(o.inputs);
  stage.seed = o.seed;
  stage.input_ranges = ParseInputRangeFlags(o.input_ranges);
  stage.input_shapes = ParseShapeFlags(o.input_shapes);
  stage.save_outputs = o.save_outputs;
  stage.load_outputs = o.load_outputs;
  if (o.isolate && precision.fp16) {
    ThrowUsage(
        "--isolate runs MODEL_B's layers in float32: for float16's per-layer error, isolate MODEL "
        "against its float16 rewrite (porttool rewrite MODEL --rule convert-fp16), without "
        "--precision fp16");
  }
  if (o.isolate) return RunIsolate(o, stage);
  if (!o.data.empty()) ThrowUsage("--data DIR gives the samples of --isolate: add --isolate");
  io::Model a = LoadModel(o.model_a);
  std::optional<io::Model> b;
  if (!o.model_b.empty()) b = LoadModel(o.model_b);
  if (self) b = a;
  const quant::TaskAssignment tasks = quant::ParseTasks(o.tasks);
  if (!tasks.empty() && !b) ThrowUsage("--task judges MODEL_B against MODEL_A: give both models");
  runtime::ModelComparison result = stages::CompareStage(a, b ? &*b : nullptr, stage);
  if (precision.fp16) WarnFloat16(result);
  std::vector<quant::TaskResult> task_results;
  if (!tasks.empty()) task_results = stages::CompareTasks(a, *b, stage, tasks);
  if (!b && o.load_outputs.empty()) {
    if (o.json) PrintJson({{"saved", o.save_outputs}});
    if (!o.json) fmt::print("saved {}'s tensors to {}/\n", o.model_a, o.save_outputs);
    return kExitOk;
  }
  if (o.json) {
    nlohmann::json doc = stages::CompareJson(result, options, o.per_tensor);
    if (precision.fp16) {
      doc["float16"] = {{"reference", "fp32"},
                        {"candidate", "fp16"},
                        {"overflows", Float16OverflowsJson(result.float16_overflows)},
                        {"float64_kept", result.float16_kept_float64}};
    }
    if (!tasks.empty()) {
      doc["tasks"] = nlohmann::json::array();
      for (const auto& t : task_results) doc["tasks"].push_back(quant::TaskJson(t));
    }
    PrintJson(doc);
  } else {
    if (precision.fp16) {
      fmt::print("precision: {}\n", !o.load_outputs.empty()
                                        ? "MODEL_A in fp16 against the saved tensors"
                                    : self ? "the model in fp16 against itself in fp32"
                                           : "MODEL_B in fp16 against MODEL_A in fp32");
    }
    PrintText(result, o, options);
    for (const auto& t : task_results) {
      fmt::print("task {} ({}): {}\n", t.output, t.task, t.Describe());
    }
  }
  return result.within_tolerance ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterCompare(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<CompareCliOptions>();
  auto* cmd = app.add_subcommand("compare", "Run two models on the same inputs and compare");
  cmd->footer(
      "Exit 1 when an output exceeds tolerance (|b - a| > atol + rtol * |a|, a = reference).\n"
      "--custom-op DIR: MODEL_B runs the package's kernel; the reference keeps built-in kernels\n"
      "and uses the package only for ops the executor lacks.\n"
      "Examples:\n  porttool compare model.onnx model.folded.onnx --per-tensor "
      "--input-shape x:1x3x64x64\n"
      "  porttool compare model.onnx --save-outputs ref/ --per-tensor   (then, elsewhere)\n"
      "  porttool compare model.int8.onnx --load-outputs ref/ --per-tensor --atol score:1e-2");
  cmd->add_option("model_a", opts->model_a,
                  "Reference ONNX model (with --load-outputs: the model compared to the saved "
                  "tensors)")
      ->required();
  cmd->add_option("model_b", opts->model_b, "ONNX model to compare against the reference");
  AddInputOption(*cmd, opts->inputs)
      ->description("An input value: NAME=FILE (.npy or .pb); inputs not given are random");
  AddSeedOption(*cmd, opts->seed, "the random inputs");
  AddInputRangeOption(*cmd, opts->input_ranges);
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_flag("--per-tensor", opts->per_tensor,
                "Also compare every intermediate tensor both runs produce, in execution order, "
                "and name the first that diverges (MODEL_A runs first and its tensors wait in "
                "a temporary file under $TMPDIR, so memory stays that of one run; the disk "
                "needs room for them)");
  cmd->add_option("--top", opts->top, "With --per-tensor: rows to print")->capture_default_str();
  cmd->add_option("--rtol", opts->rtol,
                  "Relative tolerance, VALUE (default 1e-3) or OUTPUT:VALUE for one output; "
                  "repeatable");
  cmd->add_option("--atol", opts->atol,
                  "Absolute tolerance, VALUE (default 1e-4) or OUTPUT:VALUE for one output; "
                  "repeatable");
  cmd->add_option("--save-outputs", opts->save_outputs,
                  "Write the reference run's inputs and outputs (and with --per-tensor every "
                  "intermediate) to this new directory: .npy files + tensors.json")
      ->type_name(kOutputDirType);
  cmd->add_option("--load-outputs", opts->load_outputs,
                  "Compare MODEL_A against tensors saved by --save-outputs (or written in the "
                  "same layout by another runtime), with the saved inputs");
  cmd->add_option("--task", opts->tasks,
                  "[OUTPUT:]TASK: also judge MODEL_B's outputs by their task against MODEL_A's "
                  "(detect-db[:...] | classify | ctc[:blank=0]; as quantize-calibrate --task); "
                  "repeatable");
  cmd->add_option(
         "--precision", opts->precision,
         std::string(kExecutePrecisionHelp) +
             ". fp16 applies to the candidate (MODEL_B, or MODEL_A against --load-outputs); "
             "the reference runs in fp32. With MODEL_A alone: MODEL_A in fp16 against "
             "itself in fp32")
      ->type_name("fp32|fp16|fp32:NODES");
  cmd->add_flag("--isolate", opts->isolate,
                "Per-layer error: for every tensor both models' nodes produce, its local error "
                "(MODEL_B's nodes that compute it, fed MODEL_A's values of the shared tensors "
                "they read) beside its accumulated error (MODEL_B's own run), worst local first; "
                "over every sample of --data (docs/cli/compare.md)");
  cmd->add_option("--data", opts->data,
                  "With --isolate: a directory of samples, <id>.<input>.npy (port's and "
                  "quantize-calibrate's layout); the statistics accumulate over all of them")
      ->type_name("DIR");
  AddThreadsOption(*cmd, opts->threads);
  AddOrtCompatibleFlag(*cmd, opts->ort_compatible);
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunCompare(*opts); }; });
}

}  // namespace porttool::cli
