#include "lib/quant/quantize_calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/util/error.h"
#include "lib/util/sha256.h"

namespace porttool::quant {
namespace {

// Only what InsertQdq may quantize needs a histogram; binning the rest (HardSwish internals,
// shape chains) would double calibration time for nothing. Its table entries are min/max ranges.
std::set<std::string> HistogramTensors(const io::Model& model, Method method) {
  if (method == Method::kMinMax) return {};
  return QuantizableActivations(model.proto.graph());
}

double WorstOutputSqnr(const AccuracyReport& a) {
  double worst = std::numeric_limits<double>::infinity();
  for (const auto& o : a.outputs) worst = std::min(worst, o.sqnr_db);
  return worst;
}

// The node whose output lost the most dB and is not kept float yet (the report lists quantized
// nodes only, largest loss first).
const LayerError* NextToKeepFloat(const AccuracyReport& a, const std::vector<std::string>& kept) {
  for (const auto& w : a.worst) {
    if (w.growth_db > 0 && !w.node.empty() &&
        std::find(kept.begin(), kept.end(), w.node) == kept.end()) {
      return &w;
    }
  }
  return nullptr;
}

}  // namespace

QuantizeCalibrateResult QuantizeCalibrate(const io::Model& model,
                                          const QuantizeCalibrateRequest& request) {
  QuantizeCalibrateResult result;
  // Planning a session reports an op the executor lacks before any sample is read.
  std::vector<runtime::InputSpec> inputs = runtime::Session(model).inputs();
  std::optional<SampleSet> eval;
  if (!request.eval_dir.empty()) eval = ListSamples(request.eval_dir, inputs, request.preprocess);
  if (request.table) {
    result.table = *request.table;
  } else {
    if (request.data_dir.empty()) ThrowUsage("calibration needs a sample directory or a table");
    SampleSet data = ListSamples(request.data_dir, inputs, request.preprocess);
    if (!eval && request.evaluate && data.size() >= 2) {
      eval = TakeLast(data, std::max<size_t>(1, data.size() / 4));
      result.notes.push_back(fmt::format(
          "held out the last {} of {} samples for evaluation (give an evaluation directory to "
          "calibrate on all of them)",
          eval->size(), data.size() + eval->size()));
    }
    CollectOptions collect{.threads = request.calibration.threads,
                           .histogram_tensors = HistogramTensors(model, request.calibration.method),
                           .histogram_values = request.calibration.histogram_values};
    StatsMap stats = CollectStats(model, data, collect, request.progress);
    result.table = BuildTable(stats, request.calibration);
    result.calibration_samples = data.size();
    if (!model.path.empty()) result.table.model_sha256 = util::Sha256File(model.path);
    if (data.images) result.table.preprocess = data.preprocess;
    for (const auto& [name, s] : stats) {
      if (s.stats.nonfinite() > 0) {
        result.notes.push_back(fmt::format(
            "tensor '{}' had {} NaN/Inf values (ignored in its range)", name, s.stats.nonfinite()));
      }
    }
  }
  const bool evaluate = eval && request.evaluate && eval->size() > 0;
  if (evaluate) result.eval_samples = eval;
  if (request.target_sqnr_db && !evaluate) {
    ThrowUsage(
        "a target SQNR needs evaluation samples (the held-out part of the data or an "
        "evaluation directory)");
  }
  AccuracyOptions options;
  options.thresholds = request.thresholds;
  options.per_channel = request.qdq.per_channel;
  options.method = result.table.method;
  options.threads = request.calibration.threads;
  QdqOptions qdq = request.qdq;
  result.target_sqnr_db = request.target_sqnr_db;
  for (;;) {
    result.qdq_model = model;
    result.qdq = InsertQdq(result.qdq_model, result.table, qdq);
    if (!evaluate) break;
    result.accuracy = EvaluateAccuracy(model, result.qdq_model, *eval, options);
    if (!request.target_sqnr_db) break;
    const double worst = WorstOutputSqnr(*result.accuracy);
    result.target_reached = worst >= *request.target_sqnr_db;
    if (result.target_reached ||
        static_cast<int>(result.fallback.size()) >= request.max_float_nodes) {
      break;
    }
    const LayerError* next = NextToKeepFloat(*result.accuracy, qdq.fallback_nodes);
    if (next == nullptr) break;
    result.fallback.push_back({next->node, next->op_type, worst});
    qdq.fallback_nodes.push_back(next->node);
  }
  return result;
}

}  // namespace porttool::quant

namespace porttool::quant {
namespace {
nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
}  // namespace

nlohmann::json ReportJson(const QuantizeCalibrateResult& r) {
  nlohmann::json excluded = nlohmann::json::array();
  for (const auto& e : r.qdq.excluded) {
    excluded.push_back({{"node", e.node}, {"op_type", e.op_type}, {"reason", e.reason}});
  }
  nlohmann::json j = {
      {"method", r.table.method},
      {"calibration_samples", r.calibration_samples},
      {"tensors", r.table.tensors.size()},
      {"preprocessing", r.table.preprocess ? r.table.preprocess->ToJson() : nlohmann::json()},
      {"qdq",
       {{"quantized_nodes", r.qdq.quantized_nodes},
        {"quantized_weights", r.qdq.quantized_weights},
        {"quantized_activations", r.qdq.quantized_activations},
        {"missing_ranges", r.qdq.missing_ranges},
        {"excluded", excluded},
        {"notes", r.qdq.notes}}},
      {"notes", r.notes},
      {"accuracy", nullptr}};
  if (r.target_sqnr_db) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& f : r.fallback) {
      kept.push_back(
          {{"node", f.node}, {"op_type", f.op_type}, {"sqnr_db_before", Num(f.sqnr_db_before)}});
    }
    j["mixed_precision"] = {
        {"target_sqnr_db", *r.target_sqnr_db}, {"reached", r.target_reached}, {"kept_float", kept}};
  }
  if (!r.accuracy) return j;
  const AccuracyReport& a = *r.accuracy;
  nlohmann::json outputs = nlohmann::json::array(), worst = nlohmann::json::array(),
                 thresholds = nlohmann::json::array();
  for (const auto& o : a.outputs) {
    nlohmann::json q = nlohmann::json::object();
    for (size_t i = 0; i < o.float_quantiles.size(); ++i) {
      q[fmt::format("p{}", kQuantileLevels[i])] = {{"float", o.float_quantiles[i]},
                                                   {"qdq", o.qdq_quantiles[i]}};
    }
    outputs.push_back({{"name", o.name},
                       {"sqnr_db", Num(o.sqnr_db)},
                       {"cosine", Num(o.cosine)},
                       {"max_abs", o.max_abs},
                       {"quantiles", q}});
  }
  for (const auto& t : a.thresholds) {
    thresholds.push_back({{"output", t.output},
                          {"float_threshold", t.float_threshold},
                          {"qdq_threshold", t.qdq_threshold},
                          {"float_fraction_above", t.float_fraction_above},
                          {"qdq_fraction_above", t.qdq_fraction_above},
                          {"iou", t.iou},
                          {"mapped_iou", t.mapped_iou}});
  }
  for (const auto& w : a.worst) {
    worst.push_back({{"tensor", w.tensor},
                     {"op_type", w.op_type},
                     {"node", w.node},
                     {"sqnr_db", w.sqnr_db},
                     {"input_sqnr_db", w.input_sqnr_db},
                     {"growth_db", w.growth_db},
                     {"suggestion", w.suggestion},
                     {"detail", w.detail}});
  }
  j["accuracy"] = {{"samples", a.samples},
                   {"outputs", outputs},
                   {"thresholds", thresholds},
                   {"worst_tensors", worst}};
  return j;
}

}  // namespace porttool::quant
