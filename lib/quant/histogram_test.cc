// Calibration statistics and thresholds on small synthetic distributions whose answers are worked
// out by hand in the comments, plus the entropy search against a direct (slow) transcription of
// the GTC 2017 pseudocode.
#include "lib/quant/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace porttool::quant {
namespace {

TEST(RangeStats, MinMaxAndPowerOfTwoRange) {
  RangeStats s;
  std::vector<float> v = {-3.f, 1.f, 2.f, 0.f};
  s.Add(v.data(), v.size());
  EXPECT_EQ(s.min(), -3);
  EXPECT_EQ(s.max(), 2);
  EXPECT_EQ(s.count(), 4u);
  // |x| max 3 -> range 4, bin width 4/2048: 0 -> bin 0, 1 -> 512, 2 -> 1024, 3 -> 1536.
  EXPECT_EQ(s.range(), 4);
  EXPECT_EQ(s.bins()[0], 1u);
  EXPECT_EQ(s.bins()[512], 1u);
  EXPECT_EQ(s.bins()[1024], 1u);
  EXPECT_EQ(s.bins()[1536], 1u);
}

TEST(RangeStats, NonFiniteValuesAreCountedNotBinned) {
  RangeStats s;
  std::vector<float> v = {1.f, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity()};
  s.Add(v.data(), v.size());
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(s.nonfinite(), 2u);
  EXPECT_EQ(s.max(), 1);
}

// Growing the range merges bins exactly, so the histogram does not depend on the order values
// arrive in, nor on how they were split between threads.
TEST(RangeStats, OrderAndSplitIndependent) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = normal(rng) * (i % 100 == 0 ? 40.f : 1.f);
  RangeStats all;
  all.Add(v.data(), v.size());
  RangeStats reversed;
  for (size_t i = v.size(); i-- > 0;) reversed.Add(&v[i], 1);
  RangeStats a, b;
  a.Add(v.data(), 3);  // small range first, then a merge with a much larger one
  b.Add(v.data() + 3, v.size() - 3);
  a.Merge(b);
  for (const RangeStats* s : {&reversed, &a}) {
    EXPECT_EQ(s->bins(), all.bins());
    EXPECT_EQ(s->range(), all.range());
    EXPECT_EQ(s->min(), all.min());
    EXPECT_EQ(s->max(), all.max());
    EXPECT_EQ(s->count(), all.count());
  }
}

// The vectorised scan and the interleaved binning agree with binning one value at a time, on
// lengths that are not multiples of the lanes, all finite or with NaN, infinities and huge finite
// values mixed in.
TEST(RangeStats, BulkAddEqualsOneValueAtATime) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (size_t n : {1u, 3u, 17u, 1000u, 4099u, 1000u, 4099u}) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    static int round = 0;
    if (n > 10 && round++ < 3) {
      v[2] = std::numeric_limits<float>::quiet_NaN();
      v[n - 1] = -std::numeric_limits<float>::infinity();
      v[n / 2] = std::numeric_limits<float>::max();
    }
    RangeStats bulk, single;
    bulk.Add(v.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) single.Add(&v[i], 1);
    SCOPED_TRACE(n);
    EXPECT_EQ(bulk.bins(), single.bins());
    EXPECT_EQ(bulk.min(), single.min());
    EXPECT_EQ(bulk.max(), single.max());
    EXPECT_EQ(bulk.count(), single.count());
    EXPECT_EQ(bulk.nonfinite(), single.nonfinite());
  }
}

// AddSampled keeps min/max/count exact but bins runs of 16 values every stride-th run: 100 values
// with about 20 binned -> stride ceil(100/20) = 5 (odd) -> runs [0, 16) and [80, 96), 32 values.
// Values are i / 10 (|x| max 9.9 -> range 16, bin width 1/128), except v[50] = -20 (not binned,
// but the minimum: range 32, bin width 1/64). Binned: 0.0 .. 1.5 and 8.0 .. 9.5.
TEST(RangeStats, SampledBinsEvenlyStridedRunsAndKeepsExtremesExact) {
  std::vector<float> v(100);
  for (int i = 0; i < 100; ++i) v[i] = static_cast<float>(i) / 10.f;
  v[50] = -20.f;
  RangeStats s;
  s.AddSampled(v.data(), v.size(), 20);
  EXPECT_EQ(s.min(), -20);
  EXPECT_FLOAT_EQ(static_cast<float>(s.max()), 9.9f);
  EXPECT_EQ(s.count(), 100u);
  ASSERT_EQ(s.range(), 32);
  uint64_t total = 0, below_two = 0, above_eight = 0;
  for (int b = 0; b < kHistogramBins; ++b) {
    total += s.bins()[b];
    if (b < 2 * 64) below_two += s.bins()[b];
    if (b >= 8 * 64) above_eight += s.bins()[b];
  }
  EXPECT_EQ(total, 32u);
  EXPECT_EQ(below_two, 16u);
  EXPECT_EQ(above_eight, 16u);
  EXPECT_TRUE(s.has_histogram());
  RangeStats extremes;
  extremes.AddExtremes(v.data(), v.size());
  EXPECT_FALSE(extremes.has_histogram());
  EXPECT_EQ(extremes.min(), -20);
  EXPECT_EQ(extremes.max(), s.max());
}

// The partial counts are 16-bit: a million equal values, all binned (one run) or in strided runs,
// all land in one bin with the exact count. A missed fold would wrap at 65536.
TEST(RangeStats, CountsOfOneBinPastSixteenBits) {
  const int64_t n = 1000003;  // not a multiple of 4: the run's tail goes to one partial
  std::vector<float> v(n, 0.75f);
  RangeStats all;
  all.Add(v.data(), n);
  EXPECT_EQ(*std::max_element(all.bins().begin(), all.bins().end()), uint64_t(n));
  RangeStats sampled;
  sampled.AddSampled(v.data(), n, 500000);  // stride 3: every third 16-value run
  uint64_t total = 0;
  for (uint64_t c : sampled.bins()) total += c;
  EXPECT_EQ(*std::max_element(sampled.bins().begin(), sampled.bins().end()), total);
  EXPECT_EQ(total, uint64_t((n / 48) * 16 + std::min<int64_t>(16, n % 48)));
}

// One outlier at 99.5 (bin 99 of width 1) and N values at 0.5, uint8 over [0, 100]. The error at a
// cut T below the outlier is N (T / 255)^2 / 12 + (99.5 - T)^2: for N = 10^6 its minimum is at
// T = 99.5 / (1 + 10^6 / (255^2 * 12)) = 43.6 -> the bin edge 44 (43: 5561.9, 44: 5561.3,
// 45: 5565.5), far below the 12820 of keeping the outlier. Symmetric int8 (127 steps per side):
// 99.5 / (1 + 10^6 / (127^2 * 12)) = 16.1 -> 16. With N = 1000 the outlier is kept: T = 99 costs
// 1000 (99 / 255)^2 / 12 + 0.5^2 = 12.81, T = 100 costs 1001 (100 / 255)^2 / 12 = 12.83, and
// T = 98 costs 12.30 + 2.25.
TEST(Thresholds, MseByHand) {
  std::vector<uint64_t> bins(kHistogramBins, 0);
  bins[99] = 1;
  bins[0] = 1000000;
  EXPECT_EQ(MseThreshold(bins, 1.0, 0, 100, false), 44);
  EXPECT_EQ(MseThreshold(bins, 1.0, 0, 100, true), 16);
  bins[0] = 1000;
  EXPECT_EQ(MseThreshold(bins, 1.0, 0, 100, false), 99);
}

// 990 values in [0, 0.99) and 10 outliers at 100: range 128, bin width 1/16. The 99th percentile
// is inside bin 15 ([0.9375, 1)), so T = 1; at 99.5 % it is the outliers' bin 1600, whose upper
// edge is 100.0625.
TEST(Thresholds, PercentileByHand) {
  RangeStats s;
  std::vector<float> v;
  for (int i = 0; i < 990; ++i) v.push_back(static_cast<float>(i) / 1000.f);
  for (int i = 0; i < 10; ++i) v.push_back(i % 2 ? 100.f : -100.f);
  s.Add(v.data(), v.size());
  ASSERT_EQ(s.range(), 128);
  EXPECT_DOUBLE_EQ(PercentileThreshold(s.bins(), s.bin_width(), 99.0), 1.0);
  EXPECT_DOUBLE_EQ(PercentileThreshold(s.bins(), s.bin_width(), 99.5), 100.0625);
  EXPECT_DOUBLE_EQ(PercentileThreshold(s.bins(), s.bin_width(), 100.0), 100.0625);
}

// The pseudocode, transcribed directly: O(bins^2), with explicit P and Q arrays.
double SlowEntropyThreshold(std::vector<uint64_t> bins, double width, size_t levels) {
  bins[0] = bins[1];
  size_t stop = bins.size();
  while (stop > 0 && bins[stop - 1] == 0) --stop;
  if (stop <= levels) return stop * width;
  double best = std::numeric_limits<double>::infinity();
  size_t best_i = stop;
  for (size_t i = levels; i <= stop; ++i) {
    std::vector<double> p(bins.begin(), bins.begin() + i), q(i, 0);
    for (size_t k = i; k < stop; ++k) p[i - 1] += bins[k];
    std::vector<double> level_sum(levels, 0), level_nonzero(levels, 0);
    for (size_t k = 0; k < i; ++k) {
      size_t j = k * levels / i;
      level_sum[j] += bins[k];
      level_nonzero[j] += bins[k] ? 1 : 0;
    }
    for (size_t k = 0; k < i; ++k) {
      size_t j = k * levels / i;
      if (bins[k]) q[k] = level_sum[j] / level_nonzero[j];
    }
    double ps = 0, qs = 0;
    for (size_t k = 0; k < i; ++k) ps += p[k], qs += q[k];
    double kl = 0;
    for (size_t k = 0; k < i; ++k) {
      if (p[k] == 0) continue;
      if (q[k] == 0) {
        kl = std::numeric_limits<double>::infinity();
        break;
      }
      kl += p[k] / ps * std::log((p[k] / ps) / (q[k] / qs));
    }
    if (kl <= best + 1e-12) {
      best = std::min(best, kl);
      best_i = i;
    }
  }
  return best_i * width;
}

// Counts alternate 100, 300 over bins 0..127 (bin 0 then takes bin 1's 300: the zero spike is
// ignored), plus one outlier in bin 2047. Cutting at i = 128
// keeps every level one bin wide, so Q equals P except for the one folded outlier (KL ~ 4e-5);
// any wider window merges a 100 with a 300 into two 200s (KL ~ 0.13). Entropy clips the outlier:
// T = 128 bins; minmax and the 100th percentile keep it.
TEST(Thresholds, EntropyClipsAnIsolatedOutlier) {
  std::vector<uint64_t> bins(kHistogramBins, 0);
  for (int k = 0; k < 128; ++k) bins[k] = k % 2 ? 300 : 100;
  bins[2047] = 1;
  EXPECT_DOUBLE_EQ(EntropyThreshold(bins, 0.5), 64.0);
  EXPECT_DOUBLE_EQ(PercentileThreshold(bins, 0.5, 100.0), 1024.0);
}

// A histogram that is constant within every level of the full window is represented exactly by
// Q at i = stop (KL = 0), so nothing is clipped.
TEST(Thresholds, EntropyKeepsAFlatDistribution) {
  std::vector<uint64_t> bins(kHistogramBins, 0);
  for (int k = 0; k < 1024; ++k) bins[k] = 10;
  bins[0] = 5000;  // a spike of exact zeros does not pull the threshold down
  EXPECT_DOUBLE_EQ(EntropyThreshold(bins, 1.0), 1024.0);
  // Fewer non-empty bins than levels: the full range.
  std::vector<uint64_t> narrow(kHistogramBins, 0);
  narrow[3] = 5;
  EXPECT_DOUBLE_EQ(EntropyThreshold(narrow, 1.0), 4.0);
}

TEST(Thresholds, EntropyMatchesDirectPseudocode) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    RangeStats s;
    std::normal_distribution<float> normal(0.f, 1.f);
    std::exponential_distribution<float> expo(trial + 1.f);
    std::vector<float> v(20000);
    for (float& x : v) x = trial % 2 ? normal(rng) : expo(rng);
    v[0] = 12.f * (trial + 1);  // an outlier stretches the range
    s.Add(v.data(), v.size());
    std::vector<uint64_t> bins = s.bins();
    bins.resize(trial % 3 == 0 ? 700 : kHistogramBins);  // also short histograms
    double fast = EntropyThreshold(bins, s.bin_width());
    double slow = SlowEntropyThreshold(bins, s.bin_width(), 128);
    EXPECT_DOUBLE_EQ(fast, slow) << "trial " << trial;
  }
}

}  // namespace
}  // namespace porttool::quant
