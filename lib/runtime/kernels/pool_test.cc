// MaxPool (with Indices, dilations, ceil_mode, storage_order) and AveragePool (count_include_pad,
// ceil_mode) against a naive window walk; the global pools on a hand-checked example.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RandomFloats;
using testing_util::RunOp;

struct PoolCase {
  int64_t h, w, kh, kw, sh, sw, dh = 1, dw = 1, pt, pl, pb, pr;
  bool ceil = false;
};

int64_t OutSize(int64_t in, int64_t pad, int64_t k, int64_t s, int64_t d, int64_t pad_begin,
                bool ceil) {
  const int64_t span = in + pad - ((k - 1) * d + 1);
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pad_begin) --out;
  return out;
}

// 2-D pools over a [1, 2, H, W] input; returns max, indices, average (with and without pad).
struct NaivePool {
  std::vector<float> max, avg_pad, avg_nopad;
  std::vector<int64_t> index;
  int64_t oh, ow;
};

NaivePool RunNaive(const PoolCase& c, const Tensor& x) {
  NaivePool r;
  r.oh = OutSize(c.h, c.pt + c.pb, c.kh, c.sh, c.dh, c.pt, c.ceil);
  r.ow = OutSize(c.w, c.pl + c.pr, c.kw, c.sw, c.dw, c.pl, c.ceil);
  const float* px = x.data<float>();
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t oy = 0; oy < r.oh; ++oy)
      for (int64_t ox = 0; ox < r.ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t best_i = -1, valid = 0, padded = 0;
        double sum = 0;
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t y = oy * c.sh - c.pt + ky * c.dh, xx = ox * c.sw - c.pl + kx * c.dw;
            if (y < c.h + c.pb && xx < c.w + c.pr) ++padded;
            if (y < 0 || y >= c.h || xx < 0 || xx >= c.w) continue;
            const int64_t i = (ch * c.h + y) * c.w + xx;
            ++valid;
            sum += px[i];
            if (px[i] > best) best = px[i], best_i = i;
          }
        r.max.push_back(best);
        r.index.push_back(best_i);
        r.avg_nopad.push_back(static_cast<float>(sum / valid));
        r.avg_pad.push_back(static_cast<float>(sum / padded));
      }
  return r;
}

TEST(PoolKernels, MatchNaiveOverRandomConfigurations) {
  std::mt19937 rng(31);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 200; ++trial) {
    PoolCase c;
    c.kh = pick(1, 4), c.kw = pick(1, 4), c.sh = pick(1, 3), c.sw = pick(1, 3);
    c.pt = pick(0, c.kh - 1), c.pb = pick(0, c.kh - 1), c.pl = pick(0, c.kw - 1);
    c.pr = pick(0, c.kw - 1), c.ceil = pick(0, 1) == 1;
    const bool dilate = trial % 3 == 0;
    c.dh = dilate ? pick(1, 2) : 1, c.dw = dilate ? pick(1, 2) : 1;
    c.h = pick((c.kh - 1) * c.dh + 1, 12), c.w = pick((c.kw - 1) * c.dw + 1, 12);
    Tensor x = RandomFloats({1, 2, c.h, c.w}, rng);
    NaivePool expected = RunNaive(c, x);
    const std::vector<int64_t> shape = {1, 2, expected.oh, expected.ow};
    const std::vector<int64_t> pads = {c.pt, c.pl, c.pb, c.pr};
    const std::string what = "trial " + std::to_string(trial);
    NodeBuilder mp("MaxPool", 1, 2);
    mp.Ints("kernel_shape", {c.kh, c.kw}).Ints("strides", {c.sh, c.sw}).Ints("pads", pads);
    mp.Ints("dilations", {c.dh, c.dw}).Int("ceil_mode", c.ceil);
    auto out = RunOp(mp.node(), 12, {&x});
    testing_util::ExpectClose(out[0], shape, expected.max, what + " max");
    ASSERT_EQ(out[1].shape(), shape);
    for (size_t i = 0; i < expected.index.size(); ++i) {
      ASSERT_EQ(out[1].data<int64_t>()[i], expected.index[i]) << what << " index " << i;
    }
    if (dilate) continue;  // AveragePool has no dilations before opset 19
    for (int include : {0, 1}) {
      NodeBuilder ap("AveragePool", 1);
      ap.Ints("kernel_shape", {c.kh, c.kw}).Ints("strides", {c.sh, c.sw}).Ints("pads", pads);
      ap.Int("ceil_mode", c.ceil).Int("count_include_pad", include);
      auto avg = RunOp(ap.node(), 11, {&x});
      testing_util::ExpectClose(avg[0], shape, include ? expected.avg_pad : expected.avg_nopad,
                                what + " avg include_pad=" + std::to_string(include));
    }
    if (HasFatalFailure()) return;
  }
}

// [k, 1] windows over [N, C, T, 1] (sequence nets written as 2-D) take the tiled 1-D path when
// they tile T exactly, and the general one when they do not; both against the naive walk, with
// no Indices output (the path that asks for them is the general one).
TEST(PoolKernels, HeightOnlyWindowsMatchNaive) {
  std::mt19937 rng(32);
  for (const int64_t h : {12, 13}) {
    for (const int64_t k : {1, 2, 3, 4}) {
      PoolCase c{h, 1, k, 1, k, 1, 1, 1, 0, 0, 0, 0};
      Tensor x = RandomFloats({1, 2, h, 1}, rng);
      // Skipped by max (a window of the NaN alone would give -inf, which ExpectClose cannot
      // compare).
      if (k > 1) x.mutable_data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      NaivePool expected = RunNaive(c, x);
      NodeBuilder mp("MaxPool", 1);
      mp.Ints("kernel_shape", {k, 1}).Ints("strides", {k, 1});
      auto out = RunOp(mp.node(), 12, {&x});
      testing_util::ExpectClose(out[0], {1, 2, expected.oh, 1}, expected.max,
                                "h " + std::to_string(h) + " k " + std::to_string(k));
    }
  }
}

// MaxPool of case `c` on x at 1 and 2 threads, bit for bit the naive walk's result (the first
// maximum in row-major order; NaN skipped).
void ExpectMaxPoolIsTheWalkBitwise(const PoolCase& c, const Tensor& x, const std::string& what) {
  NaivePool expected = RunNaive(c, x);
  NodeBuilder mp("MaxPool", 1);
  mp.Ints("kernel_shape", {c.kh, c.kw}).Ints("strides", {c.sh, c.sw});
  mp.Ints("pads", {c.pt, c.pl, c.pb, c.pr}).Int("ceil_mode", c.ceil);
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    auto out = RunOp(mp.node(), 12, {&x});
    ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 2, expected.oh, expected.ow})) << what;
    for (size_t i = 0; i < expected.max.size(); ++i) {
      uint32_t got, want;
      std::memcpy(&got, out[0].data<float>() + i, 4);
      std::memcpy(&want, expected.max.data() + i, 4);
      ASSERT_EQ(got, want) << what << " element " << i << " at " << threads
                           << " threads: " << out[0].data<float>()[i] << " vs " << expected.max[i];
    }
  }
  SetNumThreads(0);
}

// Stride-1 windows of 3 taps or more without Indices (YOLOX's SPP: 5, 9, 13) take the separable
// path: bit for bit the walk's result, the first maximum in row-major order, at 1 and 2 threads.
// The values are drawn from a few, with +0, -0 and NaN among them, so windows tie on zeros of
// both signs (the one case where the order of the comparisons shows in the bits).
TEST(PoolKernels, LargeStride1WindowsEqualTheWalkBitwise) {
  std::mt19937 rng(49);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float pool[] = {0.f, -0.f, 0.f, -0.f, -1.f, -0.5f, 0.25f, nan};
  for (int trial = 0; trial < 120; ++trial) {
    PoolCase c;
    const int64_t ks[] = {3, 5, 9, 13};
    c.kh = ks[pick(0, 3)], c.kw = trial % 4 == 0 ? ks[pick(0, 3)] : c.kh;
    c.sh = c.sw = 1;
    c.pt = pick(0, c.kh - 1), c.pb = pick(0, c.kh - 1), c.pl = pick(0, c.kw - 1);
    c.pr = pick(0, c.kw - 1), c.ceil = pick(0, 1) == 1;
    // Every third plane up to 80 wide: rows of one vector, one and a tail, and four at once.
    c.h = pick(c.kh, 24), c.w = pick(c.kw, trial % 3 == 0 ? 80 : 24);
    Tensor x(onnx::TensorProto::FLOAT, {1, 2, c.h, c.w});
    // Trials 0-39 mostly positive values (zeros rare), the rest mostly zeros of both signs.
    for (int64_t i = 0; i < x.size(); ++i) {
      x.mutable_data<float>()[i] = trial < 40 && pick(0, 3) != 0
                                       ? std::uniform_real_distribution<float>(0, 1)(rng)
                                       : pool[pick(0, 7)];
    }
    ExpectMaxPoolIsTheWalkBitwise(c, x,
                                  "trial " + std::to_string(trial) + " k " + std::to_string(c.kh) +
                                      "x" + std::to_string(c.kw));
  }
}

// 2x2 windows at stride 2 (BlazeFace's pools) take their own path when every window lies inside
// the input: bit for bit the walk's result on values tied on zeros of both signs and NaN, with
// odd sizes, ceil_mode (a partial last window: the general path) and pads (the general path).
TEST(PoolKernels, TwoByTwoStride2WindowsEqualTheWalkBitwise) {
  std::mt19937 rng(50);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float pool[] = {0.f, -0.f, 0.f, -0.f, -1.f, -0.5f, 0.25f, nan};
  for (int trial = 0; trial < 60; ++trial) {
    PoolCase c;
    c.kh = c.kw = 2;
    c.sh = c.sw = 2;
    const bool padded = trial % 5 == 4;
    c.pt = c.pl = padded ? 1 : 0;
    c.pb = c.pr = 0;
    c.ceil = trial % 3 == 2;
    c.h = pick(2, 33), c.w = pick(2, 33);
    Tensor x(onnx::TensorProto::FLOAT, {1, 2, c.h, c.w});
    for (int64_t i = 0; i < x.size(); ++i) {
      x.mutable_data<float>()[i] =
          trial < 20 ? std::uniform_real_distribution<float>(-1, 1)(rng) : pool[pick(0, 7)];
    }
    ExpectMaxPoolIsTheWalkBitwise(
        c, x,
        "trial " + std::to_string(trial) + " " + std::to_string(c.h) + "x" + std::to_string(c.w));
  }
}

TEST(PoolKernels, StorageOrderColumnMajorIndices) {
  // 2x3 input, 2x2 window stride 1: max of each window, index in column-major order h + w * H.
  Tensor x = testing_util::FloatTensor({1, 1, 2, 3}, {1, 6, 2, 5, 3, 4});
  NodeBuilder mp("MaxPool", 1, 2);
  mp.Ints("kernel_shape", {2, 2}).Int("storage_order", 1);
  auto out = RunOp(mp.node(), 12, {&x});
  testing_util::ExpectClose(out[0], {1, 1, 1, 2}, {6, 6}, "values");
  EXPECT_EQ(out[1].data<int64_t>()[0], 0 + 1 * 2);  // (h=0, w=1)
  EXPECT_EQ(out[1].data<int64_t>()[1], 0 + 1 * 2);
}

TEST(PoolKernels, GlobalPoolsAndRejections) {
  Tensor x = testing_util::FloatTensor({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -8});
  auto avg = RunOp(NodeBuilder("GlobalAveragePool", 1).node(), 1, {&x});
  testing_util::ExpectClose(avg[0], {1, 2, 1, 1}, {2.5f, -3.5f}, "avg");
  auto mx = RunOp(NodeBuilder("GlobalMaxPool", 1).node(), 1, {&x});
  testing_util::ExpectClose(mx[0], {1, 2, 1, 1}, {4, -1}, "max");
  EXPECT_THROW(RunOp(NodeBuilder("MaxPool", 1).node(), 12, {&x}), Error);  // no kernel_shape
  EXPECT_THROW(RunOp(NodeBuilder("AveragePool", 1)
                         .Ints("kernel_shape", {2, 2})
                         .Ints("dilations", {2, 2})
                         .node(),
                     11, {&x}),
               Error);
  EXPECT_THROW(RunOp(NodeBuilder("MaxPool", 1).Ints("kernel_shape", {2}).node(), 12, {&x}), Error);
}

}  // namespace
}  // namespace porttool::runtime
