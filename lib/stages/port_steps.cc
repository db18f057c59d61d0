// The bodies of port's steps (see port.h for the sequence). Each takes what the earlier steps
// left in PortState, calls its stage, verifies, and says what it did in `step.details`: short
// deterministic sentences (no timings, no paths outside the bundle) that the log, the JSON and
// the reports all show.
#include "lib/stages/port_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "lib/analysis/check.h"
#include "lib/emit/c_names.h"
#include "lib/emit/header.h"
#include "lib/io/atomic_file.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/split.h"
#include "lib/runtime/chain.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/session.h"
#include "lib/runtime/shape_completion.h"
#include "lib/stages/check.h"
#include "lib/stages/emit_header.h"
#include "lib/stages/emit_runner.h"
#include "lib/stages/port_vendor.h"
#include "lib/stages/quantize.h"
#include "lib/stages/rewrite.h"
#include "lib/stages/scaffold.h"
#include "lib/stages/target.h"
#include "lib/util/json_text.h"
#include "lib/util/sha256.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace fs = std::filesystem;
namespace {

std::string PinsText(const shape::InputShapes& pins) {
  std::vector<std::string> parts;
  for (const auto& [name, dims] : pins) {
    parts.push_back(dims.empty() ? name + ":scalar"
                                 : fmt::format("{}:{}", name, fmt::join(dims, "x")));
  }
  return util::Join(parts, ",");
}

// "fold-constants 342, fuse-conv-bn 3": the passes that changed something.
std::string ChangesText(const passes::TransformReport& r) {
  std::map<std::string, int> changes;
  for (const auto& step : r.steps) changes[step.id] += step.result.changes;
  std::vector<std::string> parts;
  for (const auto& [id, n] : changes) {
    if (n > 0) parts.push_back(fmt::format("{} {}", id, n));
  }
  return parts.empty() ? "no pass changed anything" : util::Join(parts, ", ");
}

// Whether a pass changed the model. A step whose passes changed nothing is not verified again:
// running both models on random inputs would compare the model with itself, and on a 1,000-node
// model that comparison cost more than the port's real work (issue 49). The node count guards a
// pass that forgets to count its changes.
bool Unchanged(const passes::TransformReport& r) {
  return r.nodes_before == r.nodes_after &&
         std::all_of(r.steps.begin(), r.steps.end(),
                     [](const auto& step) { return step.result.changes == 0; });
}

constexpr const char* kNotReverified =
    "not verified again: no pass changed the model, so it is the model the steps before checked";

std::string OpsChangedText(const passes::TransformReport& r) {
  std::vector<std::string> parts;
  for (const auto& c : passes::OpCounts(r)) {
    if (c.before != c.after) parts.push_back(fmt::format("{} {}->{}", c.op, c.before, c.after));
  }
  return util::Join(parts, ", ");
}

bool IsFloatTarget(const decide::TargetProfile& t) {
  return t.activation_dtype.empty() || t.activation_dtype.rfind("float", 0) == 0;
}

std::string SegmentStem(const ir::Segment& seg) { return fs::path(seg.file).stem().string(); }

}  // namespace

// ---- 1 check ----------------------------------------------------------------------------------

void CheckAndPinStep(PortState& s, PortStep& step) {
  const PortOptions& o = s.options;
  s.model = io::Load(o.model);
  if (o.quantize) s.quantize = WithNodeNames(s.model, *o.quantize);  // before simplify moves nodes
  s.model_file = o.model.filename().string();
  s.source_sha256 = util::Sha256File(o.model);
  s.pins = o.input_shapes;
  s.pins_origin = "given";
  if (s.pins.empty()) {
    s.pins = DefaultInputShapes(s.target, s.model);
    s.pins_origin = "from the target profile's default_input_shape";
  }
  io::Model pinned = s.model;
  shape::ApplyInputShapes(pinned, s.pins);
  s.values = EffectiveInputValues(s.target, s.model, o.input_values);
  shape::CheckInputRanges(pinned, o.input_ranges, s.values);
  shape::ApplyInputValues(pinned, s.values);
  if (auto dynamic = shape::DynamicInputDims(pinned); !dynamic.empty()) {
    ThrowUsage("inputs with unknown dims: {}; pin the input shape (e.g. {})",
               util::Join(dynamic, ", "), shape::ExampleInputShapes(pinned));
  }
  CheckStageResult check = CheckStage(s.model, {.full_check = true, .input_shapes = s.pins});
  const analysis::CheckReport& report = check.report;
  step.details.push_back(fmt::format(
      "ONNX checker, strict shape inference and porting lints: {} error(s), {} warning(s)",
      report.Count(analysis::Severity::kError), report.Count(analysis::Severity::kWarning)));
  for (const auto& [f, more] : analysis::SelectFindings(report, {})) {
    if (f->severity == analysis::Severity::kInfo) continue;
    step.details.push_back(
        fmt::format("{}[{}] {}", analysis::SeverityName(f->severity), f->id, f->message));
    if (more > 0) {
      step.details.push_back(fmt::format("{}[{}] {}", analysis::SeverityName(f->severity), f->id,
                                         analysis::MoreLikeThis(more)));
    }
  }
  if (!check.ok()) {
    ThrowCheckFailed("the model fails its checks ({} error(s)): {}",
                     report.Count(analysis::Severity::kError), report.findings.front().message);
  }
  s.model = std::move(pinned);
  if (!s.pins.empty())
    step.details.push_back(fmt::format("pinned {} ({})", PinsText(s.pins), s.pins_origin));
  if (!s.values.empty()) {
    step.details.push_back("made constants: " + shape::InputValuesText(s.values));
  }
  if (!o.input_ranges.empty()) {
    std::vector<std::string> ranges;
    for (const auto& [name, r] : o.input_ranges) {
      ranges.push_back(fmt::format("{}={:g}:{:g}", name, r.lo, r.hi));
    }
    step.details.push_back("random verification inputs drawn from " + util::Join(ranges, ", "));
  }
}

// ---- 2 simplify -------------------------------------------------------------------------------

namespace {

constexpr int kPortSimplifyRounds = 32;

// inline-if's reasons for the Ifs still in the model after the fixed point (its last round's
// "kept If 'NAME': REASON" notes): what the user must give for the model to become static.
std::map<std::string, std::string> KeptIfs(const passes::TransformReport& r) {
  constexpr std::string_view kPrefix = "kept If '";
  std::map<std::string, std::string> kept;
  for (auto it = r.steps.rbegin(); it != r.steps.rend(); ++it) {
    if (it->id != "inline-if") continue;
    for (const auto& note : it->result.notes) {
      size_t end = note.find("': ");
      if (note.rfind(kPrefix, 0) != 0 || end == std::string::npos) continue;
      kept[note.substr(kPrefix.size(), end - kPrefix.size())] = note.substr(end + 3);
    }
    break;
  }
  return kept;
}

// A step that fails on a model that still has Ifs (random inputs taking a branch the model is
// never meant to run, an If output without a static shape): the error says which If stayed and
// what would remove it, not only where the executor or the emitter stopped.
[[noreturn]] void RethrowNamingKeptIfs(const PortState& s, const Error& e) {
  if (s.kept_ifs.empty()) throw;  // called from a handler: the error as it was
  const auto& [node, reason] = *s.kept_ifs.begin();
  throw Error(e.kind(),
              fmt::format("{}; the model still has {} If node(s) after simplify, e.g. If '{}': {}",
                          e.what(), s.kept_ifs.size(), node, reason),
              node, e.tensor());
}

}  // namespace

void SimplifyStep(PortState& s, PortStep& step) {
  io::Model before = s.model;
  // Each level of Ifs nested on shape-derived conditions takes one round (fold, then inline), so
  // port, which has no round flag, allows more than the subcommand's default of 8; a round that
  // changes nothing ends the loop, so a model that converges early costs nothing more.
  SimplifyStageOptions options;
  options.limits.max_rounds = kPortSimplifyRounds;
  passes::TransformReport r = SimplifyStage(s.model, options);
  if (r.failed) ThrowCheckFailed("the simplified model fails its check");
  step.details.push_back(fmt::format("{} -> {} nodes in {} round(s): {}", r.nodes_before,
                                     r.nodes_after, r.rounds, ChangesText(r)));
  if (r.nodes_before != r.nodes_after) step.details.push_back("ops: " + OpsChangedText(r));
  if (r.hit_cap) {
    step.details.push_back(fmt::format(
        "stopped at the cap of {} rounds: the model may fold or inline further", r.rounds));
  }
  s.kept_ifs = KeptIfs(r);
  for (const auto& [node, reason] : s.kept_ifs) {
    step.details.push_back(fmt::format("inline-if kept If '{}': {}", node, reason));
  }
  if (Unchanged(r)) {
    step.details.push_back(kNotReverified);
    return;
  }
  try {
    NoteChangedStep(s, step, {"simplify", "simplify", std::move(before)});
  } catch (const Error& e) {
    RethrowNamingKeptIfs(s, e);
  }
}

// ---- 3 rewrite --------------------------------------------------------------------------------

void RewriteStep(PortState& s, PortStep& step) {
  std::vector<passes::PipelineStep> steps = TargetRewrites(s.target);
  if (steps.empty()) {
    step.outcome = "skipped";
    step.details.push_back(fmt::format("target {} lists no rewrites", s.target.name));
    return;
  }
  io::Model before = s.model;
  passes::TransformReport r = RewriteStage(s.model, {.steps = steps});
  step.details.push_back(fmt::format("{}: {}", s.target.rewrites, ChangesText(r)));
  for (const auto& st : r.steps) {
    // The first few reasons a pass left a node alone: why a rewrite did not apply matters.
    for (size_t i = 0; i < st.result.notes.size() && i < 3; ++i) {
      step.details.push_back(fmt::format("{}: {}", st.id, st.result.notes[i]));
    }
  }
  if (r.nodes_before != r.nodes_after) step.details.push_back("ops: " + OpsChangedText(r));
  if (Unchanged(r)) {
    step.details.push_back(kNotReverified);
    return;
  }
  NoteChangedStep(s, step, {"rewrite", "the target's rewrites", std::move(before)});
}

// ---- 4 equalize -------------------------------------------------------------------------------

// Before the split: every segment is then cut from the equalized model and carries its weights
// (a conv pair across a cut is rescaled on both sides), the table is computed on that model, and
// the one end-to-end check at the split compares the chain with the original model.
void EqualizeStep(PortState& s, PortStep& step) {
  if (!s.quantize || !s.quantize->equalize) {
    step.outcome = "skipped";
    step.details.push_back(s.quantize ? "channel equalization is off for this run"
                                      : "nothing is quantized: no calibration data");
    return;
  }
  quant::QuantizeCalibrateRequest request = *s.quantize;
  request.calibration.threads = s.options.threads;
  quant::RequestSamples samples = quant::ListRequestSamples(s.model, request);
  io::Model before = s.model;
  std::optional<quant::EqualizeResult> r =
      quant::EqualizeForRequest(s.model, request, *samples.calibration, step.details);
  // The quantize step calibrates the model as it now is; equalizing it again would measure the
  // rescaled channels as if they were the original ones.
  s.quantize->equalize = false;
  if (!r || r->tensors.empty()) {
    step.outcome = "skipped";
    if (r) step.details.push_back("no conv pair to equalize: the model is unchanged");
    return;
  }
  for (const auto& t : r->tensors) s.equalized.push_back(t.tensor);
  NoteChangedStep(s, step, {"equalize", "channel equalization", std::move(before)});
}

// ---- 4 split ----------------------------------------------------------------------------------

namespace {

std::string ScanSummary(const decide::TargetScan& scan) {
  return fmt::format("{} node(s) on the accelerator, {} on the host CPU (fallback), {} unsupported",
                     scan.accelerator, scan.cpu_fallback, scan.unsupported);
}

bool HasSubgraph(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

// An op the target cannot run becomes a custom operator to write, except one that carries a
// subgraph (If/Loop/Scan): no custom-op interface takes a body, so the port stops here, naming
// the node and, for an If simplify could not inline, what its condition depends on.
void RefuseUnsupportedSubgraphs(const PortState& s) {
  ir::GraphView view(s.model.proto.graph());
  for (const auto& n : s.scan->scan.nodes) {
    if (!n.parent.empty() || n.placement != decide::Placement::kUnsupported) continue;
    const onnx::NodeProto& node = view.node(n.index);
    if (!HasSubgraph(node)) continue;
    auto kept = s.kept_ifs.find(n.name);
    throw Error(
        ErrorKind::kBadInput,
        fmt::format("{} '{}' cannot run on {} ({}), and a node that carries a subgraph "
                    "cannot be written as a custom operator{}; make it go away (compute both "
                    "branches and select with Where), or port to a target whose host CPU runs it",
                    n.op, n.name, s.target.name, n.reason,
                    kept == s.kept_ifs.end() ? "" : "; it was not inlined: " + kept->second),
        n.name);
  }
}

std::string SegmentsText(const SplitPlan& plan) {
  std::vector<std::string> parts;
  for (const auto& seg : plan.split.segments) {
    parts.push_back(
        fmt::format("{} ({} nodes)", SegmentStem(seg), seg.model.proto.graph().node_size()));
  }
  return util::Join(parts, ", ");
}

}  // namespace

namespace {

std::string AccuracyLine(const quant::OutputAccuracy& o) {
  return fmt::format("output '{}': sqnr {:.1f} dB, cosine {:.6f}, max abs {:.4g}", o.name,
                     o.sqnr_db, o.cosine, o.max_abs);
}

// The float16 chain against the float model on the user's evaluation samples, with their tasks
// and labels: what the device's float16 does to the figures the user judges the model by.
quant::AccuracyReport EvaluateFloat16(const PortState& s,
                                      const std::vector<const io::Model*>& chain,
                                      const std::vector<runtime::SessionOptions>& per_segment) {
  const quant::QuantizeCalibrateRequest& eval = *s.options.float16_eval;
  quant::SampleSet samples =
      quant::ListSamples(eval.eval_dir, runtime::Session(s.model).inputs(), eval.preprocess);
  quant::AccuracyOptions acc;
  acc.threads = s.options.threads;
  acc.tasks = eval.tasks;
  acc.labels = eval.labels;
  return quant::EvaluateChainAccuracy(s.model, chain, samples, acc, per_segment);
}

// Float16 as the device computes an unquantized accelerator segment (runtime/float16.h): the chain
// with those segments in float16 and the host ones in float32, against the float model, on the
// verification's random inputs.
void CheckFloat16(PortState& s, PortStep& step) {
  if (s.target.float_arithmetic != "fp16" || s.options.quantize) return;
  std::vector<runtime::SessionOptions> options;
  std::vector<const io::Model*> chain;
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const bool accelerator = s.plan->split.segments[i].role == ir::SegmentRole::kAccelerator;
    options.push_back({.float16 = accelerator});
    chain.push_back(&s.segments[i]);
  }
  // The float model's run is the end-to-end check's: the original's outputs on the same inputs.
  const OriginalRun& reference = *s.original_run;
  runtime::ChainSession device(s.model, chain, options);
  const std::vector<runtime::NamedTensor>& want = reference.outputs;
  std::vector<runtime::NamedTensor> got = device.Run(reference.inputs);
  Float16Check check;
  check.samples = 1;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (want[i].value.dtype() != onnx::TensorProto::FLOAT) continue;
    runtime::TensorStats st = runtime::CompareTensors(want[i].value, got[i].value, 0, 0);
    runtime::ValueStats ref = runtime::SummarizeValues(want[i].value);
    runtime::ValueStats out = runtime::SummarizeValues(got[i].value);
    check.outputs.push_back({want[i].name, st.sqnr_db, st.cosine, st.max_abs, ref.min, ref.max,
                             out.nan_count == 0 && out.inf_count == 0});
  }
  for (size_t i = 0; i < device.segment_count(); ++i) {
    for (const auto& o : device.segment(i).float16_overflows()) check.overflows.push_back(o);
  }
  for (const auto& o : check.outputs) {
    step.details.push_back(fmt::format(
        "float16 as {} computes it: output '{}' sqnr {}, cosine {:.6f}, max abs {:.3g}{}",
        s.target.name, o.name,
        std::isfinite(o.sqnr_db) ? fmt::format("{:.1f} dB", o.sqnr_db) : std::string("exact"),
        o.cosine, o.max_abs, o.finite ? "" : " (not finite)"));
  }
  for (const auto& o : check.overflows) {
    step.details.push_back(fmt::format("float16 overflow: '{}' (node '{}') reaches {:.4g} > 65504",
                                       o.tensor, o.node, o.max_abs));
  }
  if (s.options.float16_eval) {
    check.evaluation = EvaluateFloat16(s, chain, options);
    step.details.push_back(fmt::format(
        "float16 on {} evaluation sample(s), against the float model:", check.evaluation->samples));
    for (const auto& o : check.evaluation->outputs) step.details.push_back(AccuracyLine(o));
    for (const auto& t : check.evaluation->tasks) {
      step.details.push_back(fmt::format("output '{}' ({}): {}", t.output, t.task, t.Describe()));
    }
  }
  s.fp16 = std::move(check);
}

// Writes the segments into the bundle and reads them back once: what is verified, emitted and
// quantized is what was written. A segment a converter would reject fails the step here.
void WriteSegments(PortState& s, PortStep& step) {
  SplitWriteOptions write;
  write.copy_weights = true;  // a bundle is self-contained
  write.segment_dir = "segments";
  write.source_name = s.model_file;
  write.source_sha256 = s.source_sha256;
  s.written = WriteSplit(*s.plan, s.dir, write, /*into_existing=*/true);
  for (const auto& seg : s.plan->split.segments) s.segments.push_back(io::Load(s.dir / seg.file));
  VerifyClock clock(step);
  std::vector<std::string> findings = SegmentCheckerFindings(s.segments, *s.plan);
  for (const auto& f : findings) step.details.push_back("verify: " + f);
  if (!findings.empty()) ThrowCheckFailed("a segment fails the ONNX checker: {}", findings[0]);
}

}  // namespace

void SplitStep(PortState& s, PortStep& step) {
  s.scan = decide::CheckModelOnTarget(s.model, s.target);
  step.details.push_back(fmt::format("target {}: {}", s.target.name, ScanSummary(s.scan->scan)));
  for (const auto& f : s.scan->scan.findings) step.details.push_back(f);
  RefuseUnsupportedSubgraphs(s);
  SplitStageOptions options;
  options.target = s.target;
  s.plan = PlanSplit(s.model, options);
  const SplitPlan& plan = *s.plan;
  step.details.push_back(fmt::format("{} segment(s): {}; {} bridge(s)", plan.split.segments.size(),
                                     SegmentsText(plan), plan.split.bridges.size()));
  for (const auto& note : plan.notes) step.details.push_back(note);
  std::vector<const io::Model*> chain;
  if (!s.options.dry_run) {
    WriteSegments(s, step);
    for (const auto& seg : s.segments) chain.push_back(&seg);
  }
  try {
    VerifyEndToEnd(s, step, chain);
  } catch (const Error& e) {
    // A walk that named the rewrites reports them as they always were; anything else may come
    // from an If simplify kept (random inputs taking a branch the model never runs).
    if (s.culprit_step.empty() || s.culprit_step == "simplify") RethrowNamingKeptIfs(s, e);
    throw;
  }
  if (s.options.dry_run) return;
  VerifyClock fp16_clock(step);
  CheckFloat16(s, step);
}

// ---- 5 quantize -------------------------------------------------------------------------------

namespace {

std::string CalibrationNeeds(const PortState& s) {
  std::vector<std::string> inputs;
  runtime::Session session(s.model);
  for (const auto& in : session.inputs()) {
    inputs.push_back(fmt::format("'{}' [{}]", in.name, fmt::join(in.dims, "x")));
  }
  return fmt::format(
      "not calibrated: target {} runs {} activations; calibrating needs sample data for {} "
      "(<id>.<input>.npy files, or images with a preprocessing spec)",
      s.target.name, s.target.activation_dtype, util::Join(inputs, ", "));
}

}  // namespace

void QuantizeStep(PortState& s, PortStep& step) {
  if (!s.options.quantize) {
    step.outcome = "skipped";
    step.details.push_back(IsFloatTarget(s.target)
                               ? fmt::format("target {} runs {} activations: nothing to calibrate",
                                             s.target.name, s.target.activation_dtype)
                               : CalibrationNeeds(s));
    return;
  }
  PortQuantization q;
  // Once on the whole model: one table, so every bridge has one scale and zero point on both
  // sides of a cut; the mixed-precision search (when a target is given) runs here too.
  QuantizeStageOptions whole;
  whole.request = *s.quantize;
  whole.request.calibration.threads = s.options.threads;
  whole.request.evaluate = true;
  whole.prepare = false;  // simplify already made the exact conv fusions
  q.whole = QuantizeStage(s.model, whole);
  q.table = q.whole.table;
  step.details.push_back(fmt::format("calibrated {} tensors ({}, {} samples)",
                                     q.table.tensors.size(), q.table.method,
                                     q.whole.calibration_samples));
  for (const auto& n : q.whole.notes) step.details.push_back(n);
  q.kept_float = q.whole.final_qdq.exclude_nodes;
  for (const auto& n : q.whole.final_qdq.fallback_nodes) q.kept_float.push_back(n);
  const std::vector<std::string>& int16 = q.whole.final_qdq.int16_nodes;
  for (const auto& f : q.whole.fallback) {
    step.details.push_back(
        fmt::format("mixed precision: raised {} ({}) to {} ({} {:.4g} -> {:.4g})", f.node,
                    f.op_type, f.precision, whole.request.target->metric, f.before, f.after));
  }
  // The same table on every accelerator segment; host segments stay float.
  std::vector<io::Model> chain_models;
  std::vector<const io::Model*> chain;
  chain_models.reserve(s.segments.size());
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const ir::Segment& seg = s.plan->split.segments[i];
    if (seg.role != ir::SegmentRole::kAccelerator) {
      chain_models.push_back(s.segments[i]);
      continue;
    }
    QuantizeStageOptions part;
    part.request = *s.quantize;
    part.request.data_dir.clear();
    part.request.eval_dir.clear();
    part.request.table = q.table;
    part.request.evaluate = false;
    part.request.target.reset();
    part.request.sensitivity = false;
    // The whole model's conv input means, so a segment's biases are corrected as the whole
    // model's were (the segment has no samples of its own inputs to average).
    part.request.bias_correction = false;
    part.request.qdq.bias_correction = q.whole.final_qdq.bias_correction;
    // Nodes of other segments are not in this one: keep only this segment's names.
    std::set<std::string> names;
    for (const auto& n : s.segments[i].proto.graph().node()) names.insert(n.name());
    part.request.qdq.exclude_nodes.clear();
    part.request.qdq.int16_nodes.clear();
    for (const auto& n : q.kept_float) {
      if (names.count(n)) part.request.qdq.exclude_nodes.push_back(n);
    }
    for (const auto& n : int16) {
      if (names.count(n)) part.request.qdq.int16_nodes.push_back(n);
    }
    part.prepare = false;
    quant::QuantizeCalibrateResult r = QuantizeStage(s.segments[i], part);
    std::string file = "segments/" + SegmentStem(seg) + ".qdq.onnx";
    io::Save(r.qdq_model, s.dir / file);
    q.qdq_files.push_back({static_cast<int>(i), file});
    q.qdq_weight_bytes[static_cast<int>(i)] = WeightBytes(r.qdq_model, 1.0);
    step.details.push_back(fmt::format("{}: {} nodes, {} weights, {} activations quantized", file,
                                       r.qdq.quantized_nodes, r.qdq.quantized_weights,
                                       r.qdq.quantized_activations));
    chain_models.push_back(std::move(r.qdq_model));
  }
  for (const auto& m : chain_models) chain.push_back(&m);
  io::WriteFileAtomic(s.dir / "calibration.json", util::DumpJson(q.table.ToJson(), 2) + "\n");
  if (q.whole.eval_samples) {
    quant::AccuracyOptions acc;
    acc.per_channel = whole.request.qdq.per_channel;
    acc.method = q.table.method;
    acc.threads = s.options.threads;
    acc.tasks = whole.request.tasks;
    acc.labels = whole.request.labels;
    // Checked against the samples by the whole-model evaluation above.
    for (const auto& [id, _] : acc.labels) acc.known_ids.insert(id);
    q.chain_accuracy = quant::EvaluateChainAccuracy(s.model, chain, *q.whole.eval_samples, acc);
    step.details.push_back(fmt::format(
        "accuracy end to end through the {} chained segment(s), on {} evaluation sample(s):",
        chain.size(), q.chain_accuracy->samples));
    for (const auto& o : q.chain_accuracy->outputs) step.details.push_back(AccuracyLine(o));
  }
  // pipeline.json names the quantized segments and their table, for whoever deploys them.
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [segment, file] : q.qdq_files) files[std::to_string(segment)] = file;
  s.written.manifest["quantization"] = {{"table", "calibration.json"}, {"qdq_segments", files}};
  io::WriteFileAtomic(s.dir / "pipeline.json", util::DumpJson(s.written.manifest, 2) + "\n");
  s.quant = std::move(q);
  const auto& target = s.options.quantize->target;
  // A missed target is the accuracy gate's finding: the bundle is still written, for the user
  // to read why.
  if (target && s.quant->chain_accuracy) {
    const std::optional<double> value = s.quant->chain_accuracy->Metric(target->metric);
    step.details.push_back(
        !value ? fmt::format("accuracy target {}: {} undefined on these samples", target->Text(),
                             target->metric)
        : *value < target->value
            ? fmt::format("accuracy target {} NOT reached: {} {:.4g} end to end with {} node(s) "
                          "kept float",
                          target->Text(), target->metric, *value, s.quant->kept_float.size())
            : fmt::format("accuracy target {} reached ({:.4g})", target->Text(), *value));
  }
  if (s.quant->chain_accuracy) {
    for (const auto& t : s.quant->chain_accuracy->tasks) {
      step.details.push_back(fmt::format("output '{}' ({}): {}", t.output, t.task, t.Describe()));
    }
  }
}

// ---- 6 emit -----------------------------------------------------------------------------------

namespace {

std::string CommandLine(const PortState& s) {
  return fmt::format("porttool port {} --target {}", s.model_file, s.target.name);
}

void EmitHeaders(PortState& s, PortStep& step) {
  io::CreateOutputDir(s.dir / "headers");
  for (size_t i = 0; i < s.segments.size(); ++i) {
    std::string stem = SegmentStem(s.plan->split.segments[i]);
    std::string header = "headers/" + stem + ".h";
    EmitHeaderStageOptions o;
    o.request.header_path = s.dir / header;
    o.request.alignment = std::max<uint64_t>(1, s.target.alignment_bytes);
    o.request.prefix = emit::DefaultPrefix(fs::path(s.model_file).stem().string() + "_" + stem);
    o.request.arena = true;
    o.request.command_line = CommandLine(s);
    EmitHeaderStageResult r = EmitHeaderStage(s.segments[i], o);
    s.headers.push_back(header);
    if (r.emitted.arena) s.segment_arena.push_back(r.emitted.arena->arena_bytes);
    step.details.push_back(
        fmt::format("{}: {} buffer(s), arena {}", header, r.emitted.header.buffers.size(),
                    r.emitted.arena ? util::FormatBytes(r.emitted.arena->arena_bytes) : "none"));
  }
}

void EmitRunners(PortState& s, PortStep& step) {
  std::vector<std::pair<std::string, emit::RunnerBackend>> backends = {
      {"reference", emit::RunnerBackend::kReference}};
  if (s.target.runner_backend == "rknn") backends.push_back({"rknn", emit::RunnerBackend::kRknn});
  for (const auto& [name, backend] : backends) {
    emit::RunnerRequest request;
    request.pipeline_json = s.dir / "pipeline.json";
    request.out_dir = s.dir / "runner" / name;
    request.backend = backend;
    request.alignment = std::max<uint64_t>(1, s.target.alignment_bytes);
    request.seed = s.options.seed;
    request.pipeline_label = "pipeline.json of this bundle";
    request.segment_dir = ".";  // run from the bundle root, or pass --segments
    emit::RunnerResult r = EmitRunnerStage(request);
    s.runners.push_back("runner/" + name);
    if (backend == emit::RunnerBackend::kReference) s.bridge_arena = r.arena.arena_bytes;
    step.details.push_back(fmt::format("runner/{}: {} backend, {} segment(s), bridge arena {}",
                                       name, name, r.segments.size(),
                                       util::FormatBytes(r.arena.arena_bytes)));
  }
}

// One package per op the target cannot run at all, scaffolded from its first node; the ops that
// run on the host CPU are listed with their estimated cost.
void EmitLeftovers(PortState& s, PortStep& step) {
  std::map<std::string, std::vector<const decide::NodeScan*>> unsupported, host;
  for (const auto& n : s.scan->scan.nodes) {
    if (!n.parent.empty()) continue;  // subgraph nodes go with their parent
    if (n.placement == decide::Placement::kUnsupported) unsupported[n.op].push_back(&n);
    if (n.placement == decide::Placement::kCpuFallback) host[n.op].push_back(&n);
  }
  for (const auto& [op, nodes] : unsupported) {
    std::string dir = "custom-ops/" + emit::SanitizeCIdentifier(op);
    ScaffoldStageOptions o;
    o.scaffold.node = nodes.front()->name;
    o.scaffold.seed = s.options.seed;
    o.out_dir = s.dir / dir;
    io::CreateOutputDir(o.out_dir);
    emit::ScaffoldResult r = ScaffoldStage(s.model, o);
    LeftItem item{"custom-op", op, {}, "", dir, shape::OpSpecToJson(r.spec)};
    for (const auto* n : nodes) item.nodes.push_back(n->name);
    item.text = fmt::format(
        "write the custom operator {} ({} node(s): {}); package and test kit in {}/ ({} kernel)",
        op, nodes.size(), util::JoinFirst(item.nodes), dir,
        r.spec.kernel == "skeleton" ? "a skeleton" : "a working reference");
    step.details.push_back(item.text);
    s.left.push_back(std::move(item));
  }
  for (const auto& [op, nodes] : host) {
    LeftItem item{"host", op, {}, "", "", nullptr};
    for (const auto* n : nodes) item.nodes.push_back(n->name);
    item.text = fmt::format("{} runs on the host CPU ({} node(s): {}): {}", op, nodes.size(),
                            util::JoinFirst(item.nodes), nodes.front()->reason);
    s.left.push_back(std::move(item));
  }
}

}  // namespace

void EmitStep(PortState& s, PortStep& step) {
  try {
    EmitHeaders(s, step);
  } catch (const Error& e) {
    RethrowNamingKeptIfs(s, e);
  }
  EmitRunners(s, step);
  s.vendor = WritePortVendorSteps(s);
  for (const auto& d : s.vendor.details) step.details.push_back(d);
  for (const auto& m : s.vendor.missing) step.details.push_back("missing: " + m);
  EmitLeftovers(s, step);
}

// ---- dry run ----------------------------------------------------------------------------------

std::vector<std::string> PlannedDetails(const PortState& s, const std::string& step) {
  if (step == "equalize") {
    if (!s.options.quantize || !s.options.quantize->equalize)
      return {"would skip: equalization is off for this run"};
    return {"would rescale conv pairs measured on the calibration samples, before the split"};
  }
  if (step == "quantize") {
    if (!s.options.quantize) return {"would skip: no calibration data"};
    return {
        fmt::format("would calibrate on {} and quantize every accelerator segment with the "
                    "same table",
                    s.options.quantize->data_dir.filename().string())};
  }
  if (step == "emit") {
    return {"would write a header per segment, the reference runner" +
                std::string(s.target.runner_backend == "rknn" ? " and the rknn runner" : "") +
                (s.target.vendor_tool && s.target.vendor_tool->tool != "none"
                     ? ", the " + s.target.vendor_tool->tool + " step to the device"
                     : std::string()) +
                ", and a custom-operator package per op the target cannot run",
            "then the decision report (report.md, report.json, report.html)"};
  }
  return {};
}

}  // namespace porttool::stages
