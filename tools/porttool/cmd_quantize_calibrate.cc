// `porttool quantize-calibrate`: calibrate INT8 ranges on sample data (or reuse a table), write
// the calibration table, a TensorRT cache and a QDQ model, and report the accuracy cost.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include "lib/io/atomic_file.h"
#include "lib/stages/quantize.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct QuantizeCalibrateOptions {
  std::string model, table, trt_cache;
  QuantizeFlags quant;
  bool json = false, no_eval = false;
  std::vector<std::string> thresholds;
  int threads = 1;
  bool ort_compatible = false;
  ModelOutputOptions qdq;
};

std::map<std::string, double> ParseThresholds(const std::vector<std::string>& specs) {
  std::map<std::string, double> out;
  for (const auto& s : specs) {
    auto pos = s.rfind(':');
    if (pos == std::string::npos) ThrowUsage("--threshold takes OUTPUT:VALUE, got '{}'", s);
    try {
      out[s.substr(0, pos)] = std::stod(s.substr(pos + 1));
    } catch (const std::exception&) {
      ThrowUsage("--threshold '{}': '{}' is not a number", s, s.substr(pos + 1));
    }
  }
  return out;
}

// Samples done, rate and ETA on one rewritten stderr line, only when stderr is a terminal.
quant::ProgressFn Progress() {
  if (!isatty(STDERR_FILENO)) return nullptr;
  auto start = std::chrono::steady_clock::now();
  return [start](size_t done, size_t total) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double rate = done / std::max(secs, 1e-9);
    fmt::print(stderr, "\rcalibrating: {}/{} samples, {:.2f}/s, ETA {:.0f} s   {}", done, total,
               rate, (total - done) / rate, done == total ? "\n" : "");
  };
}

void PrintText(const quant::QuantizeCalibrateResult& r) {
  fmt::print("calibrated {} tensors ({}, {} samples)\n", r.table.tensors.size(), r.table.method,
             r.calibration_samples);
  fmt::print("QDQ: {} nodes, {} weights, {} activations quantized\n", r.qdq.quantized_nodes,
             r.qdq.quantized_weights, r.qdq.quantized_activations);
  for (const auto& e : r.qdq.excluded) {
    fmt::print("  kept float: {} ({}): {}\n", e.node, e.op_type, e.reason);
  }
  if (!r.qdq.int16_nodes.empty()) {
    fmt::print(
        "  int16 activations (A16W8) on {} node(s), {} tensor(s): {} (the layers to give a "
        "vendor's hybrid/mixed quantization, e.g. RKNN's)\n",
        r.qdq.int16_nodes.size(), r.qdq.int16_activations, util::Join(r.qdq.int16_nodes, ", "));
  }
  if (r.qdq.bias_corrected > 0) {
    fmt::print("  bias correction: {} conv(s) got bias - (W~ - W) E[x]\n", r.qdq.bias_corrected);
  }
  if (!r.qdq.missing_ranges.empty()) {
    fmt::print("  no range in the table for: {}\n", util::Join(r.qdq.missing_ranges, ", "));
  }
  for (const auto& n : r.qdq.notes) fmt::print("  note: {}\n", n);
  for (const auto& n : r.notes) fmt::print("note: {}\n", WithFlagHint(n));
  if (!r.accuracy) return;
  const auto& a = *r.accuracy;
  if (!r.sensitivity.empty()) {
    fmt::print("sensitivity ({} with only that node quantized, most sensitive first):\n",
               r.sensitivity_metric);
    for (size_t i = 0; i < r.sensitivity.size() && i < 20; ++i) {
      const auto& s = r.sensitivity[i];
      fmt::print("  {:<3} {} ({})  {:.4g}{}\n", i + 1, s.node, s.op_type, s.alone,
                 s.has_cumulative
                     ? fmt::format("   with the worst {} raised: {:.4g}", i + 1, s.cumulative)
                     : "");
    }
    if (r.sensitivity.size() > 20) {
      fmt::print("  ... {} more in --json\n", r.sensitivity.size() - 20);
    }
  }
  if (r.target) {
    for (const auto& f : r.fallback) {
      fmt::print("mixed precision: raised {} ({}) to {}: {} {:.4g} -> {:.4g}{}\n", f.node,
                 f.op_type, f.precision, r.target->metric, f.before, f.after,
                 f.kept ? "" : " (lower: undone)");
    }
    fmt::print("mixed precision: target {} {} with {} node(s) raised ({} int16, {} float){}\n",
               r.target->Text(), r.target_reached ? "reached" : "NOT reached",
               r.final_qdq.int16_nodes.size() + r.final_qdq.fallback_nodes.size(),
               r.final_qdq.int16_nodes.size(), r.final_qdq.fallback_nodes.size(),
               r.target_reached ? "" : " (raise --max-raised, or try --method mse)");
  }
  fmt::print("accuracy on {} evaluation samples:\n", a.samples);
  for (const auto& t : a.tasks) fmt::print("  {} ({}): {}\n", t.output, t.task, t.Describe());
  for (const auto& n : a.notes) fmt::print("  note: {}\n", n);
  for (const auto& out : a.outputs) {
    fmt::print("  {}  sqnr {:.1f} dB  cosine {:.6f}  max_abs {:.4g}\n", out.name, out.sqnr_db,
               out.cosine, out.max_abs);
    for (size_t i = 0; i < out.float_quantiles.size(); ++i) {
      fmt::print("    p{:<3} float {:<12.6g} qdq {:.6g}\n", quant::kQuantileLevels[i],
                 out.float_quantiles[i], out.qdq_quantiles[i]);
    }
  }
  for (const auto& t : a.thresholds) {
    fmt::print(
        "  threshold {}: float {} keeps {:.4f}% above; use {:.6g} on the QDQ output "
        "({:.4f}% above); above-threshold IoU float vs QDQ {:.3f} ({:.3f} at {:.6g})\n",
        t.output, t.float_threshold, 100 * t.float_fraction_above, t.qdq_threshold,
        100 * t.qdq_fraction_above, t.iou, t.mapped_iou, t.qdq_threshold);
  }
  fmt::print("tensors where the error grows most:\n");
  for (const auto& w : a.worst) {
    std::string hint = w.suggestion == "per-channel"  ? "try --per-channel"
                       : w.suggestion == "percentile" ? "try --method percentile"
                                                      : "try --exclude-nodes " + w.node;
    fmt::print("  {} ({} {})  {:.1f} dB (inputs {:.1f} dB, {:+.1f} dB): {}; {}\n", w.tensor,
               w.op_type, w.node, w.sqnr_db, w.input_sqnr_db, -w.growth_db, w.detail, hint);
  }
}

int RunQuantizeCalibrate(const QuantizeCalibrateOptions& o) {
  ApplyOrtCompatibleFlag(o.ort_compatible);
  // Without --data, --table names the table to apply (a segment reusing the whole model's).
  if (o.quant.data.empty() && o.table.empty()) {
    ThrowUsage("give --data DIR to calibrate, or --table TABLE.json without --data to apply it");
  }
  stages::QuantizeStageOptions options;
  options.request = QuantizeRequestFromFlags(o.quant, o.threads);
  options.request.thresholds = ParseThresholds(o.thresholds);
  options.request.evaluate = !o.no_eval;
  options.request.progress = Progress();
  options.prepare = !o.quant.no_prepare;
  if (o.quant.data.empty()) options.table_in = o.table;
  io::Model model = io::Load(o.model);
  quant::QuantizeCalibrateResult r = stages::QuantizeStage(model, options);
  // Everything is computed before anything is written, and the table, the cache and the model
  // (with its data files) are committed together: an error leaves none of them.
  io::OutputSet outputs;
  if (!o.table.empty() && !o.quant.data.empty()) {
    outputs.Add(o.table).Write(util::DumpJson(r.table.ToJson(), 2) + "\n");
  }
  if (!o.trt_cache.empty()) outputs.Add(o.trt_cache).Write(r.table.ToTensorRtCache());
  if (!o.qdq.output.empty()) SaveModel(r.qdq_model, o.qdq, &outputs);
  outputs.Commit();
  if (o.json) {
    PrintJson(quant::ReportJson(r));
  } else {
    PrintText(r);
  }
  // A missed accuracy target is a failed check (exit 1), after the report and the files.
  return r.target && !r.target_reached ? kExitCheckFailed : kExitOk;
}

}  // namespace

void RegisterQuantizeCalibrate(CLI::App& app, RunFn& run) {
  auto o = std::make_shared<QuantizeCalibrateOptions>();
  auto* cmd =
      app.add_subcommand("quantize-calibrate",
                         "Calibrate INT8 ranges on samples; write a table, a TensorRT cache, "
                         "a QDQ model and an accuracy report");
  cmd->footer(
      "Samples: DIR/<id>.<input>.npy (or .pb), one file per input; or images with a "
      "preprocessing spec.\nExample:\n  porttool quantize-calibrate det.onnx --data calib/ "
      "--resize 640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --per-channel "
      "--method entropy --table det.table.json --qdq det.qdq.onnx");
  AddModelArg(*cmd, o->model);
  AddQuantizeOptions(*cmd, o->quant);
  cmd->add_option("--table", o->table,
                  "Write the calibration table (JSON); without --data, apply this table instead "
                  "(e.g. to a segment that split wrote)")
      ->type_name(kOutputFileType);
  cmd->add_option("--trt-cache", o->trt_cache, "Write a TensorRT calibration cache")
      ->type_name(kOutputFileType);
  cmd->add_option("--qdq", o->qdq.output, "Write the QDQ model")->type_name(kOutputFileType);
  cmd->add_flag("--no-eval", o->no_eval, "Calibrate on every sample and skip the accuracy report");
  cmd->add_option("--threshold", o->thresholds,
                  "OUTPUT:VALUE: report the QDQ threshold keeping the same fraction above");
  AddOrtCompatibleFlag(*cmd, o->ort_compatible);
  cmd->add_option("--threads", o->threads, "Samples calibrated in parallel")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  AddJsonFlag(*cmd, o->json);
  cmd->callback([o, &run] { run = [o] { return RunQuantizeCalibrate(*o); }; });
}

}  // namespace porttool::cli
