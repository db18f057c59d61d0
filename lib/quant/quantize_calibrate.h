// The quantize-calibrate stage as one function: calibrate on a sample directory (or take an
// existing table, e.g. for a segment that `split` wrote), emit the QDQ model, and evaluate it on
// held-out or given samples. The CLI only parses flags and writes what this returns.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "lib/quant/accuracy.h"
#include "lib/quant/calibrate.h"
#include "lib/quant/qdq.h"

namespace porttool::quant {

struct QuantizeCalibrateRequest {
  std::filesystem::path data_dir;  // empty: use `table`
  std::filesystem::path eval_dir;  // empty: hold out a quarter of data_dir (at least one sample)
  std::optional<Preprocess> preprocess;
  std::optional<CalibrationTable> table;
  CalibrationOptions calibration;
  QdqOptions qdq;
  bool evaluate = true;
  std::map<std::string, double> thresholds;
  // Mixed precision: while an output's SQNR is below target_sqnr_db, keep the quantized node
  // whose output loses the most dB float and evaluate again, up to max_float_nodes nodes.
  std::optional<double> target_sqnr_db;
  int max_float_nodes = 8;
  ProgressFn progress;
};

// One round of the mixed-precision search: the node kept float and the worst output SQNR before.
struct FallbackStep {
  std::string node, op_type;
  double sqnr_db_before = 0;
};

struct QuantizeCalibrateResult {
  CalibrationTable table;
  io::Model qdq_model;
  QdqResult qdq;
  std::optional<AccuracyReport> accuracy;
  std::optional<SampleSet> eval_samples;  // what accuracy was measured on (held out or given)
  size_t calibration_samples = 0;
  std::vector<std::string> notes;
  std::optional<double> target_sqnr_db;  // the request's
  std::vector<FallbackStep> fallback;    // in order; empty without a target
  bool target_reached = false;
};

QuantizeCalibrateResult QuantizeCalibrate(const io::Model& model,
                                          const QuantizeCalibrateRequest& request);

}  // namespace porttool::quant

namespace porttool::quant {
// The report (--json): table summary, QDQ changes, exclusions, accuracy. Non-finite numbers
// (an exact match's SQNR) become null.
nlohmann::json ReportJson(const QuantizeCalibrateResult& result);
}  // namespace porttool::quant
