#include "lib/stages/split.h"

#include <fmt/format.h>

#include <set>

#include "lib/analysis/check.h"
#include "lib/analysis/cut_advice.h"
#include "lib/runtime/shape_completion.h"
#include "lib/runtime/verify.h"
#include "lib/shape/infer.h"

namespace porttool::stages {
namespace {

// Segments need complete types (the ONNX checker rejects a bridge without a shape).
io::Model CompletedModel(const io::Model& source, const shape::InputShapes& pins,
                         std::vector<std::string>& notes, std::string& incomplete) {
  io::Model completed = source;
  runtime::ShapeCompletion c = runtime::CompleteShapes(completed, pins);
  if (!c.complete()) incomplete = c.Summary();
  if (!c.dynamic_inputs.empty()) {
    incomplete +=
        fmt::format("; pin the input shape (e.g. {})", shape::ExampleInputShapes(completed));
  }
  notes.insert(notes.end(), c.inference.notes.begin(), c.inference.notes.end());
  if (!c.by_execution.empty()) {
    notes.push_back(fmt::format(
        "{} tensor shape(s) static inference left unknown were taken from one executor run",
        c.by_execution.size()));
  }
  if (!c.unresolved.empty() && c.dynamic_inputs.empty()) notes.push_back(c.Summary());
  return completed;
}

// Every boundary tensor without a byte size, once, in segment order.
std::vector<std::string> UnsizedTensors(const ir::SplitResult& split) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& name, const std::optional<uint64_t>& bytes) {
    if (!bytes && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& seg : split.segments) {
    for (const auto& t : seg.inputs) add(t.name, t.bytes);
    for (const auto& t : seg.outputs) add(t.name, t.bytes);
  }
  for (const auto& b : split.bridges) add(b.tensor, b.bytes);
  return out;
}

}  // namespace

SplitPlan PlanSplit(const io::Model& source, const SplitStageOptions& options) {
  SplitPlan plan;
  std::string incomplete;
  plan.model = CompletedModel(source, options.input_shapes, plan.notes, incomplete);
  ir::SplitOptions split;
  split.infer_types = shape::TypeInference();
  if (!options.target) {
    plan.split = ir::SplitAtNodes(plan.model, options.at, split);
  } else {
    plan.partition = decide::PlanAutoSplit(plan.model, *options.target, options.partition);
    plan.split = ir::SplitModel(plan.model, plan.partition->chosen.host, split);
  }
  plan.split.advice = analysis::AdviseCuts(plan.model, plan.split,
                                           {.bridge_warn_bytes = options.bridge_warn_bytes});
  plan.notes.insert(plan.notes.end(), plan.split.notes.begin(), plan.split.notes.end());
  for (const auto& advice : plan.split.advice) plan.notes.push_back(advice.message);
  plan.unsized = UnsizedTensors(plan.split);
  if (!plan.unsized.empty()) plan.unsized_why = incomplete;
  return plan;
}

emit::WriteSplitResult WriteSplit(SplitPlan& plan, const std::filesystem::path& dir,
                                  const SplitWriteOptions& options, bool into_existing) {
  emit::WriteSplitOptions write;
  write.copy_weights = options.copy_weights;
  write.segment_dir = options.segment_dir;
  write.source_name = options.source_name;
  write.source_sha256 = options.source_sha256;
  write.replace = options.replace;
  write.inputs = options.inputs;
  if (plan.partition) write.annotations["estimate"] = decide::PartitionToJson(*plan.partition);
  return into_existing ? emit::WriteSplitFiles(plan.split, plan.model, dir, write)
                       : emit::WriteSplit(plan.split, plan.model, dir, write);
}

std::vector<std::string> SegmentCheckerFindings(const std::vector<io::Model>& segments,
                                                const SplitPlan& plan) {
  std::vector<std::string> findings;
  for (size_t i = 0; i < segments.size(); ++i) {
    analysis::CheckReport report;
    analysis::RunOnnxChecker(segments[i], report);
    for (const auto& f : report.findings) {
      findings.push_back(
          fmt::format("{} fails the ONNX checker: {}", plan.split.segments[i].file, f.message));
    }
  }
  return findings;
}

namespace {

// A segment a converter would reject is not a verified split, whatever the outputs say.
bool CheckSegments(const std::vector<io::Model>& segments, const SplitPlan& plan,
                   std::vector<std::string>& problems) {
  std::vector<std::string> findings = SegmentCheckerFindings(segments, plan);
  problems.insert(problems.end(), findings.begin(), findings.end());
  return findings.empty();
}

}  // namespace

SplitVerification VerifySplit(const io::Model& source, const shape::InputShapes& input_shapes,
                              const SplitPlan& plan, const std::filesystem::path& dir,
                              uint64_t seed, const runtime::KernelRegistry* kernels,
                              const shape::InputRanges& ranges) {
  SplitVerification v;
  try {
    io::Model pinned = source;
    shape::ApplyInputShapes(pinned, input_shapes);
    // What is verified is what was written: the segments are read back from disk.
    std::vector<io::Model> segments;
    for (const auto& segment : plan.split.segments)
      segments.push_back(io::Load(dir / segment.file));
    std::vector<const io::Model*> chain;
    for (const auto& segment : segments) chain.push_back(&segment);
    runtime::SessionOptions session;
    session.registry = kernels;
    runtime::VerifyResult r = runtime::VerifyChainRandom(pinned, chain, seed, session, ranges);
    v.ran = true;
    v.identical = r.identical;
    v.outputs = r.outputs.size();
    v.problems = r.problems;
    v.checker_ok = CheckSegments(segments, plan, v.problems);
  } catch (const Error& e) {
    v.ran = false;
    v.error = e.what();
    v.error_kind = e.kind();
  }
  return v;
}

}  // namespace porttool::stages
