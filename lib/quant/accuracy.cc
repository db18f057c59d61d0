#include "lib/quant/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "lib/quant/qdq.h"
#include "lib/runtime/chain.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::quant {
namespace {

using TP = onnx::TensorProto;
constexpr double kCapDb = 60;

struct Accumulator {
  double signal = 0, noise = 0, dot = 0, norm_a = 0, norm_b = 0, max_abs = 0;
  double float_min = INFINITY, float_max = -INFINITY;
  std::vector<float> a, b;
  void Add(const runtime::Tensor& ta, const runtime::Tensor& tb, bool keep) {
    const float* pa = ta.data<float>();
    const float* pb = tb.data<float>();
    for (int64_t i = 0; i < ta.size(); ++i) {
      double x = pa[i], y = pb[i];
      signal += x * x;
      noise += (y - x) * (y - x);
      dot += x * y;
      norm_a += x * x;
      norm_b += y * y;
      max_abs = std::max(max_abs, std::fabs(y - x));
      float_min = std::min(float_min, x);
      float_max = std::max(float_max, x);
    }
    if (keep) {
      a.insert(a.end(), pa, pa + ta.size());
      b.insert(b.end(), pb, pb + tb.size());
    }
  }
  // Adds another sample's sums and values after this one's.
  void Merge(const Accumulator& o) {
    signal += o.signal;
    noise += o.noise;
    dot += o.dot;
    norm_a += o.norm_a;
    norm_b += o.norm_b;
    max_abs = std::max(max_abs, o.max_abs);
    float_min = std::min(float_min, o.float_min);
    float_max = std::max(float_max, o.float_max);
    a.insert(a.end(), o.a.begin(), o.a.end());
    b.insert(b.end(), o.b.begin(), o.b.end());
  }
  double Sqnr() const {
    if (noise == 0) return std::numeric_limits<double>::infinity();
    return 10 * std::log10(signal / noise);
  }
  double Cosine() const {
    if (norm_a == 0 && norm_b == 0) return 1;
    return dot / std::sqrt(norm_a * norm_b);
  }
};

// One evaluation sample: per-tensor and per-output sums of the float and QDQ runs.
struct SampleAccuracy {
  std::map<std::string, Accumulator> outputs, tensors;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, TaskTally> tasks;
};

// `Quantized` is a Session (one QDQ model) or a ChainSession (QDQ segments chained).
template <typename Quantized>
SampleAccuracy RunSample(runtime::Session& fs, Quantized& qs, const SampleSet& eval, size_t s,
                         const AccuracyOptions& options) {
  SampleAccuracy r;
  runtime::TensorMap inputs = LoadSample(eval, s, fs.inputs());
  std::vector<runtime::NamedTensor> fo, qo;
  if (options.per_tensor) {
    // The float run keeps its tensors (one sample at a time) for the QDQ run to compare against.
    std::map<std::string, runtime::Tensor> ref;
    fo = fs.RunObserved(inputs, [&](const runtime::ProducedTensor& p) {
      if (p.value.dtype() == TP::FLOAT && !p.in_subgraph) {
        ref[p.name] = p.value;
        r.producer[p.name] = &p.node;
      }
    });
    qo = qs.RunObserved(inputs, [&](const runtime::ProducedTensor& p) {
      auto it = ref.find(p.name);
      if (it == ref.end() || p.value.shape() != it->second.shape()) return;
      r.tensors[p.name].Add(it->second, p.value, false);
      ref.erase(it);
    });
  } else {
    fo = fs.Run(inputs);
    qo = qs.Run(inputs);
  }
  const std::string& id = eval.ids[s];
  auto label = options.labels.find(id);
  for (size_t i = 0; i < fo.size() && i < qo.size(); ++i) {
    if (fo[i].value.dtype() != TP::FLOAT || fo[i].value.shape() != qo[i].value.shape()) continue;
    // Quantiles and threshold mapping need every output value; a search's repeated evaluations
    // read only the sums and the task figures.
    r.outputs[fo[i].name].Add(fo[i].value, qo[i].value, options.per_tensor);
    const TaskSpec task = options.tasks.For(fo[i].name);
    if (task.kind == TaskKind::kRegress) continue;
    r.tasks[fo[i].name] = ScoreSample(
        task, fo[i].name, id, fo[i].value, qo[i].value,
        label == options.labels.end() ? nullptr : &label->second,
        inputs.size() == 1 ? ImageHw(inputs.begin()->second) : std::pair<int64_t, int64_t>{0, 0});
  }
  return r;
}

// Usage errors for a threshold or task on an unknown output; bad input for a label naming no
// sample.
void CheckOptions(const AccuracyOptions& options, const std::vector<std::string>& names,
                  const SampleSet& eval) {
  auto check = [&](const std::string& out, const char* what) {
    if (std::find(names.begin(), names.end(), out) == names.end()) {
      ThrowUsage("{} for '{}', which is not an output of the model (outputs: {})", what, out,
                 util::Join(names, ", "));
    }
  };
  for (const auto& [out, _] : options.thresholds) check(out, "threshold");
  for (const auto& [out, _] : options.tasks.per_output) check(out, "--task");
  std::set<std::string> ids(eval.ids.begin(), eval.ids.end());
  for (const auto& [id, _] : options.labels) {
    if (!ids.count(id) && !options.known_ids.count(id)) {
      ThrowBadInput(
          "labels name sample '{}', which is neither an evaluation nor a calibration sample "
          "({} evaluation samples, e.g. '{}')",
          id, eval.size(), eval.ids.empty() ? "" : eval.ids.front());
    }
  }
}

std::string Suggest(const std::string& op, const AccuracyOptions& o, std::string& detail) {
  bool weighted = op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm";
  if (weighted && !o.per_channel) {
    detail = "weights are per-tensor: per-channel scales keep small output channels";
    return "per-channel";
  }
  if (o.method == "minmax") {
    detail = "minmax ranges stretch to rare outliers: a percentile range resolves the bulk";
    return "percentile";
  }
  detail = "keep this node float";
  return "exclude-node";
}

// IoU of {ref > a} and {qdq > b} over paired elements (1 when both sets are empty).
double AboveIou(const std::vector<float>& ref, const std::vector<float>& qdq, double a, double b) {
  size_t both = 0, either = 0;
  for (size_t i = 0; i < ref.size() && i < qdq.size(); ++i) {
    bool x = ref[i] > a, y = qdq[i] > b;
    both += x && y;
    either += x || y;
  }
  return either == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(either);
}

}  // namespace

std::optional<double> AccuracyReport::Metric(const std::string& metric) const {
  std::optional<double> worst;
  // An undefined figure (NaN: nothing to measure) is not a value: it neither passes nor fails.
  auto take = [&](std::optional<double> v) {
    if (v && !std::isnan(*v) && (!worst || *v < *worst)) worst = v;
  };
  if (metric == "sqnr") {
    for (const auto& o : outputs) take(o.sqnr_db);
    return worst;
  }
  for (const auto& t : tasks) {
    std::optional<double> v = t.Get(metric);
    if (metric == "hmean" && t.Get("qdq_gt_hmean")) v = t.Get("qdq_gt_hmean");
    if (metric == "top1" && t.Get("qdq_accuracy")) v = t.Get("qdq_accuracy");
    take(v);
  }
  return worst;
}

std::vector<double> Quantiles(std::vector<float>& values) {
  std::vector<double> q;
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  for (double level : kQuantileLevels) {
    double pos = level / 100.0 * static_cast<double>(values.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, values.size() - 1);
    q.push_back(values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]));
  }
  return q;
}

ThresholdMapping MapThreshold(std::vector<float> ref, std::vector<float> qdq, double threshold) {
  ThresholdMapping m;
  m.float_threshold = threshold;
  if (ref.empty() || qdq.empty()) return m;
  std::vector<float> paired = qdq;  // qdq gets sorted below
  size_t above = static_cast<size_t>(
      std::count_if(ref.begin(), ref.end(), [&](float v) { return v > threshold; }));
  m.float_fraction_above = static_cast<double>(above) / static_cast<double>(ref.size());
  size_t k =
      static_cast<size_t>(std::llround(m.float_fraction_above * static_cast<double>(qdq.size())));
  std::sort(qdq.begin(), qdq.end(), std::greater<float>());
  // Elements strictly above qdq[k] are the top k (fewer when quantized values tie).
  m.qdq_threshold = k < qdq.size() ? qdq[k] : qdq.back() - 1e-6;
  size_t qabove = static_cast<size_t>(
      std::count_if(qdq.begin(), qdq.end(), [&](float v) { return v > m.qdq_threshold; }));
  m.qdq_fraction_above = static_cast<double>(qabove) / static_cast<double>(qdq.size());
  m.iou = AboveIou(ref, paired, threshold, threshold);
  m.mapped_iou = AboveIou(ref, paired, threshold, m.qdq_threshold);
  return m;
}

namespace {

template <typename Quantized, typename MakeQuantized>
AccuracyReport Evaluate(const io::Model& float_model,
                        const std::vector<const io::Model*>& qdq_models, const SampleSet& eval,
                        const AccuracyOptions& options, MakeQuantized make_quantized) {
  runtime::SessionOptions so{.fail_on_nan = true};
  runtime::Session fs(float_model, so);
  std::unique_ptr<Quantized> qs = make_quantized(so);
  auto names = fs.output_names();
  CheckOptions(options, names, eval);
  // Samples run in parallel; each sample's sums are merged in sample order, so the report is the
  // same for any thread count.
  std::map<std::string, Accumulator> outputs, tensors;
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, TaskTally> tasks;
  std::vector<std::optional<SampleAccuracy>> done(eval.size());
  size_t merged = 0;
  std::mutex mu;
  auto finish = [&](size_t s, SampleAccuracy r) {
    std::lock_guard<std::mutex> lock(mu);
    done[s] = std::move(r);
    for (; merged < done.size() && done[merged]; ++merged) {
      SampleAccuracy& m = *done[merged];
      for (auto& [name, acc] : m.outputs) outputs[name].Merge(acc);
      for (auto& [name, acc] : m.tensors) tensors[name].Merge(acc);
      for (auto& [name, tally] : m.tasks) tasks[name].Merge(tally);
      producer.insert(m.producer.begin(), m.producer.end());
      done[merged].reset();
    }
  };
  // Worker 0 runs on this thread and reuses the sessions planned above; the others plan their own.
  ForEachSample(eval.size(), options.threads, [&](int w) -> std::function<void(size_t)> {
    if (w == 0) return [&](size_t s) { finish(s, RunSample(fs, *qs, eval, s, options)); };
    auto fs_w = std::make_shared<runtime::Session>(float_model, so);
    std::shared_ptr<Quantized> qs_w = make_quantized(so);
    return [&, fs_w, qs_w](size_t s) { finish(s, RunSample(*fs_w, *qs_w, eval, s, options)); };
  });
  AccuracyReport report;
  report.samples = eval.size();
  for (const auto& name : names) {
    auto it = outputs.find(name);
    if (it == outputs.end()) continue;
    Accumulator& acc = it->second;
    OutputAccuracy o{name,          acc.Sqnr(),    acc.Cosine(), acc.max_abs,
                     acc.float_min, acc.float_max, {},           {}};
    if (auto t = options.thresholds.find(name); t != options.thresholds.end()) {
      ThresholdMapping m = MapThreshold(acc.a, acc.b, t->second);
      m.output = name;
      report.thresholds.push_back(m);
    }
    o.float_quantiles = Quantiles(acc.a);
    o.qdq_quantiles = Quantiles(acc.b);
    report.outputs.push_back(std::move(o));
    if (auto t = tasks.find(name); t != tasks.end()) {
      report.tasks.push_back(Summarize(options.tasks.For(name), name, t->second));
    }
  }
  if (!options.labels.empty() && report.tasks.empty()) {
    report.notes.push_back(
        "labels were given but no output has a task that reads them (--task detect-db or "
        "classify)");
  }
  // Only nodes that run quantized add quantization error; the others pass it on.
  std::set<std::string> quantized;
  for (const io::Model* qdq_model : qdq_models) {
    for (const auto* n : QuantizedNodes(qdq_model->proto.graph())) quantized.insert(n->name());
  }
  for (const auto& [name, acc] : tensors) {
    const onnx::NodeProto* node = producer.at(name);
    if (!quantized.count(node->name())) continue;
    double in_db = kCapDb;
    for (const auto& in : node->input()) {
      auto it = tensors.find(in);
      if (it != tensors.end()) in_db = std::min(in_db, std::min(kCapDb, it->second.Sqnr()));
    }
    double db = std::min(kCapDb, acc.Sqnr());
    LayerError e{name, node->op_type(), node->name(), db, in_db, in_db - db, "", ""};
    e.suggestion = Suggest(node->op_type(), options, e.detail);
    report.worst.push_back(std::move(e));
  }
  std::stable_sort(
      report.worst.begin(), report.worst.end(),
      [](const LayerError& a, const LayerError& b) { return a.growth_db > b.growth_db; });
  if (report.worst.size() > 10) report.worst.resize(10);
  return report;
}

}  // namespace

AccuracyReport EvaluateAccuracy(const io::Model& float_model, const io::Model& qdq_model,
                                const SampleSet& eval, const AccuracyOptions& options) {
  return Evaluate<runtime::Session>(float_model, {&qdq_model}, eval, options,
                                    [&](const runtime::SessionOptions& so) {
                                      return std::make_unique<runtime::Session>(qdq_model, so);
                                    });
}

AccuracyReport EvaluateChainAccuracy(const io::Model& float_model,
                                     const std::vector<const io::Model*>& chain,
                                     const SampleSet& eval, const AccuracyOptions& options,
                                     const std::vector<runtime::SessionOptions>& per_segment) {
  return Evaluate<runtime::ChainSession>(
      float_model, chain, eval, options, [&](const runtime::SessionOptions& so) {
        if (per_segment.empty())
          return std::make_unique<runtime::ChainSession>(float_model, chain, so);
        std::vector<runtime::SessionOptions> each = per_segment;
        for (auto& o : each) o.fail_on_nan = so.fail_on_nan;
        return std::make_unique<runtime::ChainSession>(float_model, chain, each);
      });
}

}  // namespace porttool::quant
