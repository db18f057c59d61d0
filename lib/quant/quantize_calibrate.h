// The quantize-calibrate stage as one function: calibrate on a sample directory (or take an
// existing table, e.g. for a segment that `split` wrote), emit the QDQ model, and evaluate it on
// held-out or given samples. The CLI only parses flags and writes what this returns.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/quant/accuracy.h"
#include "lib/quant/calibrate.h"
#include "lib/quant/equalize.h"
#include "lib/quant/qdq.h"

namespace porttool::quant {

// --accuracy-target METRIC:VALUE: sqnr (dB, worst output), or a task metric of
// AccuracyReport::Metric (seq, char, hmean, top1, top5; 0..1), to reach on the evaluation samples.
struct AccuracyTarget {
  std::string metric;
  double value = 0;
  std::string Text() const;  // "seq:0.97"
};
// Error(kUsage) naming `text` for an unknown metric or a value out of its range.
AccuracyTarget ParseAccuracyTarget(const std::string& text);

struct QuantizeCalibrateRequest {
  std::filesystem::path data_dir;  // empty: use `table`
  std::filesystem::path eval_dir;  // empty: hold out a quarter of data_dir (at least one sample)
  std::optional<Preprocess> preprocess;
  std::optional<CalibrationTable> table;
  CalibrationOptions calibration;
  QdqOptions qdq;
  bool evaluate = true;
  // Bias correction (bias_correction.h) from the calibration samples; with a table, data_dir
  // still names them.
  bool bias_correction = false;
  // Channel equalization of linear conv pairs (equalize.h) before calibrating; with
  // per-channel weights only (per-tensor weights would pay for it).
  bool equalize = false;
  std::map<std::string, double> thresholds;
  TaskAssignment tasks;  // per output; regress (SQNR only) by default
  Labels labels;         // ground truth for detect-db / classify, by sample id
  // Mixed precision: while the target does not hold, keep the next quantized node float and
  // evaluate again, up to max_raised nodes. The next node is the most sensitive one (below) when
  // the ranking was computed, else the one whose output loses the most dB.
  std::optional<AccuracyTarget> target;
  int max_raised = 8;
  // Raise to int16 activations (A16W8) first, and to float only once max_raised nodes are int16.
  bool int16_first = true;
  // Per-node sensitivity: quantize one node at a time (its activation inputs and weights),
  // everything else float, and rank the nodes by the metric lost. Computed for a task-metric
  // target, or when asked.
  bool sensitivity = false;
  ProgressFn progress;
};

// One round of the mixed-precision search: the node raised, the metric before and after.
struct FallbackStep {
  std::string node, op_type;
  std::string precision = "float";
  double before = 0, after = 0;
  bool kept = true;  // false: it lowered the metric and was undone
};

// One node of the sensitivity ranking: the metric with only this node quantized; and, after the
// ranking, the metric of the full model with this node and every node ranked before it raised.
struct NodeSensitivity {
  std::string node, op_type;
  double alone = 0, cumulative = 0;
  bool has_cumulative = false;
};

struct QuantizeCalibrateResult {
  CalibrationTable table;
  io::Model qdq_model;
  QdqResult qdq;
  std::optional<AccuracyReport> accuracy;
  std::optional<SampleSet> eval_samples;  // what accuracy was measured on (held out or given)
  // What the table was computed on (the evaluation samples held out); empty with a given table.
  // A vendor toolkit that calibrates again is handed these same samples.
  std::optional<SampleSet> calibration_samples_used;
  size_t calibration_samples = 0;
  std::vector<std::string> notes;
  EqualizeResult equalized;              // with request.equalize
  std::optional<AccuracyTarget> target;  // the request's
  std::vector<FallbackStep> fallback;    // in order; empty without a target
  QdqOptions final_qdq;                  // the options the QDQ model was built with
  bool target_reached = false;
  std::string sensitivity_metric;            // what the ranking measures
  std::vector<NodeSensitivity> sensitivity;  // most sensitive first; empty unless computed
};

// The samples a request calibrates and evaluates on: `eval` from eval_dir, else the last quarter
// of data_dir held out (said in `notes`); `calibration_ids` are the ids labels may name besides
// the evaluation's. Error(kUsage) for a request without data or table, or equalization with a
// table.
struct RequestSamples {
  std::optional<SampleSet> calibration, eval;
  std::set<std::string> calibration_ids;
  std::vector<std::string> notes;
};
RequestSamples ListRequestSamples(const io::Model& model, const QuantizeCalibrateRequest& request);

// Channel equalization of `model` in place as the request asks (per-channel weights only; a
// note says why not otherwise), measured on `calibration`. nullopt: not applied.
std::optional<EqualizeResult> EqualizeForRequest(io::Model& model,
                                                 const QuantizeCalibrateRequest& request,
                                                 const SampleSet& calibration,
                                                 std::vector<std::string>& notes);

QuantizeCalibrateResult QuantizeCalibrate(const io::Model& model,
                                          const QuantizeCalibrateRequest& request);

}  // namespace porttool::quant

namespace porttool::quant {
// The report (--json): table summary, QDQ changes, exclusions, accuracy. Non-finite numbers
// (an exact match's SQNR) become null.
nlohmann::json ReportJson(const QuantizeCalibrateResult& result);
}  // namespace porttool::quant
