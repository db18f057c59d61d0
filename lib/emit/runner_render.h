// The text of a generated runner package: the tensor and segment tables, pipeline.h's #defines,
// the package's CMakeLists.txt and README, plus the static C files (RunnerSources() of
// embedded_files.h). Separate from runner.cc so that the decisions (what is int8, which buffers
// exist) are made once in LayoutRunner and rendering only prints them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lib/emit/runner.h"
#include "lib/emit/runner_pipeline.h"

namespace porttool::emit {

// A per-segment buffer of the fake NPU: an int8 device copy of an accelerator output
// ("NAME#device") or the fake-quantized float copy of a bridge an accelerator reads
// ("NAME#in<segment>"). Planned in the arena with the bridges.
struct ScratchBuffer {
  std::string name;
  std::string tensor;
  uint64_t bytes = 0;
  int segment = 0;
};

// A scaffolded custom op: DIR/porttool_kernel.json names the op type, the C function and its
// header; every DIR/*.c is compiled into the package.
struct CustomOpKernel {
  std::filesystem::path dir;
  std::string op_type, function, header;
  std::vector<std::filesystem::path> files;
};

struct RunnerLayout {
  std::vector<ScratchBuffer> scratch;
  std::vector<RunnerSegment> segments;
  std::optional<CustomOpKernel> custom_op;
};

struct RenderedFile {
  std::string name;  // relative to the package directory
  std::string text;
};

RunnerLayout LayoutRunner(const Pipeline& p, const RunnerRequest& request,
                          const std::map<std::string, QuantParam>& quant);

std::vector<RenderedFile> RenderRunner(const Pipeline& p, const RunnerRequest& request,
                                       const RunnerLayout& layout, const RunnerResult& result);

}  // namespace porttool::emit
