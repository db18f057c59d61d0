#include "lib/quant/calibrate.h"

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "lib/quant/derived_ranges.h"
#include "lib/util/error.h"

namespace porttool::quant {
using TP = onnx::TensorProto;

std::string MethodName(Method m) {
  switch (m) {
    case Method::kMinMax:
      return "minmax";
    case Method::kPercentile:
      return "percentile";
    case Method::kEntropy:
      return "entropy";
    case Method::kMse:
      return "mse";
  }
  return "?";
}

Method ParseMethod(const std::string& name) {
  for (Method m : {Method::kMinMax, Method::kPercentile, Method::kEntropy, Method::kMse}) {
    if (MethodName(m) == name) return m;
  }
  ThrowUsage("unknown calibration method '{}' (minmax, percentile, entropy, mse)", name);
}

namespace {

void DeclaredTypes(const onnx::GraphProto& g, std::map<std::string, int32_t>& types) {
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type()) types[vi.name()] = vi.type().tensor_type().elem_type();
  };
  for (const auto& vi : g.input()) add(vi);
  for (const auto& vi : g.output()) add(vi);
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g()) DeclaredTypes(a.g(), types);
      for (const auto& sg : a.graphs()) DeclaredTypes(sg, types);
    }
  }
}

// The derivable ranges, with a slot for each tensor a rule reads.
struct RangePlan {
  explicit RangePlan(const io::Model& model) : rules(DerivableRanges(model)) {
    for (const auto& [out, rule] : rules) {
      for (const auto& in : rule.inputs) slot.emplace(in, static_cast<int>(slot.size()));
    }
  }
  std::map<std::string, RangeRule> rules;
  std::unordered_map<std::string, int> slot;
};

// One worker's observer. The extremes a rule reads are kept in fixed slots stamped with the
// sample they came from (nothing is allocated per sample: small blocks freed between the big
// tensors fragment the heap and raised peak RSS with the sample count).
class SampleObserver {
 public:
  SampleObserver(const RangePlan& plan, const CollectOptions& options, StatsMap& stats)
      : plan_(plan), options_(options), stats_(stats), seen_(plan.slot.size()) {}

  void StartSample() { ++sample_; }

  void Observe(const std::string& name, const runtime::Tensor& t, const onnx::NodeProto* node,
               bool in_subgraph) {
    if (t.dtype() != TP::FLOAT || t.size() == 0) return;
    std::optional<SampleRange> known;
    if (auto rule = plan_.rules.find(name); rule != plan_.rules.end() && !in_subgraph) {
      known = Derive(rule->second);
    }
    const SampleRange* k = known ? &*known : nullptr;
    TensorStatsEntry& e = stats_[name];
    SampleRange range;
    if (!options_.histogram_tensors || options_.histogram_tensors->count(name)) {
      range = e.stats.AddSampled(t.data<float>(), t.size(), options_.histogram_values, k);
    } else {
      range = e.stats.AddExtremes(t.data<float>(), t.size(), k);
    }
    if (auto slot = plan_.slot.find(name); slot != plan_.slot.end() && !in_subgraph) {
      seen_[slot->second] = {sample_, range};
    }
    e.samples += 1;
    if (node != nullptr && e.op_type.empty()) {
      e.op_type = node->op_type();
      e.node = node->name();
    }
  }

 private:
  // The rule's result from this sample's input extremes, if every input was seen in it.
  std::optional<SampleRange> Derive(const RangeRule& rule) {
    inputs_.clear();
    for (const auto& in : rule.inputs) {
      const Seen& x = seen_[plan_.slot.at(in)];
      if (x.sample != sample_) return std::nullopt;
      inputs_.push_back(x.range);
    }
    return DeriveRange(rule, inputs_);
  }

  struct Seen {
    size_t sample = 0;
    SampleRange range{0, 0, 0};
  };
  const RangePlan& plan_;
  const CollectOptions& options_;
  StatsMap& stats_;
  std::vector<Seen> seen_;
  std::vector<SampleRange> inputs_;  // reused: no allocation per tensor
  size_t sample_ = 0;
};

// Per-thread partial statistics are merged into `into`; merge order does not change the result.
void MergeInto(StatsMap& into, const StatsMap& part) {
  for (const auto& [name, e] : part) {
    TensorStatsEntry& dst = into[name];
    dst.stats.Merge(e.stats);
    dst.samples += e.samples;
    if (dst.op_type.empty()) {
      dst.op_type = e.op_type;
      dst.node = e.node;
    }
  }
}

}  // namespace

StatsMap CollectStats(const io::Model& model, const SampleSet& set, const CollectOptions& options,
                      const ProgressFn& progress) {
  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(set.size())));
  // Parallelism is across samples (ForEachSample runs their kernels single-threaded).
  std::vector<StatsMap> parts(threads);
  const RangePlan plan(model);
  std::atomic<size_t> done{0};
  std::mutex progress_mu;
  ForEachSample(set.size(), threads, [&](int w) -> std::function<void(size_t)> {
    auto session =
        std::make_shared<runtime::Session>(model, runtime::SessionOptions{.fail_on_nan = true});
    auto observer = std::make_shared<SampleObserver>(plan, options, parts[w]);
    auto image = std::make_shared<DecodedImage>();
    return [&, session, observer, image](size_t i) {
      runtime::TensorMap inputs = LoadSample(set, i, session->inputs(), image.get());
      observer->StartSample();
      for (const auto& [name, t] : inputs) observer->Observe(name, t, nullptr, false);
      session->RunObserved(inputs, [&](const runtime::ProducedTensor& p) {
        // Constant outputs are weights: they get their own (per-channel) scales.
        if (p.node.op_type() != "Constant") {
          observer->Observe(p.name, p.value, &p.node, p.in_subgraph);
        }
      });
      size_t n = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(n, set.size());
      }
    };
  });
  StatsMap all;
  for (const auto& part : parts) MergeInto(all, part);
  std::map<std::string, int32_t> types;
  DeclaredTypes(model.proto.graph(), types);
  for (auto& [name, e] : all) {
    auto it = types.find(name);
    if (it != types.end() && it->second == TP::FLOAT16) e.float_dtype = TP::FLOAT16;
  }
  return all;
}

void ComputeQuantParams(double lo, double hi, bool symmetric, TableEntry& e) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (symmetric) {
    double t = std::max(-lo, hi);
    e.min = -t;
    e.max = t;
    e.scale = t > 0 ? t / 127.0 : 1.0;
    e.zero_point = 0;
    e.dtype = "int8";
    return;
  }
  e.min = lo;
  e.max = hi;
  e.scale = hi > lo ? (hi - lo) / 255.0 : 1.0;
  e.zero_point = std::clamp<int64_t>(std::llround(-lo / e.scale), 0, 255);
  e.dtype = "uint8";
}

namespace {

// Ops whose output range is bounded by design (a gate, a probability, relu6): their rare values
// near the bound carry the signal (an SE gate fully open), and there is no outlier to clip, so
// a percentile or KL threshold only hurts. KL clipped PP-OCR cls's first SE gate from [0, 1] to
// [0, 0.15] and the output fell to 6.8 dB SQNR.
bool BoundedOutput(const std::string& op_type) {
  return op_type == "Sigmoid" || op_type == "HardSigmoid" || op_type == "Softmax" ||
         op_type == "Tanh" || op_type == "Clip";
}

}  // namespace

CalibrationTable BuildTable(const StatsMap& stats, const CalibrationOptions& options) {
  CalibrationTable table;
  table.method = MethodName(options.method);
  table.percentile = options.method == Method::kPercentile ? options.percentile : 0;
  table.symmetric = options.symmetric_activations;
  for (const auto& [name, s] : stats) {
    if (s.stats.empty()) continue;
    TableEntry e;
    e.method = table.method;
    e.observed_min = s.stats.min();
    e.observed_max = s.stats.max();
    double lo = e.observed_min, hi = e.observed_max;
    // A tensor no quantizable op reads was not binned: its entry is its min/max range.
    if (!s.stats.has_histogram() || BoundedOutput(s.op_type))
      e.method = MethodName(Method::kMinMax);
    if (e.method != MethodName(Method::kMinMax)) {
      const auto& bins = s.stats.bins();
      const double width = s.stats.bin_width();
      double t = options.method == Method::kPercentile
                     ? PercentileThreshold(bins, width, options.percentile)
                 : options.method == Method::kEntropy
                     ? EntropyThreshold(bins, width)
                     : MseThreshold(bins, width, lo, hi, options.symmetric_activations);
      lo = std::max(lo, -t);  // clamped to what was seen, as ONNX Runtime does
      hi = std::min(hi, t);
    }
    ComputeQuantParams(lo, hi, options.symmetric_activations, e);
    e.float_dtype = s.float_dtype == TP::FLOAT16 ? "float16" : "float32";
    e.op_type = s.op_type;
    e.node = s.node;
    e.samples = s.samples;
    table.samples = std::max(table.samples, s.samples);
    table.tensors[name] = e;
  }
  return table;
}

nlohmann::json CalibrationTable::ToJson() const {
  nlohmann::json tensors_json = nlohmann::json::object();
  for (const auto& [name, e] : tensors) {
    nlohmann::json t = {{"method", e.method},
                        {"min", e.min},
                        {"max", e.max},
                        {"scale", e.scale},
                        {"zero_point", e.zero_point},
                        {"dtype", e.dtype},
                        {"float_dtype", e.float_dtype},
                        {"samples", e.samples},
                        {"observed_min", e.observed_min},
                        {"observed_max", e.observed_max}};
    if (!e.op_type.empty()) t["producer"] = {{"op_type", e.op_type}, {"node", e.node}};
    if (e.int16) t["precision"] = "int16";
    tensors_json[name] = std::move(t);
  }
  nlohmann::json j = {{"format", "porttool-calibration-table"},
                      {"version", 1},
                      {"model_sha256", model_sha256},
                      {"method", method},
                      {"symmetric_activations", symmetric},
                      {"samples", samples},
                      {"preprocessing", preprocess ? preprocess->ToJson() : nlohmann::json()},
                      {"tensors", tensors_json}};
  if (percentile > 0) j["percentile"] = percentile;
  return j;
}

CalibrationTable CalibrationTable::FromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != "porttool-calibration-table") {
    ThrowBadInput(
        "{}: not a porttool calibration table (/format must be "
        "\"porttool-calibration-table\")",
        where);
  }
  CalibrationTable t;
  std::string path = "/";
  try {
    path = "/method";
    t.method = j.at("method").get<std::string>();
    path = "/model_sha256";
    t.model_sha256 = j.value("model_sha256", "");
    path = "/symmetric_activations";
    t.symmetric = j.value("symmetric_activations", false);
    path = "/samples";
    t.samples = j.value("samples", uint64_t{0});
    path = "/percentile";
    t.percentile = j.value("percentile", 0.0);
    if (j.contains("preprocessing") && !j.at("preprocessing").is_null()) {
      t.preprocess = Preprocess::FromJson(j.at("preprocessing"), where + " /preprocessing");
    }
    path = "/tensors";
    for (const auto& [name, e] : j.at("tensors").items()) {
      path = "/tensors/" + name;
      TableEntry te;
      te.method = e.value("method", t.method);
      te.min = e.at("min").get<double>();
      te.max = e.at("max").get<double>();
      te.scale = e.at("scale").get<double>();
      te.zero_point = e.at("zero_point").get<int64_t>();
      te.dtype = e.at("dtype").get<std::string>();
      te.float_dtype = e.value("float_dtype", "float32");
      te.samples = e.value("samples", uint64_t{0});
      te.observed_min = e.value("observed_min", te.min);
      te.observed_max = e.value("observed_max", te.max);
      const std::string precision = e.value("precision", "int8");
      if (precision != "int8" && precision != "int16") {
        ThrowBadInput("{}: {}/precision must be int8 or int16", where, path);
      }
      te.int16 = precision == "int16";
      if (te.dtype != "uint8" && te.dtype != "int8") {
        ThrowBadInput("{}: {}/dtype must be uint8 or int8", where, path);
      }
      if (!(te.scale > 0) || !std::isfinite(te.scale)) {
        ThrowBadInput("{}: {}/scale must be a positive number", where, path);
      }
      t.tensors[name] = te;
    }
  } catch (const nlohmann::json::exception& e) {
    ThrowBadInput("{}: {} is missing or has the wrong type ({})", where, path, e.what());
  }
  return t;
}

std::string CalibrationTable::ToTensorRtCache() const {
  // TensorRT has no percentile calibrator: a percentile table is written under MinMax's name,
  // whose cache holds the same thing (one range per tensor).
  std::string out = fmt::format("TRT-8601-{}\n",
                                method == "entropy" ? "EntropyCalibration2" : "MinMaxCalibration");
  for (const auto& [name, e] : tensors) {
    if (e.int16) continue;
    float scale = static_cast<float>(std::max(std::fabs(e.min), std::fabs(e.max)) / 127.0);
    out += fmt::format("{}: {:08x}\n", name, std::bit_cast<uint32_t>(scale));
  }
  return out;
}

}  // namespace porttool::quant
