#include "lib/quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace porttool::quant {
namespace {

// Smallest power of two strictly above `v` (> 0).
double PowerOfTwoAbove(double v) {
  int e = 0;
  std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  return std::ldexp(1.0, e);
}

// Adds `from` (a histogram over [0, from_range)) into `to` (over [0, to_range)), where to_range is
// from_range times a power of two: each source bin lands wholly inside one destination bin.
void AddRescaled(const std::vector<uint64_t>& from, double from_range, std::vector<uint64_t>& to,
                 double to_range) {
  int shift = 0;
  if (from_range > 0 && to_range > from_range) {
    shift = static_cast<int>(std::lround(std::log2(to_range / from_range)));
  }
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == 0) continue;
    size_t j = shift >= 31 ? 0 : (i >> shift);
    to[j] += from[i];
  }
}

}  // namespace

RangeStats::RangeStats() : bins_(kHistogramBins, 0) {}

double RangeStats::abs_max() const { return std::max(std::fabs(min_), std::fabs(max_)); }

void RangeStats::GrowTo(double abs_max) {
  if (abs_max == 0 || abs_max < range_) return;
  double new_range = PowerOfTwoAbove(abs_max);
  if (range_ > 0) {
    std::vector<uint64_t> merged(kHistogramBins, 0);
    AddRescaled(bins_, range_, merged, new_range);
    bins_.swap(merged);
  }
  range_ = new_range;  // with range 0 every count so far is a zero, which stays in bin 0
}

void RangeStats::Add(const float* values, int64_t n) {
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = values[i];
    if (!std::isfinite(v)) {
      ++bad;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  nonfinite_ += bad;
  if (n == bad) return;
  min_ = count_ == 0 ? lo : std::min<double>(min_, lo);
  max_ = count_ == 0 ? hi : std::max<double>(max_, hi);
  count_ += n - bad;
  GrowTo(abs_max());
  // range_ is a power of two, so the scale is exact and so is every bin index.
  const float scale = range_ > 0 ? static_cast<float>(kHistogramBins / range_) : 0.f;
  uint64_t* bins = bins_.data();
  for (int64_t i = 0; i < n; ++i) {
    float a = std::fabs(values[i]) * scale;
    if (!(a < kHistogramBins)) {  // non-finite (already counted) or exactly on the edge
      if (std::isfinite(a)) ++bins[kHistogramBins - 1];
      continue;
    }
    ++bins[static_cast<int>(a)];
  }
}

void RangeStats::Merge(const RangeStats& other) {
  nonfinite_ += other.nonfinite_;
  if (other.count_ == 0) return;
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  if (other.range_ > range_) GrowTo(other.range_ * 0.75);  // same power of two as other's
  AddRescaled(other.bins_, other.range_, bins_, range_);
}

double PercentileThreshold(const std::vector<uint64_t>& bins, double bin_width, double percentile) {
  uint64_t total = 0;
  for (uint64_t b : bins) total += b;
  if (total == 0) return 0;
  const double target = percentile / 100.0 * static_cast<double>(total);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bins.size(); ++i) {
    cumulative += bins[i];
    if (static_cast<double>(cumulative) >= target) return static_cast<double>(i + 1) * bin_width;
  }
  return static_cast<double>(bins.size()) * bin_width;
}

double EntropyThreshold(std::vector<uint64_t> bins, double bin_width, int quantized_levels) {
  // The zero bin holds every exact zero (ReLU outputs, padding): its spike would dominate the
  // divergence of every window wider than `levels` bins and always pick the narrowest one.
  // NVIDIA's pytorch-quantization (_compute_amax_entropy) flattens it the same way.
  if (bins.size() > 1) bins[0] = bins[1];
  size_t stop = bins.size();
  while (stop > 0 && bins[stop - 1] == 0) --stop;
  const size_t levels = static_cast<size_t>(quantized_levels);
  if (stop <= levels) return static_cast<double>(stop) * bin_width;  // nothing to clip
  auto xlogx = [](double x) { return x > 0 ? x * std::log(x) : 0.0; };
  // Prefix sums over bins: counts, count*log(count), non-empty bins.
  std::vector<double> count(stop + 1, 0), xlx(stop + 1, 0), nonzero(stop + 1, 0);
  for (size_t k = 0; k < stop; ++k) {
    double h = static_cast<double>(bins[k]);
    count[k + 1] = count[k] + h;
    xlx[k + 1] = xlx[k] + xlogx(h);
    nonzero[k + 1] = nonzero[k] + (h > 0 ? 1 : 0);
  }
  const double total = count[stop];
  double best_kl = std::numeric_limits<double>::infinity();
  size_t best_i = stop;
  for (size_t i = levels; i <= stop; ++i) {
    const double last = static_cast<double>(bins[i - 1]);
    const double outliers = total - count[i];
    if (last == 0 && outliers > 0) continue;  // P > 0 where Q = 0: infinite divergence
    // KL(P||Q) with P = p'/total and Q = e/kept, where e spreads each level's count evenly
    // over its non-empty bins: sum p' log p' / total - log total + log kept
    //                          - sum_level (p' mass of the level) log(level count / non-empty).
    double sum_plogp = xlx[i] - xlogx(last) + xlogx(last + outliers);
    double cross = 0;
    for (size_t j = 0; j < levels; ++j) {
      size_t a = (j * i + levels - 1) / levels, b = ((j + 1) * i + levels - 1) / levels;
      double s = count[b] - count[a];
      if (s == 0) continue;
      double mass = s + (j == levels - 1 ? outliers : 0);
      cross += mass * std::log(s / (nonzero[b] - nonzero[a]));
    }
    double kl = (sum_plogp - cross) / total - std::log(total) + std::log(count[i]);
    if (kl <= best_kl + 1e-12) {
      best_kl = std::min(best_kl, kl);
      best_i = i;
    }
  }
  return static_cast<double>(best_i) * bin_width;
}

}  // namespace porttool::quant
