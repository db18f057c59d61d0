// Accuracy of a QDQ model against its float original on evaluation samples: per output SQNR,
// cosine and max abs error; the output distribution before and after (quantiles) with threshold
// mapping, since a float score cut no longer means the same thing after quantization; and the
// tensors where the quantization error grows most, each with a suggestion.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/calibrate.h"
#include "lib/quant/samples.h"

namespace porttool::quant {

inline constexpr double kQuantileLevels[] = {1, 5, 25, 50, 75, 95, 99};

struct OutputAccuracy {
  std::string name;
  double sqnr_db = 0, cosine = 1, max_abs = 0;
  std::vector<double> float_quantiles, qdq_quantiles;  // at kQuantileLevels
};

struct ThresholdMapping {
  std::string output;
  double float_threshold = 0, qdq_threshold = 0;
  double float_fraction_above = 0, qdq_fraction_above = 0;
  // Intersection over union of the elements above the threshold in both runs (a detector's
  // foreground mask), the QDQ side cut at float_threshold and at qdq_threshold: what SQNR hides
  // on a saturating output, where a few flipped border pixels dominate the error energy.
  double iou = 1, mapped_iou = 1;
};

struct LayerError {
  std::string tensor, op_type, node;
  double sqnr_db = 0;        // of this tensor in the QDQ model against the float model
  double input_sqnr_db = 0;  // worst of the producing node's inputs (capped at 60 dB)
  double growth_db = 0;      // input_sqnr_db - sqnr_db: how much this node made it worse
  std::string suggestion;    // per-channel | percentile | exclude-node
  std::string detail;
};

struct AccuracyReport {
  size_t samples = 0;
  std::vector<OutputAccuracy> outputs;
  std::vector<ThresholdMapping> thresholds;
  std::vector<LayerError> worst;  // up to 10, largest growth first
};

struct AccuracyOptions {
  std::map<std::string, double> thresholds;  // output -> float threshold
  bool per_channel = false;
  std::string method;
  int threads = 1;  // samples evaluated in parallel (the kernels should then run single-threaded)
};

// Runs both models on every sample of `eval`. Error(kUsage) for a threshold on an unknown output.
AccuracyReport EvaluateAccuracy(const io::Model& float_model, const io::Model& qdq_model,
                                const SampleSet& eval, const AccuracyOptions& options);

// The same with the QDQ side a chain of segments (quantized accelerator segments and float host
// segments of a split, run as runtime::ChainSession): accuracy end to end through the pipeline.
AccuracyReport EvaluateChainAccuracy(const io::Model& float_model,
                                     const std::vector<const io::Model*>& chain,
                                     const SampleSet& eval, const AccuracyOptions& options);

// The threshold on `qdq` values keeping the fraction of elements above `threshold` in `ref`.
ThresholdMapping MapThreshold(std::vector<float> ref, std::vector<float> qdq, double threshold);

// Quantiles (linear interpolation, as numpy's default) of `values`, which gets sorted.
std::vector<double> Quantiles(std::vector<float>& values);

}  // namespace porttool::quant
