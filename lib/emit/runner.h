// `emit-runner`: turns a split (DIR/pipeline.json and its segment models) into a small C99
// package that runs the segments in order — accelerator segments through porttool's C API (the
// reference backend, optionally with an NPU's int8 and NC1HWC2 bridge behaviour faked) or through
// the RKNN runtime, host segments through porttool's C API or a scaffolded custom op's C kernel —
// with every bridge in one static arena planned by the emit-header planner (a bridge lives from
// its producing segment to its last consumer). The pipeline is validated against its segment
// files before anything is written, and the package is written atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/memory_plan.h"
#include "lib/runtime/tensor.h"

namespace porttool::emit {

enum class RunnerBackend { kReference, kRknn };

// What the reference backend makes bridges go through, as an NPU would.
struct FakeNpu {
  bool int8 = false;    // affine int8 quantize/dequantize at every accelerator boundary
  int block = 0;        // NC1HWC2 channel block (8 or 16) for 4-D outputs; 0: plain NCHW
  int width_align = 0;  // row stride: width rounded up to a multiple of this (0/1: none)
};

struct QuantParam {
  float scale = 1;
  int32_t zero_point = 0;
  float min = 0, max = 0;  // the range it covers
};

struct RunnerRequest {
  std::filesystem::path pipeline_json;
  std::filesystem::path out_dir;
  RunnerBackend backend = RunnerBackend::kReference;
  std::optional<FakeNpu> fake_npu;
  bool rknn_zero_copy = false;
  // {"tensors": {NAME: {"scale": s, "zero_point": z}}}; empty: ranges observed in one run.
  std::filesystem::path table;
  std::map<std::string, runtime::Tensor> inputs;  // for that run; random (seeded) where missing
  uint64_t seed = 0;
  uint64_t alignment = 64;
  std::filesystem::path custom_op_dir;  // a scaffolded kernel (see docs/cli/emit-runner.md)
  int threads = 0;                      // kernel threads per segment session (0: all cores)
  // What the generated comments and README call the pipeline (empty: the pipeline.json path)
  // and where the runner loads segment files from unless told otherwise (empty: the pipeline's
  // absolute directory). `port` sets both relative to its bundle, so the bundle can move.
  std::string pipeline_label;
  std::string segment_dir;
  // Replace an existing `out_dir` (io::CheckOutputDir's rule: only one porttool wrote).
  bool replace = false;
  // Inputs of the run besides the pipeline, its segments, the table and the custom-op package,
  // which `out_dir` must not hold either (e.g. the input tensor files).
  std::vector<std::filesystem::path> other_inputs;
};

struct RunnerSegment {
  std::string file;
  std::string role;
  std::vector<std::string> inputs, outputs;
  std::string custom_op;  // op type run by the custom kernel, or empty
};

struct RunnerResult {
  std::vector<RunnerSegment> segments;
  analysis::MemoryPlan arena;
  std::map<std::string, QuantParam> quant;  // int8 bridges
  std::string quant_source;                 // "table FILE" or "observed ..."
  std::vector<std::string> notes;
  std::vector<std::filesystem::path> files;
};

// Throws Error(kBadInput) naming the file (and JSON path) for a malformed pipeline.json, a
// missing or unreadable segment file, a segment whose inputs/outputs disagree with pipeline.json,
// a dynamic bridge shape, or a table lacking a bridge; Error(kUsage) for bad options and an
// output directory io::CheckOutputDir refuses (one holding the split, one porttool did not write,
// an earlier package without `replace`).
RunnerResult EmitRunner(const RunnerRequest& request);

// Affine int8 parameters covering [min, max] (widened to include 0, as NPUs require).
QuantParam QuantFromRange(float min, float max);

}  // namespace porttool::emit
