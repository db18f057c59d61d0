#include "lib/quant/quantize_calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "lib/quant/equalize.h"
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

// What the sensitivity ranking measures: the target's metric, else the first task's headline
// figure, else SQNR.
std::string RankingMetric(const QuantizeCalibrateRequest& r, const AccuracyReport& a) {
  if (r.target) return r.target->metric;
  for (const auto& t : a.tasks) {
    if (t.kind == TaskKind::kCtc) return "seq";
    if (t.kind == TaskKind::kDetectDb) return "hmean";
    if (t.kind == TaskKind::kClassify) return "top1";
  }
  return "sqnr";
}

double MetricOf(const AccuracyReport& a, const std::string& metric) {
  std::optional<double> v = a.Metric(metric);
  if (!v) {
    ThrowUsage(
        "--accuracy-target {}: no output reports '{}' (seq/char need --task ctc, hmean --task "
        "detect-db, top1/top5 --task classify)",
        metric, metric);
  }
  return *v;
}

// `metric` of the model quantized with `qdq`, outputs only (no per-tensor observation): the one
// evaluation the ranking and the cumulative figures repeat.
double MetricWith(const io::Model& model, const CalibrationTable& table, const QdqOptions& qdq,
                  const SampleSet& eval, AccuracyOptions options, const std::string& metric) {
  options.per_tensor = false;
  io::Model m = model;
  InsertQdq(m, table, qdq);
  return MetricOf(EvaluateAccuracy(model, m, eval, options), metric);
}

// Quantizes one node at a time (every other quantized node kept float) and ranks the nodes by the
// metric, lowest first. Outputs only: one evaluation per node.
std::vector<NodeSensitivity> RankNodes(const io::Model& model, const CalibrationTable& table,
                                       const QdqOptions& base, const io::Model& full_qdq,
                                       const SampleSet& eval, AccuracyOptions options,
                                       const std::string& metric) {
  std::vector<NodeSensitivity> ranking;
  std::vector<std::string> names;
  for (const auto* n : QuantizedNodes(full_qdq.proto.graph())) {
    names.push_back(n->name());
    ranking.push_back({n->name(), n->op_type(), 0, 0, false});
  }
  for (auto& entry : ranking) {
    QdqOptions one = base;
    for (const auto& n : names) {
      if (n != entry.node) one.fallback_nodes.push_back(n);
    }
    entry.alone = MetricWith(model, table, one, eval, options, metric);
  }
  std::stable_sort(
      ranking.begin(), ranking.end(),
      [](const NodeSensitivity& a, const NodeSensitivity& b) { return a.alone < b.alone; });
  return ranking;
}

// Marks the table's entries that `int16_nodes` read (their activation inputs) as int16.
void MarkInt16(const io::Model& model, const std::vector<std::string>& int16_nodes,
               CalibrationTable& table) {
  const std::set<std::string> wide(int16_nodes.begin(), int16_nodes.end());
  for (const auto& n : model.proto.graph().node()) {
    if (!wide.count(n.name())) continue;
    for (const auto& in : n.input()) {
      if (auto it = table.tensors.find(in); it != table.tensors.end()) it->second.int16 = true;
    }
  }
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One step of the search: the next most sensitive node not tried yet (or the one losing most dB
// without a ranking) to int16 activations, or to float when int16 is off; once max_raised nodes
// are raised, the int16 ones to float in the order they were raised. `tried` holds
// "int16:NODE" / "float:NODE" for every step taken (kept or undone). False when nothing is left.
bool RaiseNext(const QuantizeCalibrateRequest& request, const AccuracyReport& accuracy,
               QdqOptions& qdq, QuantizeCalibrateResult& result, double value,
               std::set<std::string>& tried) {
  const std::string first = request.int16_first ? "int16:" : "float:";
  auto raised = [&](const std::string& n) {
    return Contains(qdq.fallback_nodes, n) || Contains(qdq.int16_nodes, n) ||
           tried.count(first + n);
  };
  const size_t count = qdq.int16_nodes.size() + qdq.fallback_nodes.size() -
                       request.qdq.int16_nodes.size() - request.qdq.fallback_nodes.size();
  std::string next, op;
  if (static_cast<int>(count) < request.max_raised) {
    for (const auto& s : result.sensitivity) {
      if (!raised(s.node)) {
        next = s.node, op = s.op_type;
        break;
      }
    }
    if (result.sensitivity.empty()) {
      std::vector<std::string> all = qdq.fallback_nodes;
      all.insert(all.end(), qdq.int16_nodes.begin(), qdq.int16_nodes.end());
      for (const auto& t : tried) all.push_back(t.substr(t.find(':') + 1));
      if (const LayerError* w = NextToKeepFloat(accuracy, all)) next = w->node, op = w->op_type;
    }
  }
  if (!next.empty()) {
    const bool wide = request.int16_first;
    tried.insert(first + next);
    result.fallback.push_back({next, op, wide ? "int16" : "float", value, value, true});
    (wide ? qdq.int16_nodes : qdq.fallback_nodes).push_back(next);
    return true;
  }
  // Every raise is used: the int16 nodes of the search go on to float, in order.
  for (size_t i = request.qdq.int16_nodes.size(); i < qdq.int16_nodes.size(); ++i) {
    next = qdq.int16_nodes[i];
    if (tried.count("float:" + next)) continue;
    for (const auto& f : result.fallback) {
      if (f.node == next) op = f.op_type;
    }
    tried.insert("float:" + next);
    qdq.int16_nodes.erase(qdq.int16_nodes.begin() + static_cast<std::ptrdiff_t>(i));
    qdq.fallback_nodes.push_back(next);
    result.fallback.push_back({next, op, "float", value, value, true});
    return true;
  }
  return false;
}

// The metric with the k most sensitive nodes raised to float, k = 1..max_raised.
void AddCumulative(const io::Model& model, QdqOptions qdq, const SampleSet& eval,
                   AccuracyOptions options, QuantizeCalibrateResult& result, int max_raised) {
  for (int k = 0; k < max_raised && k < static_cast<int>(result.sensitivity.size()); ++k) {
    NodeSensitivity& s = result.sensitivity[k];
    qdq.fallback_nodes.push_back(s.node);
    s.cumulative = MetricWith(model, result.table, qdq, eval, options, result.sensitivity_metric);
    s.has_cumulative = true;
  }
}

}  // namespace

AccuracyTarget ParseAccuracyTarget(const std::string& text) {
  static const std::set<std::string> kShares = {"seq", "char", "hmean", "top1", "top5"};
  const size_t colon = text.find(':');
  AccuracyTarget t;
  t.metric = text.substr(0, colon);
  if (colon == std::string::npos) {
    ThrowUsage("--accuracy-target '{}': expected METRIC:VALUE, e.g. seq:0.97 or sqnr:30", text);
  }
  if (t.metric != "sqnr" && !kShares.count(t.metric)) {
    ThrowUsage(
        "--accuracy-target '{}': unknown metric '{}'; available: sqnr (dB), seq, char (--task "
        "ctc), hmean (--task detect-db), top1, top5 (--task classify)",
        text, t.metric);
  }
  const std::string value = text.substr(colon + 1);
  size_t used = 0;
  try {
    t.value = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool sqnr = t.metric == "sqnr";
  const bool in_range = sqnr ? t.value > 0 && t.value <= 200 : t.value > 0 && t.value <= 1;
  if (used == 0 || used != value.size() || !in_range) {
    ThrowUsage("--accuracy-target '{}': {} takes {}, got '{}'", text, t.metric,
               sqnr ? "a number of dB above 0, at most 200" : "a share above 0, at most 1", value);
  }
  return t;
}

std::string AccuracyTarget::Text() const { return fmt::format("{}:{:g}", metric, value); }

RequestSamples ListRequestSamples(const io::Model& model, const QuantizeCalibrateRequest& request) {
  // Planning a session reports an op the executor lacks before any sample is read.
  std::vector<runtime::InputSpec> inputs = runtime::Session(model).inputs();
  RequestSamples r;
  if (!request.eval_dir.empty()) r.eval = ListSamples(request.eval_dir, inputs, request.preprocess);
  if (!request.table && request.data_dir.empty()) {
    ThrowUsage("calibration needs a sample directory or a table");
  }
  if (request.table && request.equalize) {
    ThrowUsage(
        "channel equalization rescales tensors a given table has ranges for: calibrate in "
        "the same run (give the samples, not a table)");
  }
  if (!request.data_dir.empty() && (!request.table || request.bias_correction)) {
    r.calibration = ListSamples(request.data_dir, inputs, request.preprocess);
    if (!request.table) {
      r.calibration_ids.insert(r.calibration->ids.begin(), r.calibration->ids.end());
    }
    if (!request.table && !r.eval && request.evaluate && r.calibration->size() >= 2) {
      r.eval = TakeLast(*r.calibration, std::max<size_t>(1, r.calibration->size() / 4));
      r.notes.push_back(fmt::format(
          "held out the last {} of {} samples for evaluation (give an evaluation directory to "
          "calibrate on all of them)",
          r.eval->size(), r.calibration->size() + r.eval->size()));
    }
  }
  return r;
}

std::optional<EqualizeResult> EqualizeForRequest(io::Model& model,
                                                 const QuantizeCalibrateRequest& request,
                                                 const SampleSet& calibration,
                                                 std::vector<std::string>& notes) {
  if (!request.equalize) return std::nullopt;
  if (!request.qdq.per_channel) {
    notes.push_back(
        "channel equalization skipped: with per-tensor weights the rescaled channels would "
        "cost weight precision (use per-channel weights)");
    return std::nullopt;
  }
  EqualizeResult r = EqualizeChannels(
      model, CollectConvInputMeans(model, calibration, request.calibration.threads));
  if (std::string note = r.Note(); !note.empty()) notes.push_back(note);
  return r;
}

QuantizeCalibrateResult QuantizeCalibrate(const io::Model& input,
                                          const QuantizeCalibrateRequest& request) {
  QuantizeCalibrateResult result;
  RequestSamples samples = ListRequestSamples(input, request);
  std::optional<SampleSet>& eval = samples.eval;
  std::optional<SampleSet>& calibration = samples.calibration;
  const std::set<std::string>& calibration_ids = samples.calibration_ids;
  result.notes = samples.notes;
  // Equalization changes the float weights (exactly): the table, the QDQ model and the float
  // reference of the evaluation are all of the equalized model.
  std::optional<io::Model> equalized;
  if (request.equalize) {
    equalized = input;
    if (auto r = EqualizeForRequest(*equalized, request, *calibration, result.notes)) {
      result.equalized = *r;
    } else {
      equalized.reset();
    }
  }
  const io::Model& model = equalized ? *equalized : input;
  if (request.table) {
    result.table = *request.table;
  } else {
    SampleSet& data = *calibration;
    CollectOptions collect{.threads = request.calibration.threads,
                           .histogram_tensors = HistogramTensors(model, request.calibration.method),
                           .histogram_values = request.calibration.histogram_values};
    StatsMap stats = CollectStats(model, data, collect, request.progress);
    result.table = BuildTable(stats, request.calibration);
    result.calibration_samples = data.size();
    result.calibration_samples_used = data;
    if (!model.path.empty()) result.table.model_sha256 = util::Sha256File(model.path);
    if (data.images) result.table.preprocess = data.preprocess;
    for (const auto& [name, s] : stats) {
      if (s.stats.nonfinite() > 0) {
        result.notes.push_back(fmt::format(
            "tensor '{}' had {} NaN/Inf values (ignored in its range)", name, s.stats.nonfinite()));
      }
    }
  }
  QdqOptions base = request.qdq;  // the request's, with the bias correction's means
  if (request.bias_correction) {
    if (!calibration) {
      ThrowUsage(
          "bias correction needs the calibration samples (a sample directory) besides the "
          "table: it averages each conv's input over them");
    }
    base.bias_correction = std::make_shared<const ConvInputMeansMap>(
        CollectConvInputMeans(model, *calibration, request.calibration.threads));
  }
  QdqOptions qdq = base, before_step;
  const bool evaluate = eval && request.evaluate && eval->size() > 0;
  if (evaluate) result.eval_samples = eval;
  if ((request.target || request.sensitivity) && !evaluate) {
    ThrowUsage(
        "{} needs evaluation samples (the held-out part of the data or an evaluation directory)",
        request.target ? "an accuracy target" : "the sensitivity ranking");
  }
  AccuracyOptions options;
  options.thresholds = request.thresholds;
  options.per_channel = request.qdq.per_channel;
  options.method = result.table.method;
  options.threads = request.calibration.threads;
  options.tasks = request.tasks;
  options.labels = request.labels;
  options.known_ids = calibration_ids;
  result.target = request.target;
  std::set<std::string> tried;  // search steps taken, "int16:NODE" / "float:NODE"
  bool stale = false;           // the last evaluation was of an undone step
  for (;;) {
    result.qdq_model = model;
    result.qdq = InsertQdq(result.qdq_model, result.table, qdq);
    if (!evaluate) break;
    result.accuracy = EvaluateAccuracy(model, result.qdq_model, *eval, options);
    if (result.sensitivity_metric.empty() && (request.sensitivity || request.target)) {
      result.sensitivity_metric = RankingMetric(request, *result.accuracy);
      MetricOf(*result.accuracy, result.sensitivity_metric);  // a usage error before the work
      // SQNR has a per-tensor ordering already; task metrics need the ranking.
      if (request.sensitivity || result.sensitivity_metric != "sqnr") {
        result.sensitivity = RankNodes(model, result.table, qdq, result.qdq_model, *eval, options,
                                       result.sensitivity_metric);
      }
    }
    if (!request.target) break;
    double value = MetricOf(*result.accuracy, request.target->metric);
    if (!result.fallback.empty()) {
      FallbackStep& step = result.fallback.back();
      step.after = value;
      for (auto& s : result.sensitivity) {
        if (s.node == step.node && !s.has_cumulative) s.cumulative = value, s.has_cumulative = true;
      }
      // A step that lowers the metric is undone (small evaluation sets are noisy, and a raised
      // node can shift its neighbours' errors): the search goes on from the better state.
      if (value < step.before) {
        step.kept = false;
        qdq = before_step;
        value = step.before;
        stale = true;
      } else {
        stale = false;
      }
    }
    result.target_reached = value >= request.target->value;
    if (result.target_reached) break;
    before_step = qdq;
    if (static_cast<int>(result.fallback.size()) >= 4 * request.max_raised ||
        !RaiseNext(request, *result.accuracy, qdq, result, value, tried)) {
      break;
    }
    stale = false;
  }
  if (stale) {  // the last step was undone: the model and report of the state kept
    result.qdq_model = model;
    result.qdq = InsertQdq(result.qdq_model, result.table, qdq);
    result.accuracy = EvaluateAccuracy(model, result.qdq_model, *eval, options);
  }
  result.final_qdq = qdq;
  MarkInt16(model, qdq.int16_nodes, result.table);
  if (request.sensitivity && !request.target)
    AddCumulative(model, base, *eval, options, result, request.max_raised);
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
        {"int16_activations", r.qdq.int16_activations},
        {"int16_nodes", r.qdq.int16_nodes},
        {"bias_corrected", r.qdq.bias_corrected},
        {"missing_ranges", r.qdq.missing_ranges},
        {"excluded", excluded},
        {"notes", r.qdq.notes}}},
      {"notes", r.notes},
      {"accuracy", nullptr}};
  if (r.target) {
    nlohmann::json kept = nlohmann::json::array(), raised = nlohmann::json::array();
    for (const auto& f : r.fallback) {
      if (!f.kept) {
        raised.push_back({{"node", f.node},
                          {"op_type", f.op_type},
                          {"precision", f.precision},
                          {"metric_before", Num(f.before)},
                          {"metric_after", Num(f.after)},
                          {"kept", false}});
        continue;
      }
      raised.push_back({{"node", f.node},
                        {"op_type", f.op_type},
                        {"precision", f.precision},
                        {"metric_before", Num(f.before)},
                        {"metric_after", Num(f.after)},
                        {"kept", f.kept}});
      kept.push_back({{"node", f.node}, {"op_type", f.op_type}, {"sqnr_db_before", Num(f.before)}});
    }
    j["mixed_precision"] = {{"target", {{"metric", r.target->metric}, {"value", r.target->value}}},
                            {"reached", r.target_reached},
                            {"raised", raised}};
    // The fields of --target-sqnr before task metrics, kept for its readers.
    if (r.target->metric == "sqnr") {
      j["mixed_precision"]["target_sqnr_db"] = r.target->value;
      j["mixed_precision"]["kept_float"] = kept;
    }
  }
  if (!r.sensitivity.empty()) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& s : r.sensitivity) {
      nodes.push_back({{"node", s.node},
                       {"op_type", s.op_type},
                       {"alone", Num(s.alone)},
                       {"cumulative", s.has_cumulative ? Num(s.cumulative) : nlohmann::json()}});
    }
    j["sensitivity"] = {{"metric", r.sensitivity_metric}, {"nodes", nodes}};
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
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : a.tasks) tasks.push_back(TaskJson(t));
  j["accuracy"] = {{"samples", a.samples}, {"tasks", tasks},           {"notes", a.notes},
                   {"outputs", outputs},   {"thresholds", thresholds}, {"worst_tensors", worst}};
  return j;
}

}  // namespace porttool::quant
