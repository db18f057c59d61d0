// `porttool emit-runner`: a C99 package that runs a split pipeline (segments in order, bridges in
// one static arena), with porttool's executor as the reference backend or the RKNN runtime.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/decide/target.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/tensor_io.h"
#include "lib/stages/emit_runner.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct EmitRunnerOptions {
  std::string pipeline;
  std::string output;
  std::string backend = "reference";
  std::string fake_npu;
  std::string table;
  std::vector<std::string> inputs;
  uint64_t seed = kDefaultSeed;
  uint64_t align = 0;
  std::string target;
  std::string custom_op;
  bool zero_copy = false;
  int threads = 0;
  bool json = false;
  bool force = false;
};

// "int8,nc1hwc2=16,stride=8": the flag's own small grammar.
emit::FakeNpu ParseFakeNpu(const std::string& spec) {
  emit::FakeNpu npu;
  for (const auto& item : util::Split(spec, ',')) {
    auto eq = item.find('=');
    std::string key = item.substr(0, eq),
                value = eq == std::string::npos ? "" : item.substr(eq + 1);
    try {
      if (key == "int8" && value.empty()) {
        npu.int8 = true;
      } else if (key == "nc1hwc2" && !value.empty()) {
        npu.block = std::stoi(value);
      } else if (key == "stride" && !value.empty()) {
        npu.width_align = std::stoi(value);
      } else {
        ThrowUsage("--fake-npu: unknown item '{}'; use int8[,nc1hwc2=8|16][,stride=N]", item);
      }
    } catch (const std::logic_error&) {
      ThrowUsage("--fake-npu: '{}' needs a number", item);
    }
  }
  if (npu.width_align < 0) ThrowUsage("--fake-npu: stride must be positive");
  return npu;
}

int RunEmitRunner(const EmitRunnerOptions& o) {
  emit::RunnerRequest request;
  request.pipeline_json = o.pipeline;
  request.out_dir = o.output;
  request.backend =
      o.backend == "rknn" ? emit::RunnerBackend::kRknn : emit::RunnerBackend::kReference;
  if (!o.fake_npu.empty()) request.fake_npu = ParseFakeNpu(o.fake_npu);
  request.rknn_zero_copy = o.zero_copy;
  request.table = o.table;
  request.inputs = ReadInputFlags(o.inputs);
  request.seed = o.seed;
  request.alignment = o.align ? o.align : 64;
  if (!o.target.empty() && !o.align)
    request.alignment = LoadTargetFlag("", o.target).alignment_bytes;
  request.custom_op_dir = o.custom_op;
  request.threads = o.threads;
  request.replace = o.force;
  request.other_inputs = InputPaths({TargetFile(o.target)});
  for (const auto& spec : o.inputs) {
    request.other_inputs.emplace_back(spec.substr(spec.find('=') + 1));
  }
  runtime::ApplyProcessSettings({o.threads});
  emit::RunnerResult r = stages::EmitRunnerStage(request);
  for (const auto& note : r.notes) spdlog::warn("{}", WithFlagHint(note));
  if (o.json) {
    PrintJson(stages::RunnerJson(r));
    return kExitOk;
  }
  for (size_t s = 0; s < r.segments.size(); ++s) {
    const auto& seg = r.segments[s];
    std::cout << fmt::format("segment {} {:<24} {:<12} {}\n", s, seg.file, seg.role,
                             seg.custom_op.empty() ? "" : "custom op kernel: " + seg.custom_op);
  }
  std::cout << fmt::format(
      "arena: {} bytes ({}) for {} buffers, alignment {}; naive sum {} bytes\n",
      r.arena.arena_bytes, util::FormatBytes(r.arena.arena_bytes), r.arena.tensors.size(),
      r.arena.alignment, r.arena.naive_bytes);
  for (const auto& [name, q] : r.quant) {
    std::cout << fmt::format("int8 bridge {:<24} scale {:.6g} zero point {}\n", name, q.scale,
                             q.zero_point);
  }
  std::cout << fmt::format(
      "wrote {} files to {}; build: cmake -S {} -B {}/build && cmake --build {}/build\n",
      r.files.size(), o.output, o.output, o.output, o.output);
  return kExitOk;
}

}  // namespace

void RegisterEmitRunner(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<EmitRunnerOptions>();
  auto* cmd = app.add_subcommand(
      "emit-runner", "Generate a C runner for a split pipeline (segments, bridges, conversions)");
  cmd->footer(
      "Example:\n  porttool split testdata/demo_detector.onnx --at Custom_GELU_0 --input-shape "
      "images:1x3x64x64 -o demo.split\n  porttool emit-runner demo.split/pipeline.json "
      "--fake-npu int8,nc1hwc2=16 -o demo.runner");
  cmd->add_option("pipeline", opts->pipeline, "pipeline.json written by split")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", opts->output, "Package directory to write")
      ->required()
      ->type_name(kOutputDirType);
  AddForceFlag(*cmd, opts->force);
  cmd->add_option("--backend", opts->backend,
                  "Accelerator segments: reference (porttool's "
                  "executor through its C API) or rknn (librknnrt)")
      ->check(CLI::IsMember({"reference", "rknn"}))
      ->capture_default_str();
  cmd->add_option("--fake-npu", opts->fake_npu,
                  "Reference backend: make bridges behave as an NPU's: int8[,nc1hwc2=8|16]"
                  "[,stride=N] (int8 affine quantization, native layout, row stride padding)");
  cmd->add_option("--table", opts->table,
                  "Calibration table {\"tensors\": {NAME: {\"scale\": s, \"zero_point\": z}}} for "
                  "int8 bridges (default: ranges observed in one run)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--input", opts->inputs,
                  "NAME=FILE.npy for the run that observes bridge ranges (default: random)");
  AddSeedOption(*cmd, opts->seed, "random inputs");
  cmd->add_option("--align", opts->align, "Arena alignment in bytes (default 64, or --target's)");
  AddTargetOption(*cmd, opts->target, "Take the arena alignment from this target profile");
  cmd->add_option("--custom-op", opts->custom_op,
                  "Directory of a scaffolded custom op (porttool_kernel.json + C files): a host "
                  "segment that is that single op calls its C kernel")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--zero-copy", opts->zero_copy,
                "rknn: read outputs from device memory in the native NC1HWC2 layout");
  cmd->add_option("--threads", opts->threads, "Kernel threads per segment (0: all cores)");
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunEmitRunner(*opts); }; });
}

}  // namespace porttool::cli
