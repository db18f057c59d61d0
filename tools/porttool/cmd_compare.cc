// `porttool compare`: runs two models on the same inputs and reports how far apart their outputs
// (and, with --per-tensor, their shared intermediates) are.
#include <fmt/format.h>

#include <cmath>

#include "lib/runtime/compare.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/input_shapes.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct CompareCliOptions {
  std::string model_a, model_b;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::vector<std::string> input_shapes;
  bool per_tensor = false;
  double rtol = 1e-3, atol = 1e-4;
  int threads = 0;
  size_t top = 20;
  bool json = false;
  std::vector<std::string> custom_ops;
};

nlohmann::json StatsJson(const runtime::TensorComparison& c) {
  const auto& s = c.stats;
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  nlohmann::json j = {{"name", c.name},
                      {"max_abs", num(s.max_abs)},
                      {"max_rel", num(s.max_rel)},
                      {"cosine", num(s.cosine)},
                      {"sqnr_db", num(s.sqnr_db)},
                      {"within_tolerance", s.within_tolerance}};
  if (!s.comparable) j["note"] = s.note;
  return j;
}

void PrintRow(const runtime::TensorComparison& c) {
  const auto& s = c.stats;
  if (!s.comparable) {
    fmt::print("  {}  NOT COMPARABLE: {}\n", c.name, s.note);
    return;
  }
  fmt::print("  {}  max_abs {:.3g}  max_rel {:.3g}  cosine {:.6f}  sqnr {} {}\n", c.name, s.max_abs,
             s.max_rel, s.cosine,
             std::isinf(s.sqnr_db) ? "inf" : fmt::format("{:.1f} dB", s.sqnr_db),
             s.within_tolerance ? "ok" : "OVER TOLERANCE");
}

io::Model LoadWithShapes(const std::string& path, const std::vector<std::string>& specs) {
  io::Model m = io::Load(path);
  if (!specs.empty()) shape::ApplyInputShapes(m, shape::ParseInputShapes(specs));
  return m;
}

int RunCompare(const CompareCliOptions& o) {
  io::Model a = LoadWithShapes(o.model_a, o.input_shapes);
  io::Model b = LoadWithShapes(o.model_b, o.input_shapes);
  auto custom = LoadCustomOps(o.custom_ops, &b, /*with_kernels=*/true);
  runtime::CompareOptions options;
  options.session.kernels = custom->FillKernels();
  options.kernels_b = custom->Kernels();
  options.rtol = o.rtol;
  options.atol = o.atol;
  options.per_tensor = o.per_tensor;
  options.session.threads = o.threads;
  runtime::TensorMap inputs;
  {
    runtime::Session specs(a, options.session);
    inputs = runtime::CompleteWithRandom(specs, runtime::ReadInputSpecs(o.inputs), o.seed);
  }
  runtime::ModelComparison result = runtime::CompareModels(a, b, inputs, options);
  if (o.json) {
    nlohmann::json doc = {{"rtol", o.rtol},
                          {"atol", o.atol},
                          {"within_tolerance", result.within_tolerance},
                          {"outputs", nlohmann::json::array()},
                          {"unmatched_outputs", result.unmatched_outputs}};
    for (const auto& c : result.outputs) doc["outputs"].push_back(StatsJson(c));
    if (o.per_tensor) {
      doc["per_tensor"] = nlohmann::json::array();
      for (const auto& c : result.intermediates) doc["per_tensor"].push_back(StatsJson(c));
    }
    PrintJson(doc);
  } else {
    fmt::print("outputs (rtol {}, atol {}):\n", o.rtol, o.atol);
    for (const auto& c : result.outputs) PrintRow(c);
    for (const auto& name : result.unmatched_outputs) {
      fmt::print("  {}  MISSING from {}\n", name, o.model_b);
    }
    if (o.per_tensor) {
      fmt::print("per-tensor, worst first ({} shared tensors):\n", result.intermediates.size());
      for (size_t i = 0; i < result.intermediates.size() && i < o.top; ++i) {
        PrintRow(result.intermediates[i]);
      }
    }
    fmt::print("{}\n", result.within_tolerance ? "within tolerance" : "OVER TOLERANCE");
  }
  return result.within_tolerance ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterCompare(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<CompareCliOptions>();
  auto* cmd = app.add_subcommand("compare", "Run two models on the same inputs and compare");
  cmd->footer(
      "Exit 1 when an output exceeds tolerance (|b - a| > atol + rtol * |a|, a = MODEL_A).\n"
      "--custom-op DIR: MODEL_B runs the package's kernel; MODEL_A keeps built-in kernels and\n"
      "uses the package only for ops the executor lacks.\n"
      "Example:\n  porttool compare model.onnx model.folded.onnx --per-tensor "
      "--input-shape x:1x3x64x64");
  cmd->add_option("model_a", opts->model_a, "Reference ONNX model")->required();
  cmd->add_option("model_b", opts->model_b, "ONNX model to compare against it")->required();
  cmd->add_option("--input,--inputs", opts->inputs,
                  "An input value: NAME=FILE (.npy or .pb); inputs not given are random");
  cmd->add_option("--seed", opts->seed, "Seed for random inputs")->capture_default_str();
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_flag("--per-tensor", opts->per_tensor,
                "Also compare every intermediate tensor both models produce, worst first");
  cmd->add_option("--top", opts->top, "With --per-tensor: rows to print")->capture_default_str();
  cmd->add_option("--rtol", opts->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", opts->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 1024));
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunCompare(*opts); }; });
}

}  // namespace porttool::cli
