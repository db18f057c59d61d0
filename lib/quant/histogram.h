// Streaming activation statistics for INT8 calibration and the three ways of turning them into a
// range: minmax, percentile and entropy (TensorRT's KL-divergence search). Statistics are updated
// tensor by tensor as the executor produces them, so memory does not grow with the number of
// samples (ONNX Runtime keeps every intermediate of every sample instead).
//
// The |x| histogram has kHistogramBins bins over [0, R) where R is a power of two. When a larger
// value arrives R doubles and adjacent bins merge, which is exact: the final histogram is the
// same whatever order the values (or per-thread partial histograms) came in, so calibration with
// any thread count gives the same table.
#pragma once

#include <cstdint>
#include <vector>

namespace porttool::quant {

inline constexpr int kHistogramBins = 2048;

// Values of one tensor of one sample binned by default (RangeStats::AddSampled). Binning is the
// costly part of calibration: PP-OCRv4 det produces 173 M activation values per 640x640 image, and
// binning them all took longer than the inference itself. 2^16 evenly spread values per tensor
// and sample put half a million values into each histogram over 8 samples (4 M over 64); the min
// and max stay exact, and the thresholds move by a median 1-2 % against binning every value.
inline constexpr int64_t kDefaultHistogramValues = int64_t{1} << 16;

// One tensor's extremes in one sample (lo > hi when it had no finite value) and how many of its
// values were NaN or infinite.
struct SampleRange {
  float lo, hi;
  int64_t nonfinite = 0;
};

class RangeStats {
 public:
  RangeStats();
  // Adds values; NaN and infinities are counted separately and otherwise ignored.
  void Add(const float* values, int64_t n);
  // Exact min/max and counts of all n values, but the histogram gets about `max_binned` of them:
  // runs of 16 consecutive values (one cache line) taken every stride-th run, with an odd stride
  // so that rows of power-of-two width are not sampled at the same columns every time.
  // max_binned <= 0 (or n <= max_binned) bins every value, as Add does. `known`: the values'
  // extremes and non-finite count when the caller has them exactly (the values are then not
  // scanned). Returns the values' extremes.
  SampleRange AddSampled(const float* values, int64_t n, int64_t max_binned,
                         const SampleRange* known = nullptr);
  // Exact min/max and counts only: for tensors whose range method is minmax anyway.
  SampleRange AddExtremes(const float* values, int64_t n, const SampleRange* known = nullptr);
  // Whether any value went into the histogram (false after AddExtremes alone).
  bool has_histogram() const { return binned_ > 0; }
  // Adds another tensor's statistics (same tensor, other samples). Order-independent.
  void Merge(const RangeStats& other);

  bool empty() const { return count_ == 0; }
  uint64_t count() const { return count_; }  // finite values seen
  uint64_t nonfinite() const { return nonfinite_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double abs_max() const;
  // Upper edge of the histogram (0 while every value seen was zero).
  double range() const { return range_; }
  double bin_width() const { return range_ / kHistogramBins; }
  const std::vector<uint64_t>& bins() const { return bins_; }

 private:
  void GrowTo(double abs_max);
  std::vector<uint64_t> bins_;
  double range_ = 0;
  double min_ = 0, max_ = 0;
  uint64_t count_ = 0, nonfinite_ = 0, binned_ = 0;
};

// Symmetric threshold T (range [-T, T]) from an |x| histogram with bins of `bin_width`:
// the upper edge of the bin where the cumulative count reaches `percentile` % of all values.
double PercentileThreshold(const std::vector<uint64_t>& bins, double bin_width, double percentile);

// TensorRT-style entropy calibration (GTC 2017, "8-bit Inference with TensorRT"): for every
// candidate i from `quantized_levels` bins up to the last non-empty bin, P = bins[0, i) with the
// clipped counts added to bin i-1, Q = bins[0, i) merged into `quantized_levels` levels and spread
// back over each level's non-empty bins; the threshold is i * bin_width for the i with the least
// KL(P || Q) (the largest such i on ties). Bin 0 is first set to bin 1's count, as NVIDIA's
// pytorch-quantization does, so the spike of exact zeros does not decide the threshold.
// Runs in O(bins * levels) with prefix sums.
double EntropyThreshold(std::vector<uint64_t> bins, double bin_width, int quantized_levels = 128);

// The threshold T minimising the expected squared quantization error of the histogram's values:
// rounding noise step^2 / 12 for |x| <= T, clipping error (|x| - T)^2 above it (each bin's values
// taken at its centre), for a tensor seen in [lo, hi] whose range becomes [max(-T, lo), min(T, hi)]
// on 255 uint8 steps, or [-T', T'] (T' = min(T, max(-lo, hi))) on 127 int8 steps per side when
// `symmetric`. This is the SQNR-optimal range, the criterion NVIDIA's pytorch-quantization calls
// "mse". O(bins) with prefix sums.
double MseThreshold(const std::vector<uint64_t>& bins, double bin_width, double lo, double hi,
                    bool symmetric);

}  // namespace porttool::quant
