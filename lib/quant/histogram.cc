#include "lib/quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

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

struct Extremes {
  float lo, hi;
  int64_t nonfinite;
};

// Exact reference scan: min and max of the finite values, and the count of the others.
void ScanScalar(const float* v, int64_t n, Extremes& e) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = v[i];
    if (!(std::fabs(x) <= std::numeric_limits<float>::max())) {  // NaN or infinite
      ++e.nonfinite;
      continue;
    }
    e.lo = std::min(e.lo, x);
    e.hi = std::max(e.hi, x);
  }
}

// The fast scans let NaN fall through min/max (MINPS/MAXPS return the second operand when either
// is NaN) and only flag a block holding a non-finite value (x - x is NaN for NaN and +-inf); the
// rare tensor with such a flag is rescanned exactly by ScanScalar.
// Folds a vector scan's per-lane minima and maxima into `e`, then scans the `rest` values past the
// last full vector one by one.
[[maybe_unused]] void FinishScan(const float* lane_lo, const float* lane_hi, int lanes,
                                 const float* rest, int64_t rest_n, Extremes& e) {
  for (int k = 0; k < lanes; ++k) {
    e.lo = std::min(e.lo, lane_lo[k]);
    e.hi = std::max(e.hi, lane_hi[k]);
  }
  ScanScalar(rest, rest_n, e);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define PORTTOOL_HAVE_AVX2_SCAN 1
__attribute__((target("avx2"))) bool ScanAvx2(const float* v, int64_t n, Extremes& e) {
  __m256 lo0 = _mm256_set1_ps(e.lo), lo1 = lo0, hi0 = _mm256_set1_ps(e.hi), hi1 = hi0;
  __m256 bad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + i + 8);
    lo0 = _mm256_min_ps(a, lo0);
    hi0 = _mm256_max_ps(a, hi0);
    lo1 = _mm256_min_ps(b, lo1);
    hi1 = _mm256_max_ps(b, hi1);
    bad = _mm256_or_ps(bad, _mm256_add_ps(_mm256_sub_ps(a, a), _mm256_sub_ps(b, b)));
  }
  if (_mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) != 0) return false;
  float l[8], h[8];
  _mm256_storeu_ps(l, _mm256_min_ps(lo0, lo1));
  _mm256_storeu_ps(h, _mm256_max_ps(hi0, hi1));
  FinishScan(l, h, 8, v + i, n - i, e);
  return true;
}
#endif

bool ScanSse2(const float* v, int64_t n, Extremes& e) {
#if defined(__SSE2__)
  __m128 lo = _mm_set1_ps(e.lo), hi = _mm_set1_ps(e.hi), bad = _mm_setzero_ps();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 x = _mm_loadu_ps(v + i);
    lo = _mm_min_ps(x, lo);
    hi = _mm_max_ps(x, hi);
    bad = _mm_or_ps(bad, _mm_sub_ps(x, x));
  }
  if (_mm_movemask_ps(_mm_cmpunord_ps(bad, bad)) != 0) return false;
  float l[4], h[4];
  _mm_storeu_ps(l, lo);
  _mm_storeu_ps(h, hi);
  FinishScan(l, h, 4, v + i, n - i, e);
  return true;
#else
  (void)v, (void)n, (void)e;
  return false;
#endif
}

// Min and max of the finite values and the count of the others. Calibration calls this on every
// activation of every sample (PP-OCRv4 det: 173 M values per image), so it runs at memory speed.
Extremes FindExtremes(const float* v, int64_t n) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  Extremes e{kInf, -kInf, 0};
#if defined(PORTTOOL_HAVE_AVX2_SCAN)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 ? ScanAvx2(v, n, e) : ScanSse2(v, n, e)) {
#else
  if (ScanSse2(v, n, e)) {
#endif
    if (e.nonfinite == 0) return e;
  }
  e = {kInf, -kInf, 0};
  ScanScalar(v, n, e);
  return e;
}

constexpr int64_t kSampleBlock = 16;  // floats per 64-byte cache line

// Bin of a scaled |x|: values on or past the upper edge go to the last bin, non-finite ones to
// kHistogramBins (a discard slot; they are counted separately).
inline int BinOf(float a) {
  if (a < static_cast<float>(kHistogramBins)) return static_cast<int>(a);
  return a <= std::numeric_limits<float>::max() ? kHistogramBins - 1 : kHistogramBins;
}

// Adds |v| * scale to `bins` for runs of `block` values every `step` values (block == step: all
// of them), reading the runs where they are. Four interleaved partial histograms let consecutive
// values that land in the same bin increment without waiting on each other; their 16-bit counts
// (16 KB to clear and fold per call, which matters for 2^16-value calls on a hundred tensors per
// sample) are folded into `bins` before any could overflow.
int64_t BinAbsValues(const float* v, int64_t n, int64_t block, int64_t step, float scale,
                     uint64_t* bins) {
  constexpr int kSlots = kHistogramBins + 1;
  // Values go round-robin to the 4 partials; a run's last 1-3 values go to the first. Runs are
  // folded before their total passes kFlushEvery, so no partial count passes 65532 + 3.
  constexpr int64_t kFlushEvery = 4 * int64_t{65532};
  if (block == step) block = step = std::min(block, kFlushEvery);  // every value: in chunks
  block = std::min(block, step);
  thread_local std::vector<uint16_t> part(4 * kSlots);
  std::fill(part.begin(), part.end(), 0u);
  uint16_t* p = part.data();
  auto flush = [&] {
    for (int b = 0; b < kHistogramBins; ++b) {
      bins[b] += uint64_t{p[b]} + p[kSlots + b] + p[2 * kSlots + b] + p[3 * kSlots + b];
    }
    std::fill(part.begin(), part.end(), 0u);
  };
  int64_t binned = 0, pending = 0;
  for (int64_t start = 0; start < n; start += step) {
    const int64_t end = std::min(n, start + block);
    int64_t i = start;
    for (; i + 4 <= end; i += 4) {
      ++p[BinOf(std::fabs(v[i]) * scale)];
      ++p[kSlots + BinOf(std::fabs(v[i + 1]) * scale)];
      ++p[2 * kSlots + BinOf(std::fabs(v[i + 2]) * scale)];
      ++p[3 * kSlots + BinOf(std::fabs(v[i + 3]) * scale)];
    }
    for (; i < end; ++i) ++p[BinOf(std::fabs(v[i]) * scale)];
    binned += end - start;
    pending += end - start;
    if (pending + block > kFlushEvery) {
      flush();
      pending = 0;
    }
  }
  if (pending > 0) flush();
  return binned;
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

void RangeStats::Add(const float* values, int64_t n) { AddSampled(values, n, 0); }

SampleRange RangeStats::AddExtremes(const float* values, int64_t n, const SampleRange* known) {
  const Extremes e =
      known ? Extremes{known->lo, known->hi, known->nonfinite} : FindExtremes(values, n);
  nonfinite_ += e.nonfinite;
  if (n == e.nonfinite) return {e.lo, e.hi, e.nonfinite};
  min_ = count_ == 0 ? e.lo : std::min<double>(min_, e.lo);
  max_ = count_ == 0 ? e.hi : std::max<double>(max_, e.hi);
  count_ += n - e.nonfinite;
  return {e.lo, e.hi, e.nonfinite};
}

SampleRange RangeStats::AddSampled(const float* values, int64_t n, int64_t max_binned,
                                   const SampleRange* known) {
  const uint64_t before = count_;
  const SampleRange range = AddExtremes(values, n, known);
  if (count_ == before) return range;  // nothing finite
  GrowTo(abs_max());
  // range_ is a power of two, so the scale is exact and so is every bin index.
  const float scale = range_ > 0 ? static_cast<float>(kHistogramBins / range_) : 0.f;
  if (max_binned <= 0 || n <= max_binned) {
    binned_ += static_cast<uint64_t>(BinAbsValues(values, n, n, n, scale, bins_.data()));
    return range;
  }
  // Whole cache lines (kSampleBlock values) every stride-th block: reading 1/stride of the
  // tensor's memory instead of touching every line for a value or two.
  const int64_t stride = ((n + max_binned - 1) / max_binned) | 1;
  binned_ += static_cast<uint64_t>(
      BinAbsValues(values, n, kSampleBlock, stride * kSampleBlock, scale, bins_.data()));
  return range;
}

void RangeStats::Merge(const RangeStats& other) {
  nonfinite_ += other.nonfinite_;
  if (other.count_ == 0) return;
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  binned_ += other.binned_;
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

double MseThreshold(const std::vector<uint64_t>& bins, double bin_width, double lo, double hi,
                    bool symmetric) {
  size_t stop = bins.size();
  while (stop > 0 && bins[stop - 1] == 0) --stop;
  if (stop == 0) return 0;
  // Suffix sums of n, n*c and n*c^2 (c: bin centre) give the clipping error above any cut.
  std::vector<double> n(stop + 1, 0), nc(stop + 1, 0), ncc(stop + 1, 0);
  for (size_t b = stop; b-- > 0;) {
    const double c = (static_cast<double>(b) + 0.5) * bin_width, k = static_cast<double>(bins[b]);
    n[b] = n[b + 1] + k;
    nc[b] = nc[b + 1] + k * c;
    ncc[b] = ncc[b + 1] + k * c * c;
  }
  double best_t = static_cast<double>(stop) * bin_width, best = -1;
  for (size_t i = 1; i <= stop; ++i) {  // T at the upper edge of bin i - 1
    const double t = static_cast<double>(i) * bin_width;
    const double step = symmetric ? std::min(t, std::max(-lo, hi)) / 127
                                  : (std::min(t, hi) - std::max(-t, std::min(lo, 0.0))) / 255;
    const double clipped = ncc[i] - 2 * t * nc[i] + t * t * n[i];
    const double error = (n[0] - n[i]) * step * step / 12 + clipped;
    if (best < 0 || error < best) {
      best = error;
      best_t = t;
    }
  }
  return best_t;
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
