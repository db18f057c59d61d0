// `porttool quantize-calibrate`: calibrate INT8 ranges on sample data (or reuse a table), write
// the calibration table, a TensorRT cache and a QDQ model, and report the accuracy cost.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include "lib/io/atomic_file.h"
#include "lib/quant/quantize_calibrate.h"
#include "lib/runtime/process_settings.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"
#include "passes/transform.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct QuantizeCalibrateOptions {
  std::string model, data, eval_data, table, trt_cache, preprocess_file;
  std::string method = "percentile";
  double percentile = 99.999;
  bool per_channel = false, symmetric = false, json = false, no_eval = false, no_prepare = false;
  std::vector<std::string> exclude_ops, exclude_nodes, thresholds;
  std::string resize, layout = "NCHW", channel_order = "RGB";
  double scale = 1.0 / 255.0;
  std::vector<double> mean = {0, 0, 0}, std = {1, 1, 1};
  int threads = 1, crops = 0, max_float_nodes = 8;
  std::optional<double> target_sqnr;
  int64_t histogram_values = quant::kDefaultHistogramValues;
  ModelOutputOptions qdq;
};

std::optional<quant::Preprocess> PreprocessFrom(const QuantizeCalibrateOptions& o) {
  if (!o.preprocess_file.empty()) {
    std::ifstream in(o.preprocess_file);
    if (!in) ThrowBadInput("cannot read preprocessing spec '{}'", o.preprocess_file);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) ThrowBadInput("'{}' is not valid JSON", o.preprocess_file);
    return quant::Preprocess::FromJson(j, o.preprocess_file);
  }
  quant::Preprocess p;
  if (!o.resize.empty()) {
    auto parts = util::Split(o.resize, 'x');
    if (parts.size() != 2) ThrowUsage("--resize takes WxH, got '{}'", o.resize);
    p.width = std::stoll(parts[0]);
    p.height = std::stoll(parts[1]);
  }
  p.layout = o.layout;
  p.channel_order = o.channel_order;
  p.scale = o.scale;
  p.mean = o.mean;
  p.std = o.std;
  p.crops = o.crops;
  p.Validate("preprocessing flags");
  return p;
}

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

void PrintText(const quant::QuantizeCalibrateResult& r, const QuantizeCalibrateOptions& o) {
  fmt::print("calibrated {} tensors ({}, {} samples)\n", r.table.tensors.size(), r.table.method,
             r.calibration_samples);
  fmt::print("QDQ: {} nodes, {} weights, {} activations quantized\n", r.qdq.quantized_nodes,
             r.qdq.quantized_weights, r.qdq.quantized_activations);
  for (const auto& e : r.qdq.excluded) {
    fmt::print("  kept float: {} ({}): {}\n", e.node, e.op_type, e.reason);
  }
  if (!r.qdq.missing_ranges.empty()) {
    fmt::print("  no range in the table for: {}\n", util::Join(r.qdq.missing_ranges, ", "));
  }
  for (const auto& n : r.qdq.notes) fmt::print("  note: {}\n", n);
  for (const auto& n : r.notes) fmt::print("note: {}\n", n);
  if (!r.accuracy) return;
  const auto& a = *r.accuracy;
  if (r.target_sqnr_db) {
    for (const auto& f : r.fallback) {
      fmt::print("mixed precision: kept {} ({}) float (worst output was {:.1f} dB)\n", f.node,
                 f.op_type, f.sqnr_db_before);
    }
    fmt::print("mixed precision: target {:.1f} dB {} with {} node(s) kept float{}\n",
               *r.target_sqnr_db, r.target_reached ? "reached" : "NOT reached", r.fallback.size(),
               r.target_reached ? "" : " (raise --max-float-nodes, or try --method mse)");
  }
  fmt::print("accuracy on {} evaluation samples:\n", a.samples);
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
  (void)o;
}

// The exact conv fusions before calibration; returns one note saying what changed.
std::vector<std::string> Prepare(io::Model& model) {
  passes::PassContext context;
  passes::TransformReport report = passes::PrepareForQuantization(model, context);
  int fused = report.nodes_before - report.nodes_after;
  if (fused == 0) return {};
  std::vector<std::string> ops;
  for (const auto& [op, before] : report.ops_before) {
    auto it = report.ops_after.find(op);
    int after = it == report.ops_after.end() ? 0 : it->second;
    if (before > after && op != "Constant") ops.push_back(fmt::format("{} {}", before - after, op));
  }
  return {
      fmt::format("prepared for quantization: folded {} into the convs' weights and biases "
                  "(exact; tables and QDQ model use the prepared graph; --no-prepare keeps "
                  "the graph as it is)",
                  util::Join(ops, ", "))};
}

int RunQuantizeCalibrate(const QuantizeCalibrateOptions& o) {
  // Without --data, --table names the table to apply (a segment reusing the whole model's).
  if (o.data.empty() && o.table.empty()) {
    ThrowUsage("give --data DIR to calibrate, or --table TABLE.json without --data to apply it");
  }
  std::string table_in = o.data.empty() ? o.table : "";
  io::Model model = io::Load(o.model);
  std::vector<std::string> prepare_notes;
  if (!o.no_prepare) prepare_notes = Prepare(model);
  // Samples run in parallel threads; kernels then stay single-threaded so they do not compete.
  if (o.threads > 1) runtime::ApplyProcessSettings({.threads = 1});
  quant::QuantizeCalibrateRequest req;
  req.data_dir = o.data;
  req.eval_dir = o.eval_data;
  req.calibration.method = quant::ParseMethod(o.method);
  req.calibration.percentile = o.percentile;
  req.calibration.symmetric_activations = o.symmetric;
  req.calibration.threads = o.threads;
  req.calibration.histogram_values = o.histogram_values;
  req.qdq = {.per_channel = o.per_channel,
             .exclude_ops = o.exclude_ops,
             .exclude_nodes = o.exclude_nodes,
             .fallback_nodes = {}};
  req.thresholds = ParseThresholds(o.thresholds);
  req.evaluate = !o.no_eval;
  req.target_sqnr_db = o.target_sqnr;
  req.max_float_nodes = o.max_float_nodes;
  req.progress = Progress();
  if (!table_in.empty()) {
    std::ifstream in(table_in);
    if (!in) ThrowBadInput("cannot read table '{}'", table_in);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) ThrowBadInput("'{}' is not valid JSON", table_in);
    req.table = quant::CalibrationTable::FromJson(j, table_in);
  }
  // Used only when the samples are images; written into the table with it.
  req.preprocess = PreprocessFrom(o);
  quant::QuantizeCalibrateResult r = quant::QuantizeCalibrate(model, req);
  r.notes.insert(r.notes.begin(), prepare_notes.begin(), prepare_notes.end());
  // Everything is computed before anything is written: an error leaves no partial output.
  if (!o.table.empty() && table_in.empty()) {
    io::WriteFileAtomic(o.table, util::DumpJson(r.table.ToJson(), 2) + "\n");
  }
  if (!o.trt_cache.empty()) io::WriteFileAtomic(o.trt_cache, r.table.ToTensorRtCache());
  if (!o.qdq.output.empty()) SaveModel(r.qdq_model, o.qdq);
  if (o.json) {
    PrintJson(quant::ReportJson(r));
  } else {
    PrintText(r, o);
  }
  return kExitOk;
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
  cmd->add_option("--data", o->data, "Calibration samples directory")->check(CLI::ExistingPath);
  cmd->add_option("--method", o->method,
                  "minmax | percentile | entropy | mse (the range with the least squared error)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}))
      ->capture_default_str();
  cmd->add_option("--percentile", o->percentile, "Percentile of |x| kept (percentile method)")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--histogram-values", o->histogram_values,
                  "Values per tensor and sample binned for percentile/entropy, evenly strided "
                  "(min/max stay exact); 0 bins every value, about 2x slower on PP-OCRv4 det")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--per-channel", o->per_channel,
                "Per-output-channel weight scales (axis 0 Conv, 1 ConvTranspose/MatMul)");
  cmd->add_flag("--symmetric-activations", o->symmetric,
                "int8 activations with zero point 0 (default: uint8 asymmetric)");
  cmd->add_flag("--no-prepare", o->no_prepare,
                "Keep the graph as it is: by default BatchNormalization and constant Mul/Add "
                "after a conv are folded into it first (exact), as ONNX Runtime's "
                "quant_pre_process does, so they do not cost a requantization each");
  cmd->add_option("--exclude-ops", o->exclude_ops, "Op types to keep float")->delimiter(',');
  cmd->add_option("--exclude-nodes", o->exclude_nodes, "Node names to keep float")->delimiter(',');
  cmd->add_option("--table", o->table,
                  "Write the calibration table (JSON); without --data, apply this table instead "
                  "(e.g. to a segment that split wrote)");
  cmd->add_option("--trt-cache", o->trt_cache, "Write a TensorRT calibration cache");
  cmd->add_option("--qdq", o->qdq.output, "Write the QDQ model");
  cmd->add_option("--eval-data", o->eval_data,
                  "Evaluation samples (default: the last quarter of --data is held out)")
      ->check(CLI::ExistingPath);
  cmd->add_flag("--no-eval", o->no_eval, "Calibrate on every sample and skip the accuracy report");
  cmd->add_option("--target-sqnr", o->target_sqnr,
                  "Mixed precision: while an output's SQNR (dB) is below this, keep the node that "
                  "loses the most float and evaluate again (each kept node is listed)");
  cmd->add_option("--max-float-nodes", o->max_float_nodes,
                  "With --target-sqnr: stop after keeping this many nodes float")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--threshold", o->thresholds,
                  "OUTPUT:VALUE: report the QDQ threshold keeping the same fraction above");
  cmd->add_option("--preprocess", o->preprocess_file, "Image preprocessing spec (JSON)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--resize", o->resize, "Images: resize to WxH (bilinear)");
  cmd->add_option("--layout", o->layout, "Images: NCHW | NHWC")->capture_default_str();
  cmd->add_option("--channel-order", o->channel_order, "Images: RGB | BGR")->capture_default_str();
  cmd->add_option("--scale", o->scale, "Images: pixel multiplier before mean/std")
      ->capture_default_str();
  cmd->add_option("--mean", o->mean, "Images: per-channel mean (after scale)")->delimiter(',');
  cmd->add_option("--std", o->std, "Images: per-channel std (after scale)")->delimiter(',');
  cmd->add_option("--crops", o->crops,
                  "Images: also calibrate on N fixed 60% crops of each (augmentation, 0-8)")
      ->check(CLI::Range(0, 8));
  cmd->add_option("--threads", o->threads, "Samples calibrated in parallel")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  AddJsonFlag(*cmd, o->json);
  cmd->callback([o, &run] { run = [o] { return RunQuantizeCalibrate(*o); }; });
}

}  // namespace porttool::cli
