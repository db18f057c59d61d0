// Calibration: runs samples through the executor, streams every float activation into RangeStats
// through the session observer (no activation is kept), and turns the statistics into a
// calibration table (per tensor: range, scale, zero point). The table is keyed by tensor name so
// the segments `split` writes reuse it unchanged. Samples run in parallel threads, each with its
// own Session and statistics; merging is exact, so the table is the same for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "lib/io/model.h"
#include "lib/quant/histogram.h"
#include "lib/quant/samples.h"

namespace porttool::quant {

enum class Method { kMinMax, kPercentile, kEntropy, kMse };
std::string MethodName(Method m);
Method ParseMethod(const std::string& name);  // Error(kUsage) for an unknown name

struct CalibrationOptions {
  Method method = Method::kPercentile;
  double percentile = 99.999;
  bool symmetric_activations = false;  // int8 with zero point 0; else uint8 asymmetric
  int threads = 1;                     // samples in flight at once
  // Values per tensor and sample binned into the histogram (evenly strided; <= 0: all of them).
  int64_t histogram_values = kDefaultHistogramValues;
};

// Statistics of one tensor over all samples, with the node that produced it.
struct TensorStatsEntry {
  RangeStats stats;
  int32_t float_dtype = onnx::TensorProto::FLOAT;  // as declared: float16 stays float16
  std::string op_type, node;                       // producer; empty for graph inputs
  uint64_t samples = 0;
};
using StatsMap = std::map<std::string, TensorStatsEntry>;

// Called after each sample with (done, total).
using ProgressFn = std::function<void(size_t, size_t)>;

struct CollectOptions {
  int threads = 1;  // samples in flight at once
  // Tensors that get a histogram besides their exact min/max: what percentile and entropy read.
  // nullopt: every float tensor; an empty set: none (minmax needs no histogram).
  std::optional<std::set<std::string>> histogram_tensors;
  int64_t histogram_values = kDefaultHistogramValues;  // see CalibrationOptions
};

// Runs every sample of `set` (ListSamples against this model) and collects statistics of graph
// inputs and of every float tensor a node produces (If branches included).
StatsMap CollectStats(const io::Model& model, const SampleSet& set,
                      const CollectOptions& options = {}, const ProgressFn& progress = nullptr);

struct TableEntry {
  std::string method;
  double min = 0, max = 0;  // calibrated range (always contains 0)
  double observed_min = 0, observed_max = 0;
  double scale = 1;
  int64_t zero_point = 0;
  std::string dtype = "uint8";          // quantized type
  std::string float_dtype = "float32";  // float32 | float16
  std::string op_type, node;
  uint64_t samples = 0;
  // Read by a node the QDQ model runs with 16-bit activations (A16W8): "precision": "int16" in the
  // table (the same range on 65536 levels), and left out of the TensorRT cache.
  bool int16 = false;
};

struct CalibrationTable {
  std::string model_sha256;
  std::string method;
  double percentile = 0;
  bool symmetric = false;
  uint64_t samples = 0;
  std::optional<Preprocess> preprocess;
  std::map<std::string, TableEntry> tensors;

  nlohmann::json ToJson() const;
  // Error(kBadInput) naming `where` and the JSON path for a malformed table.
  static CalibrationTable FromJson(const nlohmann::json& j, const std::string& where);
  // TensorRT calibration cache text: "TRT-<ver>-<algo>" then "<tensor>: <hex float32 scale>".
  // int16 tensors have no line: TensorRT has no 16-bit integer activations, and a tensor without
  // a scale runs in FP16/FP32 there.
  std::string ToTensorRtCache() const;
};

// Scale and zero point for range [lo, hi] (widened to contain 0).
void ComputeQuantParams(double lo, double hi, bool symmetric, TableEntry& e);

CalibrationTable BuildTable(const StatsMap& stats, const CalibrationOptions& options);

}  // namespace porttool::quant
