// Accuracy of a QDQ model against its float original on evaluation samples: per output SQNR,
// cosine and max abs error; the output distribution before and after (quantiles) with threshold
// mapping, since a float score cut no longer means the same thing after quantization; and the
// tensors where the quantization error grows most, each with a suggestion.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/calibrate.h"
#include "lib/quant/samples.h"
#include "lib/quant/task_metrics.h"

namespace porttool::quant {

inline constexpr double kQuantileLevels[] = {1, 5, 25, 50, 75, 95, 99};

struct OutputAccuracy {
  std::string name;
  double sqnr_db = 0, cosine = 1, max_abs = 0;
  double float_min = 0, float_max = 0;                 // the float model's values over every sample
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
  std::vector<TaskResult> tasks;  // per output with a task other than regress, in output order
  std::vector<std::string> notes;
  // The value of a task metric (top1, hmean, seq, ...; sqnr in dB) on the output that does worst
  // by it; nullopt when no output reports it or every output's figure is undefined. With labels,
  // hmean and top1 are the quantized model's against the ground truth (qdq_gt_hmean, qdq_accuracy).
  std::optional<double> Metric(const std::string& metric) const;
};

struct AccuracyOptions {
  std::map<std::string, double> thresholds;  // output -> float threshold
  bool per_channel = false;
  std::string method;
  int threads = 1;  // samples evaluated in parallel (the kernels should then run single-threaded)
  TaskAssignment tasks;
  Labels labels;  // ground truth by sample id, for the tasks that use it
  // Sample ids the labels may name besides the evaluation samples' (the calibration samples):
  // a label for any other id is Error(kBadInput), a typo that would silently drop a sample.
  std::set<std::string> known_ids;
  // false: the outputs' sums and task figures only (no worst-tensor list, quantiles or threshold
  // mapping), for the repeated evaluations of a search.
  bool per_tensor = true;
};

// Runs both models on every sample of `eval`. Error(kUsage) for a threshold or a task on an
// unknown output; Error(kBadInput) for labels naming an unknown sample or unreadable by the task,
// and for an output its task cannot read.
AccuracyReport EvaluateAccuracy(const io::Model& float_model, const io::Model& qdq_model,
                                const SampleSet& eval, const AccuracyOptions& options);

// The same with the QDQ side a chain of segments (quantized accelerator segments and float host
// segments of a split, run as runtime::ChainSession): accuracy end to end through the pipeline.
// `per_segment` (one per segment, or empty) computes segments as a device does: float16 ones.
AccuracyReport EvaluateChainAccuracy(const io::Model& float_model,
                                     const std::vector<const io::Model*>& chain,
                                     const SampleSet& eval, const AccuracyOptions& options,
                                     const std::vector<runtime::SessionOptions>& per_segment = {});

// The threshold on `qdq` values keeping the fraction of elements above `threshold` in `ref`.
ThresholdMapping MapThreshold(std::vector<float> ref, std::vector<float> qdq, double threshold);

// Quantiles (linear interpolation, as numpy's default) of `values`, which gets sorted.
std::vector<double> Quantiles(std::vector<float>& values);

}  // namespace porttool::quant
