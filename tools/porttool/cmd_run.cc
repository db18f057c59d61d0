// `porttool run`: runs a model with the reference executor on given or random inputs, prints each
// output's shape, dtype and value statistics, optionally writes the outputs, times repeated runs
// and profiles per node and per op type.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "lib/ir/dtype.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/tensor_io.h"
#include "lib/stages/run.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs, input_ranges;
  bool random_inputs = false;
  uint64_t seed = kDefaultSeed;
  std::vector<std::string> input_shapes;
  std::string output_dir;
  bool pb = false;
  int threads = 0;
  bool ort_compatible = false;
  int repeat = 0;
  bool fail_on_nan = false;
  bool no_fusion = false;
  bool profile = false;
  std::vector<std::string> precision;
  bool fail_on_overflow = false;
  size_t top = 10;
  bool json = false;
  std::vector<std::string> custom_ops;
};

nlohmann::json ProfileJson(const stages::RunStageResult& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : r.profile) {
    nodes.push_back({{"node", n.name}, {"op_type", n.op_type}, {"ms", n.ms}});
  }
  nlohmann::json ops = r.op_type_ms;
  return {{"runs", r.profile_runs},
          {"fused_nodes", r.fused_nodes},
          {"nodes", nodes},
          {"op_types", ops}};
}

// Text profile: every row a share of one total, the sum of the nodes' medians, so node rows and
// op-type rows (each op type the sum of its nodes' medians) add up to at most 100 %. The JSON
// keeps op_types as the median of each op type's per-run sum.
void PrintProfile(const stages::RunStageResult& r, size_t top) {
  std::vector<stages::NodeTime> rows = r.profile;
  std::map<std::string, std::pair<double, int>> ops;
  double total = 0;
  for (const auto& n : rows) {
    total += n.ms;
    ops[n.op_type].first += n.ms;
    ops[n.op_type].second++;
  }
  auto share = [total](double ms) { return total > 0 ? 100 * ms / total : 0.0; };
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  fmt::print(
      "profile: {} per run in {} nodes (sum of the nodes' medians over {} run(s)); top {} "
      "nodes:\n",
      util::FormatMs(total), rows.size(), r.profile_runs, std::min(top, rows.size()));
  if (r.fused_nodes > 0) {
    fmt::print(
        "  ({} nodes run inside the conv, linear layer or mean next to them and show 0 ms; "
        "--no-fusion times each)\n",
        r.fused_nodes);
  }
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    fmt::print("  {:>11} {:>5.1f}%  {:<20} {}\n", util::FormatMs(rows[i].ms), share(rows[i].ms),
               rows[i].op_type, rows[i].name);
  }
  if (rows.size() > top) fmt::print("  ... and {} more node(s)\n", rows.size() - top);
  std::vector<std::pair<std::string, std::pair<double, int>>> by_op(ops.begin(), ops.end());
  std::sort(by_op.begin(), by_op.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  fmt::print("by op type:\n");
  for (size_t i = 0; i < by_op.size() && i < top; ++i) {
    const auto& [op, v] = by_op[i];
    fmt::print("  {:>11} {:>5.1f}%  {:<20} x{}\n", util::FormatMs(v.first), share(v.first), op,
               v.second);
  }
  if (by_op.size() > top) fmt::print("  ... and {} more op type(s)\n", by_op.size() - top);
}

// All files or none: a folder that cannot take them is bad input, not a half-written result.
std::vector<std::string> WriteOutputs(const std::vector<runtime::NamedTensor>& outputs,
                                      const RunOptions& o) {
  if (o.output_dir.empty()) return {};
  std::vector<std::string> names, files;
  std::vector<const runtime::Tensor*> values;
  for (const auto& out : outputs) {
    names.push_back(out.name);
    values.push_back(&out.value);
  }
  for (const auto& path : runtime::WriteTensorFiles(o.output_dir, names, values, o.pb)) {
    files.push_back(path.string());
  }
  return files;
}

nlohmann::json OutputJson(const runtime::NamedTensor& out, const std::string& file) {
  const auto& t = out.value;
  runtime::ValueStats s = runtime::SummarizeValues(t);
  return {{"name", out.name},
          {"file", file.empty() ? nlohmann::json() : nlohmann::json(file)},
          {"dtype", ir::DtypeName(t.dtype())},
          {"shape", t.shape()},
          {"min", s.min},
          {"max", s.max},
          {"mean", s.mean},
          {"nan_count", s.nan_count},
          {"inf_count", s.inf_count}};
}

void PrintOutput(const runtime::NamedTensor& out, const std::string& file) {
  runtime::ValueStats s = runtime::SummarizeValues(out.value);
  fmt::print("{}  {}  min {:.6g}  max {:.6g}  mean {:.6g}  nan {}{}{}\n", out.name,
             out.value.DebugString(), s.min, s.max, s.mean, s.nan_count,
             s.inf_count ? fmt::format("  inf {}", s.inf_count) : "",
             file.empty() ? "" : "  -> " + file);
}

int RunRun(const RunOptions& o) {
  runtime::ApplyProcessSettings({o.threads});
  ApplyOrtCompatibleFlag(o.ort_compatible);
  stages::RunStageOptions options;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  options.inputs = ReadInputFlags(o.inputs);
  options.random_inputs = o.random_inputs;
  options.seed = o.seed;
  options.input_ranges = ParseInputRangeFlags(o.input_ranges);
  if (!o.input_ranges.empty() && !o.random_inputs) {
    ThrowUsage("--input-range shapes the values of --random-inputs: give both");
  }
  options.repeat = o.repeat;
  options.profile = o.profile;
  options.fail_on_nan = o.fail_on_nan;
  options.no_fusion = o.no_fusion;
  runtime::SessionOptions precision;
  ApplyPrecisionFlags(ParsePrecisionFlags(o.precision, PrecisionUse::kExecute), precision);
  options.float16 = precision.float16;
  options.float32_nodes = precision.float32_nodes;
  if (o.fail_on_overflow && !options.float16) {
    ThrowUsage("--fail-on-overflow checks float16 overflows: give --precision fp16 too");
  }
  io::Model model = LoadModel(o.model);
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/true);
  options.kernels = custom->Kernels();
  stages::RunStageResult r = stages::RunStage(model, options);
  for (const auto& w : r.warnings) spdlog::warn("{}", w);
  constexpr size_t kShownOverflows = 10;
  for (size_t i = 0; i < r.float16_overflows.size() && i < kShownOverflows; ++i) {
    spdlog::warn("{}", Float16OverflowMessage(r.float16_overflows[i]));
  }
  if (r.float16_overflows.size() > kShownOverflows) {
    spdlog::warn("and {} more float16 overflows (--json lists all)",
                 r.float16_overflows.size() - kShownOverflows);
  }
  if (!r.float16_kept_float64.empty()) {
    spdlog::warn("{}", Float64KeptMessage(r.float16_kept_float64));
  }
  const int status =
      o.fail_on_overflow && !r.float16_overflows.empty() ? kExitCheckFailed : kExitOk;
  std::vector<std::string> files = WriteOutputs(r.outputs, o);
  files.resize(r.outputs.size());
  stages::Latency lat = r.latency();
  if (o.json) {
    nlohmann::json doc = {{"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < r.outputs.size(); ++i)
      doc["outputs"].push_back(OutputJson(r.outputs[i], files[i]));
    doc["latency_ms"] = {{"median", lat.median}, {"min", lat.min}, {"max", lat.max}};
    doc["fused_nodes"] = r.fused_nodes;
    if (o.profile) doc["profile"] = ProfileJson(r);
    doc["precision"] = options.float16 ? "fp16" : "fp32";
    if (options.float16) {
      doc["float16"] = {{"overflows", Float16OverflowsJson(r.float16_overflows)},
                        {"float64_kept", r.float16_kept_float64}};
    }
    PrintJson(doc);
    return status;
  }
  for (size_t i = 0; i < r.outputs.size(); ++i) PrintOutput(r.outputs[i], files[i]);
  fmt::print("latency: median {}, min {}, max {} over {} run(s){}\n", util::FormatMs(lat.median),
             util::FormatMs(lat.min), util::FormatMs(lat.max), r.times_ms.size(),
             o.repeat > 0 ? " after 1 warm-up" : "");
  if (options.float16) {
    fmt::print("precision: fp16, {}\n",
               r.float16_overflows.empty()
                   ? std::string("no tensor overflows")
                   : fmt::format("{} tensor(s) overflow 65504 (named on stderr and in --json)",
                                 r.float16_overflows.size()));
  }
  if (o.profile) PrintProfile(r, o.top);
  return status;
}

}  // namespace

void RegisterRun(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model with the reference executor");
  cmd->footer(
      "Examples:\n"
      "  porttool run testdata/demo_detector.onnx --random-inputs --input-shape images:1x3x64x64\n"
      "  porttool run model.onnx --input x=x.npy --output-dir out/ --repeat 10 --profile");
  AddModelArg(*cmd, opts->model);
  AddInputOption(*cmd, opts->inputs);
  cmd->add_flag("--random-inputs", opts->random_inputs,
                "Fill inputs not given with --input with random values (floats in [0,1))");
  AddSeedOption(*cmd, opts->seed, "--random-inputs");
  AddInputRangeOption(*cmd, opts->input_ranges);
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("--output-dir", opts->output_dir,
                  "Write each output to DIR/<output name>.npy (unsafe characters become '_')")
      ->type_name(kOutputDirType);
  cmd->add_flag("--pb", opts->pb, "With --output-dir: write ONNX TensorProto .pb files instead");
  AddThreadsOption(*cmd, opts->threads);
  AddOrtCompatibleFlag(*cmd, opts->ort_compatible);
  cmd->add_option("--repeat", opts->repeat, "Time N runs after one warm-up run")
      ->check(InRange(1, 1000000));
  cmd->add_flag("--profile", opts->profile,
                "Time every node (mean over the timed runs): the slowest nodes and op types");
  cmd->add_option("--top", opts->top, "With --profile: rows to print")->capture_default_str();
  cmd->add_flag("--no-fusion", opts->no_fusion,
                "Run every node as the model has it, without folding BatchNormalization, "
                "per-channel Mul/Add, a residual Add and the activation into the Conv, "
                "ConvTranspose or linear layer before it, or a LayerNormalization written as nodes "
                "into its ReduceMean "
                "(to compare fused and unfused runs, or to profile each node)");
  cmd->add_option("--precision", opts->precision, kExecutePrecisionHelp)
      ->type_name("fp32|fp16|fp32:NODES");
  cmd->add_flag("--fail-on-overflow", opts->fail_on_overflow,
                "With --precision fp16: exit 1 when a tensor overflows float16 (the run's outputs "
                "are still printed)");
  cmd->add_flag("--fail-on-nan", opts->fail_on_nan,
                "Fail (exit 3) when an input holds NaN or Inf instead of warning");
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunRun(*opts); }; });
}

}  // namespace porttool::cli
