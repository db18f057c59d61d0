// `porttool run`: runs a model with the reference executor on given or random inputs, optionally
// writes the outputs and times repeated runs.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "lib/ir/dtype.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/error.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  bool random_inputs = false;
  uint64_t seed = 0;
  std::vector<std::string> input_shapes;
  std::string output_dir;
  bool pb = false;
  int threads = 0;
  int repeat = 0;
  bool fail_on_nan = false;
  bool json = false;
  std::vector<std::string> custom_ops;
};

struct Latency {
  double median = 0, min = 0, max = 0;
};

Latency Summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), ms.back()};
}

int RunRun(const RunOptions& o) {
  io::Model model = io::Load(o.model);
  if (!o.input_shapes.empty())
    shape::ApplyInputShapes(model, shape::ParseInputShapes(o.input_shapes));
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/true);
  runtime::Session session(model, {o.threads, o.fail_on_nan, custom->Kernels()});
  runtime::TensorMap inputs = runtime::ReadInputSpecs(o.inputs);
  if (o.random_inputs) inputs = runtime::CompleteWithRandom(session, std::move(inputs), o.seed);

  std::vector<double> times_ms;
  std::vector<runtime::NamedTensor> outputs;
  int timed_runs = std::max(o.repeat, 1);
  if (o.repeat > 0) outputs = session.Run(inputs);  // warm-up
  for (int i = 0; i < timed_runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    outputs = session.Run(inputs);
    std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    times_ms.push_back(elapsed.count());
  }
  for (const auto& w : session.warnings()) spdlog::warn("{}", w);

  std::vector<std::string> names, files;
  for (const auto& out : outputs) names.push_back(out.name);
  if (!o.output_dir.empty()) {
    std::filesystem::create_directories(o.output_dir);
    files = runtime::TensorFileNames(names, o.pb ? ".pb" : ".npy");
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto path = std::filesystem::path(o.output_dir) / files[i];
      files[i] = path.string();
      if (o.pb) {
        runtime::WritePb(path, outputs[i].value, outputs[i].name);
      } else {
        runtime::WriteNpy(path, outputs[i].value);
      }
    }
  }
  Latency lat = Summarize(times_ms);
  if (o.json) {
    nlohmann::json doc = {{"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto& t = outputs[i].value;
      doc["outputs"].push_back(
          {{"name", outputs[i].name},
           {"file", files.empty() ? nlohmann::json() : nlohmann::json(files[i])},
           {"dtype", ir::DtypeName(t.dtype())},
           {"shape", t.shape()}});
    }
    doc["latency_ms"] = {{"median", lat.median}, {"min", lat.min}, {"max", lat.max}};
    PrintJson(doc);
    return kExitOk;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    fmt::print("{}  {}{}\n", outputs[i].name, outputs[i].value.DebugString(),
               files.empty() ? "" : "  -> " + files[i]);
  }
  fmt::print("latency: median {:.2f} ms, min {:.2f} ms, max {:.2f} ms over {} run(s){}\n",
             lat.median, lat.min, lat.max, timed_runs, o.repeat > 0 ? " after 1 warm-up" : "");
  return kExitOk;
}

}  // namespace

void RegisterRun(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model with the reference executor");
  cmd->footer(
      "Examples:\n"
      "  porttool run testdata/demo_detector.onnx --random-inputs --input-shape images:1x3x64x64\n"
      "  porttool run model.onnx --input x=x.npy --output-dir out/ --repeat 10 --json");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--input", opts->inputs,
                  "An input value: NAME=FILE (.npy or ONNX TensorProto .pb); repeat per input");
  cmd->add_flag("--random-inputs", opts->random_inputs,
                "Fill inputs not given with --input with random values (floats in [0,1))");
  cmd->add_option("--seed", opts->seed, "Seed for --random-inputs")->capture_default_str();
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("--output-dir", opts->output_dir,
                  "Write each output to DIR/<output name>.npy (unsafe characters become '_')");
  cmd->add_flag("--pb", opts->pb, "With --output-dir: write ONNX TensorProto .pb files instead");
  cmd->add_option("--threads", opts->threads, "Threads for kernels (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", opts->repeat, "Time N runs after one warm-up run")
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag("--fail-on-nan", opts->fail_on_nan,
                "Fail (exit 3) when an input holds NaN or Inf instead of warning");
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunRun(*opts); }; });
}

}  // namespace porttool::cli
