// port's verdict as a table of gates (see Gate in port.h), computed in one place from what the
// steps measured: does the bundle fit the target's memory, was its accuracy judged and good
// enough, in which arithmetic does each segment run on the device and was that what porttool
// verified, and does the bundle hold every step to the device. "ready" only when every blocking
// gate passes; the terminal, report.json/md/html and the exit code all read this one result.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "lib/io/model.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/stages/port_steps.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

using onnx::TensorProto;

// Without a task, every output of the quantized pipeline must keep this much of the float
// model's direction and span. A cosine of 0.99 is about 17 dB of SQNR: a working int8 model
// (det 20-30 dB, the demo 68 dB) clears it and a collapsed one (cosine 0.11, no box left) does
// not. The max-error bound catches what a cosine over millions of near-zero values hides: one
// output value off by half the output's whole span is a wrong answer, not rounding.
constexpr double kMinCosine = 0.99;
constexpr double kMaxErrorShareOfRange = 0.5;

// With a task and no --accuracy-target: the task figure the quantized pipeline must reach
// against the float model (agreement, not ground truth).
struct TaskFloor {
  const char* metric;
  double value;
};
TaskFloor DefaultTaskFloor(quant::TaskKind kind) {
  switch (kind) {
    case quant::TaskKind::kDetectDb:
      return {"hmean", 0.9};
    case quant::TaskKind::kClassify:
      return {"top1", 0.95};
    case quant::TaskKind::kCtc:
      return {"seq", 0.9};
    default:
      return {"sqnr", 17.0};
  }
}

std::string Bytes(uint64_t b) { return util::FormatBytes(b); }

Gate NewGate(const char* id, const char* title) {
  Gate g;
  g.id = id;
  g.title = title;
  return g;
}

bool IsAccelerator(const ir::Segment& seg) { return seg.role == ir::SegmentRole::kAccelerator; }

bool Quantized(const PortState& s, int segment) {
  if (!s.quant) return false;
  for (const auto& [i, file] : s.quant->qdq_files) {
    if (i == segment) return true;
  }
  return false;
}

// Bytes of a float32 value as the device keeps it when the segment runs unquantized.
double FloatScale(const std::string& arithmetic) { return arithmetic == "fp16" ? 0.5 : 1.0; }

// What each segment computes in on the device: "int8" when port quantized it, the profile's
// float arithmetic for an unquantized accelerator segment, fp32 on the host CPU.
std::string SegmentArithmetic(const PortState& s, int i) {
  const ir::Segment& seg = s.plan->split.segments[i];
  if (!IsAccelerator(seg)) return "fp32";
  if (Quantized(s, i)) return "int8";
  return s.target.float_arithmetic.empty() ? "fp32" : s.target.float_arithmetic;
}

std::string SegmentName(const PortState& s, int i) {
  const ir::Segment& seg = s.plan->split.segments[i];
  return fmt::format("segment {} ({}, {})", i, IsAccelerator(seg) ? "accelerator" : "host",
                     SegmentArithmetic(s, i));
}

// ---- fit ---------------------------------------------------------------------------------------

struct Budget {
  uint64_t flash = 0, ram = 0;
  std::string Text(const decide::TargetProfile& t) const {
    return fmt::format("flash <= {}, RAM <= {} ({:.0f}% of {} and {})", Bytes(flash), Bytes(ram),
                       100 * t.usable_fraction, Bytes(t.flash_bytes), Bytes(t.ram_bytes));
  }
};

Budget BudgetOf(const decide::TargetProfile& t) {
  return {static_cast<uint64_t>(static_cast<double>(t.flash_bytes) * t.usable_fraction),
          static_cast<uint64_t>(static_cast<double>(t.ram_bytes) * t.usable_fraction)};
}

// Per segment: weights as the device stores them and the activation arena of the header's plan,
// scaled from float32 to the segment's arithmetic (int8 a quarter, fp16 a half).
Gate FitFromSegments(const PortState& s) {
  Gate g = NewGate("fit", "does it fit the target's memory?");
  const Budget budget = BudgetOf(s.target);
  const decide::TargetProfile& t = s.target;
  uint64_t weights = 0, peak_arena = 0;
  bool every_segment_fits = true;
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const int si = static_cast<int>(i);
    const std::string arithmetic = SegmentArithmetic(s, si);
    uint64_t w = 0;
    if (Quantized(s, si)) {
      w = s.quant->qdq_weight_bytes.at(si);
    } else {
      w = WeightBytes(s.segments[i], FloatScale(arithmetic));
    }
    const double act_scale = arithmetic == "int8" ? 0.25 : FloatScale(arithmetic);
    const uint64_t arena =
        static_cast<uint64_t>(std::ceil(static_cast<double>(s.segment_arena[i]) * act_scale));
    const uint64_t ram = arena + (t.weights_in_ram ? w : 0);
    const bool fits = w <= budget.flash && ram <= budget.ram;
    every_segment_fits = every_segment_fits && fits;
    g.rows.push_back({SegmentName(s, si),
                      fmt::format("weights {}, arena {}{}", Bytes(w), Bytes(arena),
                                  t.weights_in_ram ? " (+ weights in RAM)" : ""),
                      "", fits ? GateStatus::kPass : GateStatus::kFail});
    g.figures["segments"].push_back(
        {{"index", si}, {"arithmetic", arithmetic}, {"weight_bytes", w}, {"arena_bytes", arena}});
    weights += w;
    peak_arena = std::max(peak_arena, arena);
  }
  // Segments run one after another: the largest arena at a time, with every bridge held across.
  const uint64_t bridges = s.bridge_arena.value_or(0);
  const uint64_t ram = peak_arena + bridges + (t.weights_in_ram ? weights : 0);
  const bool flash_fits = weights <= budget.flash, ram_fits = ram <= budget.ram;
  g.status = flash_fits && ram_fits && every_segment_fits ? GateStatus::kPass : GateStatus::kFail;
  g.measured = fmt::format("weights {}, RAM {}", Bytes(weights), Bytes(ram));
  g.needed = budget.Text(t);
  g.rows.push_back(
      {"total",
       fmt::format("weights {} in flash; RAM: largest arena {} + bridges {}{}", Bytes(weights),
                   Bytes(peak_arena), Bytes(bridges),
                   t.weights_in_ram ? fmt::format(" + weights {}", Bytes(weights)) : ""),
       g.needed, g.status});
  if (!flash_fits || !ram_fits) {
    std::vector<std::string> over;
    if (!flash_fits) {
      over.push_back(
          fmt::format("weights {} > usable flash {}", Bytes(weights), Bytes(budget.flash)));
    }
    if (!ram_fits) {
      over.push_back(fmt::format("RAM {} > usable RAM {}", Bytes(ram), Bytes(budget.ram)));
    }
    g.finding = fmt::format(
        "does not fit {}: {}; shrink the model (int8 with calibration data, a smaller input "
        "shape, pruning) or pick a target with more memory",
        t.name, util::Join(over, ", "));
  }
  g.notes.push_back(
      "weights as the device stores them (int8 segments as quantized, float ones at the "
      "device's float size); arenas from each header's plan scaled the same way");
  g.figures.update({{"weight_bytes", weights},
                    {"ram_bytes", ram},
                    {"peak_arena_bytes", peak_arena},
                    {"bridge_bytes", bridges},
                    {"usable_flash_bytes", budget.flash},
                    {"usable_ram_bytes", budget.ram}});
  return g;
}

// Before emit (a dry run): the whole model's figures from the target scan.
Gate FitFromScan(const PortState& s) {
  Gate g = NewGate("fit", "does it fit the target's memory?");
  if (!s.scan) {
    g.finding = "not evaluated: the run stopped before the target scan";
    return g;
  }
  const decide::MemoryFit& m = s.scan->memory;
  g.needed = BudgetOf(s.target).Text(s.target);
  g.measured = fmt::format("weights {}, arena {}", Bytes(m.weight_bytes),
                           m.arena_bytes ? Bytes(*m.arena_bytes) : "unknown");
  if (!m.fits) {
    g.finding = "not evaluated: the activation arena is unknown (static shapes needed)";
    return g;
  }
  g.status = *m.fits ? GateStatus::kPass : GateStatus::kFail;
  if (!*m.fits)
    g.finding = fmt::format("does not fit {} (whole model, before the split)", s.target.name);
  g.notes.push_back(
      "whole model, from the target scan (the bundle's per-segment figures come "
      "with emit)");
  return g;
}

// ---- accuracy ----------------------------------------------------------------------------------

std::string Fig(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "undefined"; }

// The largest max-abs error an output may have against the float one: a share of the float
// output's range, or of its magnitude when the range is a single value (a one-element output,
// or one the samples left constant), where a share of 0 would fail any rounding at all.
double MaxErrorBound(double float_min, double float_max) {
  const double range = float_max - float_min;
  const double scale = range > 0 ? range : std::max(std::fabs(float_min), std::fabs(float_max));
  return kMaxErrorShareOfRange * scale;
}

void JudgeBySimilarity(const quant::AccuracyReport& a, Gate& g) {
  g.needed = fmt::format("cosine >= {} and max abs error <= {} x the float output's range",
                         kMinCosine, kMaxErrorShareOfRange);
  std::vector<std::string> failing, measured;
  for (const auto& o : a.outputs) {
    const double range = o.float_max - o.float_min;
    const double bound = MaxErrorBound(o.float_min, o.float_max);
    const bool ok = o.cosine >= kMinCosine && o.max_abs <= bound;
    const std::string figure = fmt::format(
        "cosine {:.4f}, max abs {:.3g} (range {:.3g}), sqnr {}", o.cosine, o.max_abs, range,
        std::isfinite(o.sqnr_db) ? fmt::format("{:.1f} dB", o.sqnr_db) : "exact");
    g.rows.push_back({"output '" + o.name + "'", figure,
                      fmt::format("cosine >= {}, max abs <= {:.3g}", kMinCosine, bound),
                      ok ? GateStatus::kPass : GateStatus::kFail});
    measured.push_back(fmt::format("'{}' cosine {:.4f}", o.name, o.cosine));
    if (!ok) failing.push_back("'" + o.name + "' " + figure);
  }
  g.measured = util::Join(measured, ", ");
  g.status = failing.empty() ? GateStatus::kPass : GateStatus::kFail;
  if (!failing.empty()) {
    g.finding = fmt::format(
        "the int8 pipeline departs from the float model: {}; calibrate on samples like the "
        "deployment's, try per-channel weights or another method, or keep the worst nodes float",
        util::Join(failing, "; "));
  }
  g.notes.push_back(
      "accuracy judged by output similarity only; give a task to judge by the task (detect-db, "
      "classify, ctc)");
}

void JudgeByMetric(const quant::AccuracyReport& a, const std::string& metric, double value,
                   const std::string& origin, Gate& g) {
  g.needed = fmt::format("{} >= {:g} ({})", metric, value, origin);
  for (const auto& t : a.tasks) {
    g.rows.push_back({"output '" + t.output + "' (" + t.task + ")", t.Describe(), g.needed,
                      GateStatus::kNotEvaluated});
  }
  const std::optional<double> got = a.Metric(metric);
  if (!got) {
    g.measured = metric + " undefined";
    g.finding = fmt::format(
        "not evaluated: {} has nothing to measure on the evaluation samples (e.g. no box in "
        "either model); evaluate on samples the task applies to",
        metric);
    return;
  }
  g.measured = fmt::format("{} {}", metric, Fig(*got));
  g.status = *got >= value ? GateStatus::kPass : GateStatus::kFail;
  for (auto& row : g.rows) row.status = g.status;
  if (g.status == GateStatus::kFail) {
    g.finding = fmt::format(
        "{} {} is below {:g}: try the mixed-precision search (an accuracy target), per-channel "
        "weights, another calibration method, or samples like the deployment's",
        metric, Fig(*got), value);
  }
}

// The calibration samples do not exercise an output when the float model's values on the
// evaluation samples leave the range calibrated for it (its 1st or 99th percentile outside:
// at least 1% of values clip), or when every calibration sample gave it one value.
void CalibrationCoverage(const PortQuantization& q, const quant::AccuracyReport& a, Gate& g) {
  for (const auto& o : a.outputs) {
    auto it = q.table.tensors.find(o.name);
    if (it == q.table.tensors.end() || o.float_quantiles.size() < 7) continue;
    const quant::TableEntry& e = it->second;
    if (e.observed_max == e.observed_min) {
      g.notes.push_back(fmt::format(
          "finding: every calibration sample gave output '{}' the same value ({:.3g}): the "
          "samples do not activate it; calibrate on samples like those you deploy on",
          o.name, e.observed_max));
      continue;
    }
    const double slack = 1e-3 * (e.max - e.min);
    const double p1 = o.float_quantiles.front(), p99 = o.float_quantiles.back();
    if (p1 < e.min - slack || p99 > e.max + slack) {
      g.notes.push_back(fmt::format(
          "finding: at least 1% of output '{}' values on the evaluation samples fall outside "
          "the range calibrated for it [{:.3g}, {:.3g}] (1st-99th percentile [{:.3g}, {:.3g}]): "
          "the calibration samples do not cover what the model meets; calibrate on samples "
          "like those you deploy on",
          o.name, e.min, e.max, p1, p99));
    }
  }
}

Gate AccuracyGate(const PortState& s) {
  Gate g = NewGate("accuracy", "is it as accurate as the float model?");
  if (s.options.dry_run && s.options.quantize) {
    g.finding = "not evaluated: a dry run does not calibrate";
    return g;
  }
  if (!s.quant) {
    g.status = s.plan ? GateStatus::kPass : GateStatus::kNotEvaluated;
    g.measured = "float segments";
    g.needed = "the port's result verified against the original model";
    g.notes.push_back(
        "not quantized: the chained segments reproduce the original model within tolerance "
        "(bit for bit when no step changed it), one end-to-end check after the split; the "
        "device's own float arithmetic is the arithmetic gate's question");
    return g;
  }
  const PortQuantization& q = *s.quant;
  if (q.qdq_files.empty()) {
    g.status = GateStatus::kPass;
    g.measured = "float segments (no accelerator segment to quantize)";
    return g;
  }
  if (!q.chain_accuracy) {
    g.finding =
        "not evaluated: no evaluation samples (every sample went to calibration); give more "
        "samples or a separate evaluation set";
    return g;
  }
  const quant::AccuracyReport& a = *q.chain_accuracy;
  const auto& request = *s.options.quantize;
  if (request.target) {
    JudgeByMetric(a, request.target->metric, request.target->value, "the accuracy target", g);
  } else if (!a.tasks.empty()) {
    TaskFloor floor = DefaultTaskFloor(a.tasks.front().kind);
    JudgeByMetric(a, floor.metric, floor.value, "porttool's default for the task", g);
  } else {
    JudgeBySimilarity(a, g);
  }
  CalibrationCoverage(q, a, g);
  if (s.target.runner_backend == "rknn" || !s.target.onnx_toolchain.empty()) {
    g.notes.push_back(
        "judged on porttool's quantized segments; the vendor tool quantizes the float segment "
        "itself, so check its own accuracy report too");
  }
  g.figures["samples"] = a.samples;
  return g;
}

// ---- target arithmetic -------------------------------------------------------------------------

// Why the float16 chain is not what the float model computes, or "" when it is: an overflow,
// a non-finite output, or an output under the similarity floor the int8 pipeline must also hold.
std::string Float16Problem(const Float16Check& check) {
  std::vector<std::string> problems;
  for (const auto& o : check.overflows) {
    problems.push_back(fmt::format("'{}' (node '{}') overflows float16: {:.4g} > 65504", o.tensor,
                                   o.node, o.max_abs));
  }
  for (const auto& o : check.outputs) {
    const double bound = MaxErrorBound(o.float_min, o.float_max);
    if (!o.finite || !(o.cosine >= kMinCosine) || !(o.max_abs <= bound)) {
      problems.push_back(fmt::format("output '{}' in float16: cosine {:.4f}, max abs {:.3g}{}",
                                     o.name, o.cosine, o.max_abs, o.finite ? "" : ", not finite"));
    }
  }
  if (check.evaluation) {
    for (const auto& o : check.evaluation->outputs) {
      if (!(o.cosine >= kMinCosine) || !(o.max_abs <= MaxErrorBound(o.float_min, o.float_max))) {
        problems.push_back(fmt::format(
            "output '{}' in float16 on the evaluation samples: cosine {:.4f}, max abs {:.3g}",
            o.name, o.cosine, o.max_abs));
      }
    }
  }
  return util::Join(problems, "; ");
}

// The float inputs the float16 check drew uniform in [0, 1) because no --input-range named them.
// A model that takes pixels in 0..255 sees a near-constant image there, and a near-constant
// output judged by its own tiny spread (M-LSD: 11 dB on [0, 1), 39 dB on 0..255).
std::string UnrangedInputsHint(const PortState& s) {
  std::vector<std::string> names;
  ir::GraphView view(s.model.proto.graph());
  for (const auto* in : view.RealInputs()) {
    if (in->type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) continue;
    if (!s.options.input_ranges.count(in->name())) names.push_back("'" + in->name() + "'");
  }
  if (names.empty()) return "";
  return fmt::format(
      "; the check drew {} uniform in [0, 1): if the model reads another range (pixels 0..255, "
      "audio -1..1), give --input-range NAME=LO:HI and port again",
      util::Join(names, ", "));
}

std::string Float16Figure(const Float16Check& check) {
  double worst = INFINITY;
  for (const auto& o : check.outputs) worst = std::min(worst, o.sqnr_db);
  std::string figure = fmt::format("float16 worst output {}, {} overflow(s)",
                                   std::isfinite(worst) ? fmt::format("{:.1f} dB", worst) : "exact",
                                   check.overflows.size());
  if (check.evaluation) {
    for (const auto& t : check.evaluation->tasks) {
      figure += fmt::format("; '{}' on {} evaluation sample(s): {}", t.output,
                            check.evaluation->samples, t.Describe());
    }
  }
  return figure;
}

Gate ArithmeticGate(const PortState& s) {
  Gate g = NewGate("arithmetic", "is what the device computes what porttool verified?");
  if (!s.plan) return g;
  bool fp16 = false, none = false;
  const std::string fp16_problem = s.fp16 ? Float16Problem(*s.fp16) : "";
  std::vector<std::string> per_segment;
  for (size_t i = 0; i < s.plan->split.segments.size(); ++i) {
    const int si = static_cast<int>(i);
    const std::string a = SegmentArithmetic(s, si);
    GateRow row{SegmentName(s, si), a, "", GateStatus::kPass};
    if (a == "int8") {
      row.needed = "verified as QDQ int8 (quantize-dequantize around float ops)";
    } else if (a == "fp32") {
      row.needed = "verified in float32";
    } else if (a == "fp16") {
      fp16 = true;
      if (s.fp16) {
        row.measured = Float16Figure(*s.fp16);
        row.needed = "verified in float16 as the device computes it";
        row.status = fp16_problem.empty() ? GateStatus::kPass : GateStatus::kFail;
      } else {
        row.needed = "not run in float16 (a dry run)";
        row.status = GateStatus::kNotEvaluated;
      }
    } else {
      row.needed = "the accelerator cannot run float";
      row.status = GateStatus::kFail;
      none = true;
    }
    per_segment.push_back(a);
    g.rows.push_back(row);
  }
  g.measured = util::Join(per_segment, ", ");
  g.needed = "the device's arithmetic";
  if (none) {
    g.status = GateStatus::kFail;
    g.needed = "quantized accelerator segments";
    std::string why = s.target.float_arithmetic_text.empty()
                          ? "The accelerator runs quantized models only."
                          : s.target.float_arithmetic_text;
    g.finding = why + " Give calibration data to quantize the accelerator segments.";
  } else if (fp16 && !s.fp16) {
    g.blocking = false;
    g.finding = "not evaluated: a dry run does not run the float16 check (run without it)";
  } else if (fp16 && !fp16_problem.empty()) {
    g.status = GateStatus::kFail;
    g.measured += "; " + Float16Figure(*s.fp16);
    g.finding = fmt::format("in float16, as {} computes it: {}; {}", s.target.name, fp16_problem,
                            s.fp16->overflows.empty()
                                ? "quantize the model (calibration data), or run the nodes that "
                                  "lose the most precision on the host CPU"
                                : "quantize the model (calibration data), or keep the overflowing "
                                  "nodes on the host") +
                UnrangedInputsHint(s);
  } else {
    g.status = GateStatus::kPass;
    if (fp16) g.measured += "; " + Float16Figure(*s.fp16);
  }
  if (fp16 && s.fp16) {
    g.notes.push_back(fmt::format(
        "float16 emulated on {} random input(s) (seed {}): weights and every op boundary rounded "
        "to binary16, float32 accumulation inside an op as the NPUs do; real data may reach "
        "other ranges",
        s.fp16->samples, s.options.seed));
  }
  if (!s.target.float_arithmetic_source.empty()) {
    g.notes.push_back("float arithmetic per the profile: " + s.target.float_arithmetic_source);
  }
  return g;
}

// ---- completeness ------------------------------------------------------------------------------

Gate CompletenessGate(const PortState& s) {
  Gate g = NewGate("completeness", "does the bundle hold every step to the device?");
  g.needed = "no custom operator left to write; every tool step to the device in the bundle";
  if (!s.plan || !s.scan) return g;
  std::vector<std::string> missing;
  for (const auto& item : s.left) {
    if (item.kind == "custom-op") {
      missing.push_back(fmt::format("custom operator {} to write ({}/)", item.op, item.package));
    }
  }
  if (s.options.dry_run) {
    for (const auto& n : s.scan->scan.nodes) {
      if (n.parent.empty() && n.placement == decide::Placement::kUnsupported) {
        missing.push_back(fmt::format("custom operator {} to write", n.op));
      }
    }
  }
  for (const auto& m : s.vendor.missing) missing.push_back(m);
  g.measured = missing.empty() ? "nothing missing" : util::Join(missing, "; ");
  g.status = missing.empty() ? GateStatus::kPass : GateStatus::kFail;
  if (!missing.empty()) {
    g.finding = fmt::format("{} item(s) left before the device: {}", missing.size(),
                            util::Join(missing, "; "));
  }
  std::set<std::string> folders;
  for (const auto& f : s.vendor.files) folders.insert(f.substr(0, f.find('/')) + "/");
  if (!folders.empty()) {
    g.notes.push_back(fmt::format("the tool step to the device: {} file(s) in {}",
                                  s.vendor.files.size(),
                                  util::Join({folders.begin(), folders.end()}, ", ")));
  }
  return g;
}

std::string PrecisionText(const PortState& s) {
  if (!s.quant) return "float";
  if (s.quant->qdq_files.empty()) return "float (no accelerator segment to quantize)";
  return "int8";
}

std::string PlacementText(const PortState& s) {
  int accel = 0, host = 0;
  for (const auto& seg : s.plan->split.segments) (IsAccelerator(seg) ? accel : host)++;
  if (accel == 0)
    return fmt::format("host only: the whole model runs on the CPU of {}", s.target.name);
  if (host == 0)
    return fmt::format("one accelerator segment runs the whole model on {}", s.target.name);
  return fmt::format("{} accelerator and {} host segment(s), the host ones on the target's CPU",
                     accel, host);
}

}  // namespace

uint64_t WeightBytes(const io::Model& model, double float_scale) {
  double bytes = 0;
  auto add = [&](const TensorProto& t) {
    double b = static_cast<double>(io::TensorPayloadBytes(t));
    bytes += t.data_type() == TensorProto::FLOAT ? b * float_scale : b;
  };
  for (const auto& t : model.proto.graph().initializer()) add(t);
  for (const auto& node : model.proto.graph().node()) {
    if (!ir::IsConstantNode(node)) continue;
    for (const auto& a : node.attribute()) {
      if (a.has_t()) add(a.t());
    }
  }
  return static_cast<uint64_t>(std::ceil(bytes));
}

std::string GateStatusName(GateStatus status) {
  switch (status) {
    case GateStatus::kPass:
      return "pass";
    case GateStatus::kFail:
      return "fail";
    default:
      return "not evaluated";
  }
}

PortVerdict ComputeVerdict(const PortState& s) {
  PortVerdict v;
  if (!s.plan) return v;
  v.gates.push_back(s.segment_arena.size() == s.segments.size() && !s.segments.empty()
                        ? FitFromSegments(s)
                        : FitFromScan(s));
  v.gates.push_back(AccuracyGate(s));
  v.gates.push_back(ArithmeticGate(s));
  v.gates.push_back(CompletenessGate(s));
  std::vector<std::string> failed, unknown;
  for (const auto& g : v.gates) {
    if (g.status == GateStatus::kFail) failed.push_back(g.id);
    if (g.status == GateStatus::kNotEvaluated && g.blocking) unknown.push_back(g.id);
  }
  const std::string what = fmt::format("{}, {}", PlacementText(s), PrecisionText(s));
  if (!failed.empty() || !unknown.empty()) {
    v.status = "not-ready";
    v.kind = "fail";
    std::vector<std::string> why;
    if (!failed.empty()) why.push_back("failed: " + util::Join(failed, ", "));
    if (!unknown.empty()) why.push_back("not evaluated: " + util::Join(unknown, ", "));
    v.text = fmt::format("not ready ({}): {}", util::Join(why, "; "), what);
    return v;
  }
  v.status = "ready";
  bool caveat = false;
  for (const auto& g : v.gates) caveat = caveat || g.status != GateStatus::kPass;
  int host = 0;
  for (const auto& seg : s.plan->split.segments) host += IsAccelerator(seg) ? 0 : 1;
  v.kind = caveat || host > 0 ? "warn" : "ok";
  v.text = fmt::format("ready: {}", what);
  return v;
}

}  // namespace porttool::stages
