#include "lib/emit/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "lib/analysis/liveness.h"
#include "lib/emit/emit_header.h"
#include "lib/emit/runner_pipeline.h"
#include "lib/emit/runner_render.h"
#include "lib/io/atomic_file.h"
#include "lib/io/input_file.h"
#include "lib/io/model.h"
#include "lib/io/output_dir.h"
#include "lib/io/staging_dir.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::emit {
namespace {

// Tensors that cross an accelerator boundary as int8: accelerator outputs and bridges read by an
// accelerator (graph inputs stay float: the NPU quantizes those itself).
std::set<std::string> Int8Tensors(const Pipeline& p) {
  std::set<std::string> bridged, out;
  for (const auto& b : p.bridges) bridged.insert(b.tensor);
  for (const auto& seg : p.segments) {
    if (!seg.accelerator) continue;
    for (const auto& t : seg.outputs) {
      if (t.dtype == onnx::TensorProto::FLOAT) out.insert(t.name);
    }
    for (const auto& t : seg.inputs) {
      if (t.dtype == onnx::TensorProto::FLOAT && bridged.count(t.name)) out.insert(t.name);
    }
  }
  return out;
}

std::map<std::string, QuantParam> ReadTable(const std::filesystem::path& path,
                                            const std::set<std::string>& wanted) {
  std::istringstream in(io::ReadInputFile(path, "calibration table"));
  auto doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("tensors") ||
      !doc["tensors"].is_object()) {
    ThrowBadInput("{}: expected {{\"tensors\": {{NAME: {{\"scale\": s, \"zero_point\": z}}}}}}",
                  path.string());
  }
  std::map<std::string, QuantParam> out;
  for (const auto& name : wanted) {
    std::string ptr = "/tensors/" + name;
    if (!doc["tensors"].contains(name)) {
      ThrowBadInput("{}: {}: missing; the bridge '{}' crosses the accelerator boundary as int8",
                    path.string(), ptr, name);
    }
    const auto& e = doc["tensors"][name];
    if (!e.is_object() || !e.contains("scale") || !e["scale"].is_number() ||
        !(e["scale"].get<double>() > 0) ||
        !e.value("zero_point", nlohmann::json(0)).is_number_integer()) {
      ThrowBadInput("{}: {}: needs a positive \"scale\" and an integer \"zero_point\"",
                    path.string(), ptr);
    }
    QuantParam q;
    q.scale = e["scale"].get<float>();
    q.zero_point = e.value("zero_point", 0);
    if (q.zero_point < -128 || q.zero_point > 127) {
      ThrowBadInput("{}: {}/zero_point: {} is outside int8", path.string(), ptr, q.zero_point);
    }
    q.min = (-128 - q.zero_point) * q.scale;
    q.max = (127 - q.zero_point) * q.scale;
    out[name] = q;
  }
  return out;
}

// Runs the segments in order with the executor and records the range of each wanted tensor.
std::map<std::string, QuantParam> ObserveRanges(const Pipeline& p, const RunnerRequest& request,
                                                const std::set<std::string>& wanted) {
  runtime::TensorMap values;
  std::mt19937_64 rng(request.seed);
  for (const auto& t : p.graph_input_list) {
    auto given = request.inputs.find(t.name);
    if (given != request.inputs.end()) {
      values[t.name] = given->second;
    } else {
      values[t.name] = runtime::RandomTensor({t.name, t.dtype, t.dims, true}, rng);
    }
  }
  for (const auto& seg : p.segments) {
    io::Model model = io::Load(p.dir / seg.file);
    runtime::Session session(model, {});  // threads: the program's ProcessSettings
    runtime::TensorMap in;
    for (const auto& t : seg.inputs) in[t.name] = values.at(t.name);
    for (auto& r : session.Run(in)) values[r.name] = std::move(r.value);
  }
  std::map<std::string, QuantParam> out;
  for (const auto& name : wanted) {
    const float* v = values.at(name).data<float>();
    auto [lo, hi] = std::minmax_element(v, v + values.at(name).size());
    out[name] = QuantFromRange(*lo, *hi);
  }
  return out;
}

// The arena: bridges from producer to last consumer (graph outputs to the end, where they are
// copied out), plus the fake NPU's per-segment buffers, planned by the emit-header planner.
analysis::MemoryPlan PlanBridges(const Pipeline& p, const RunnerLayout& layout, uint64_t align) {
  analysis::Liveness live;
  int steps = static_cast<int>(p.segments.size());
  for (int s = 0; s <= steps; ++s) live.order.push_back(s);
  for (const auto& b : p.bridges) {
    analysis::TensorLifetime t;
    const auto& pt = FindTensor(p.segments[b.producer], b.tensor);
    t.name = b.tensor;
    t.dtype = pt.dtype;
    t.dims = pt.dims;
    t.bytes = pt.bytes;
    t.first_use = b.producer;
    t.last_use = p.graph_outputs.count(b.tensor) ? steps : b.consumers.back();
    live.tensors.push_back(t);
  }
  for (const auto& extra : layout.scratch) {
    analysis::TensorLifetime t;
    t.name = extra.name;
    t.dtype = onnx::TensorProto::INT8;
    t.dims = {static_cast<int64_t>(extra.bytes)};
    t.bytes = extra.bytes;
    t.first_use = t.last_use = extra.segment;
    live.tensors.push_back(t);
  }
  auto plan = analysis::PlanArena(live, align);
  if (auto bad = analysis::ValidatePlan(plan)) ThrowInternal("bridge arena plan invalid: {}", *bad);
  return plan;
}

void CheckRequest(const RunnerRequest& r) {
  CheckAlignment(r.alignment);
  if (r.fake_npu && r.backend != RunnerBackend::kReference) {
    ThrowUsage(
        "a fake NPU applies to the reference backend only (the rknn backend has a real one)");
  }
  if (r.fake_npu && r.fake_npu->block != 0 && r.fake_npu->block != 8 && r.fake_npu->block != 16) {
    ThrowUsage("NC1HWC2 block must be 8 or 16, not {}", r.fake_npu->block);
  }
  if (r.fake_npu && r.fake_npu->block != 0 && !r.fake_npu->int8) {
    ThrowUsage("the fake NPU's NC1HWC2 layout carries int8 data: add 'int8'");
  }
  if (r.rknn_zero_copy && r.backend != RunnerBackend::kRknn) {
    ThrowUsage("zero-copy is an RKNN backend mode");
  }
}

// The output directory rule, before any work: the split, its segments and every other input stay
// out of the package directory, which is replaced only when porttool wrote it and it may be.
void CheckPackageDir(const RunnerRequest& r, const Pipeline& p) {
  io::OutputDirRequest request{r.out_dir, r.other_inputs, {}, r.replace};
  request.inputs.push_back(r.pipeline_json);
  request.inputs.push_back(p.dir);
  for (const auto& seg : p.segments) request.inputs.push_back(p.dir / seg.file);
  if (!r.table.empty()) request.inputs.push_back(r.table);
  if (!r.custom_op_dir.empty()) request.inputs.push_back(r.custom_op_dir);
  io::CheckOutputDir(request);
}

// Writes the package beside its destination and renames it into place, so that an error leaves
// no half-written package.
void WritePackage(const std::filesystem::path& out, const std::vector<RenderedFile>& files) {
  namespace fs = std::filesystem;
  io::StagingDir staging(out, "runner");
  for (const auto& f : files) {
    fs::create_directories((staging.path() / f.name).parent_path());
    io::WriteFileAtomic(staging.path() / f.name, f.text);
  }
  staging.Commit();
}

}  // namespace

QuantParam QuantFromRange(float min, float max) {
  QuantParam q;
  q.min = std::min(min, 0.0f);
  q.max = std::max(max, 0.0f);
  float span = q.max - q.min;
  q.scale = span > 0 ? span / 255.0f : 1.0f;
  q.zero_point = static_cast<int32_t>(std::lround(-128.0 - q.min / q.scale));
  q.zero_point = std::clamp(q.zero_point, -128, 127);
  return q;
}

RunnerResult EmitRunner(const RunnerRequest& request) {
  CheckRequest(request);
  Pipeline p = LoadPipeline(request.pipeline_json);
  CheckPackageDir(request, p);
  RunnerResult result;
  std::set<std::string> int8;
  if ((request.fake_npu && request.fake_npu->int8) ||
      (request.backend == RunnerBackend::kRknn && !request.table.empty())) {
    int8 = Int8Tensors(p);
  }
  if (!int8.empty() && !request.table.empty()) {
    result.quant = ReadTable(request.table, int8);
    result.quant_source = "calibration table " + request.table.string();
  } else if (!int8.empty()) {
    result.quant = ObserveRanges(p, request, int8);
    result.quant_source = fmt::format(
        "ranges observed in one executor run on {} (seed {}); give a calibration table for "
        "calibrated values",
        request.inputs.empty() ? "random inputs" : "the given inputs", request.seed);
    result.notes.push_back("no calibration table: int8 bridge " + result.quant_source);
  }
  RunnerLayout layout = LayoutRunner(p, request, result.quant);
  result.arena = PlanBridges(p, layout, request.alignment);
  auto files = RenderRunner(p, request, layout, result);
  for (const auto& seg : layout.segments) result.segments.push_back(seg);
  WritePackage(request.out_dir, files);
  for (const auto& f : files) result.files.push_back(request.out_dir / f.name);
  return result;
}

}  // namespace porttool::emit
