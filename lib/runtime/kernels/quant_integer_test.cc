// QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger and DynamicQuantizeLinear in the cases
// the ONNX backend node tests leave out (they cover uint8 per-tensor runs only): per-channel
// weights with group > 1 and depthwise, int8 activations, rounding ties and saturation, N-D
// batch broadcasting, an all-zero DynamicQuantizeLinear input, and the rejections. Expected
// values are worked out by hand or by a direct real-valued convolution / matrix product written
// here (dequantize, compute in double, quantize); the scales are powers of two so that reference
// and kernel compute the same exact real values, ties included. Random cases with arbitrary
// scales are checked bit for bit against ONNX Runtime when it is installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime::testing_util {
namespace {

using TP = onnx::TensorProto;

template <typename T>
Tensor Make(int32_t dtype, const std::vector<int64_t>& shape, const std::vector<T>& values) {
  Tensor t(dtype, shape);
  EXPECT_EQ(static_cast<size_t>(t.size()), values.size());
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}
Tensor U8(const std::vector<int64_t>& shape, const std::vector<uint8_t>& v) {
  return Make<uint8_t>(TP::UINT8, shape, v);
}
Tensor I8(const std::vector<int64_t>& shape, const std::vector<int8_t>& v) {
  return Make<int8_t>(TP::INT8, shape, v);
}
Tensor I32(const std::vector<int64_t>& shape, const std::vector<int32_t>& v) {
  return Make<int32_t>(TP::INT32, shape, v);
}
Tensor F32(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  return Make<float>(TP::FLOAT, shape, v);
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

template <typename T>
Tensor Random(int32_t dtype, const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor t(dtype, shape);
  std::uniform_int_distribution<int> dist(std::numeric_limits<T>::lowest(),
                                          std::numeric_limits<T>::max());
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = static_cast<T>(dist(rng));
  return t;
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case TP::UINT8:
      return t.data<uint8_t>()[i];
    case TP::INT8:
      return t.data<int8_t>()[i];
    case TP::INT32:
      return t.data<int32_t>()[i];
    default:
      return t.data<float>()[i];
  }
}

// Per-channel value c of a scalar or 1-D parameter.
double Channel(const Tensor& t, int64_t c) { return At(t, t.size() == 1 ? 0 : c); }

// ---- a direct 2-D convolution on real values ----

struct Conv2D {
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
};

// y[n][m][oh][ow] = sum over the group's channels and taps of x * w, reading 0 outside x.
std::vector<double> DirectConv(const Conv2D& c, const std::vector<double>& x,
                               const std::vector<int64_t>& xs, const std::vector<double>& w,
                               const std::vector<int64_t>& ws, std::vector<int64_t>& out_shape) {
  const int64_t n_ = xs[0], ci = xs[1], h = xs[2], wd = xs[3];
  const int64_t m = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t oh =
      (h + c.pads[0] + c.pads[2] - ((kh - 1) * c.dilations[0] + 1)) / c.strides[0] + 1;
  const int64_t ow =
      (wd + c.pads[1] + c.pads[3] - ((kw - 1) * c.dilations[1] + 1)) / c.strides[1] + 1;
  out_shape = {n_, m, oh, ow};
  std::vector<double> y(n_ * m * oh * ow, 0.0);
  const int64_t mg = m / c.group;
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t co = 0; co < m; ++co)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = 0;
          for (int64_t cc = 0; cc < cg; ++cc) {
            const int64_t cin = (co / mg) * cg + cc;
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = oy * c.strides[0] - c.pads[0] + ky * c.dilations[0];
                const int64_t ix = ox * c.strides[1] - c.pads[1] + kx * c.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += x[((n * ci + cin) * h + iy) * wd + ix] *
                       w[((co * cg + cc) * kh + ky) * kw + kx];
              }
          }
          y[((n * m + co) * oh + oy) * ow + ox] = acc;
        }
  return y;
}

NodeBuilder ConvNode(const char* op, int inputs, const Conv2D& c) {
  NodeBuilder b(op, inputs);
  b.Int("group", c.group)
      .Ints("strides", c.strides)
      .Ints("pads", c.pads)
      .Ints("dilations", c.dilations);
  return b;
}

// Quantizes a real value the way the spec defines it: round half to even, add the zero point,
// saturate to the output type's range.
double Quantize(double real, double scale, double zp, double lo, double hi) {
  return std::clamp(std::nearbyint(real / scale) + zp, lo, hi);
}

// QLinearConv against dequantize -> direct conv in double -> quantize.
void CheckQLinearConv(const Conv2D& c, const Tensor& x, const Tensor& x_scale, const Tensor& x_zp,
                      const Tensor& w, const Tensor& w_scale, const Tensor& w_zp,
                      const Tensor& y_scale, const Tensor& y_zp, const Tensor* bias) {
  std::vector<double> xr(x.size()), wr(w.size());
  for (int64_t i = 0; i < x.size(); ++i) xr[i] = (At(x, i) - At(x_zp, 0)) * At(x_scale, 0);
  const int64_t m = w.dim(0), per_m = w.size() / m;
  for (int64_t i = 0; i < w.size(); ++i) {
    wr[i] = (At(w, i) - Channel(w_zp, i / per_m)) * Channel(w_scale, i / per_m);
  }
  std::vector<int64_t> out_shape;
  std::vector<double> real = DirectConv(c, xr, x.shape(), wr, w.shape(), out_shape);
  const bool u8 = y_zp.dtype() == TP::UINT8;
  const double lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  const int64_t plane = out_shape[2] * out_shape[3];
  std::vector<double> expected(real.size());
  for (size_t i = 0; i < real.size(); ++i) {
    const int64_t co = (static_cast<int64_t>(i) / plane) % m;
    // The bias is quantized with scale x_scale * w_scale[co] and zero point 0.
    const double b = bias ? At(*bias, co) * At(x_scale, 0) * Channel(w_scale, co) : 0.0;
    expected[i] = Quantize(real[i] + b, At(y_scale, 0), At(y_zp, 0), lo, hi);
  }
  std::vector<const Tensor*> inputs = {&x, &x_scale, &x_zp, &w, &w_scale, &w_zp, &y_scale, &y_zp};
  if (bias) inputs.push_back(bias);
  auto out = RunOp(ConvNode("QLinearConv", static_cast<int>(inputs.size()), c).node(), 10, inputs);
  ASSERT_EQ(out[0].shape(), out_shape);
  ASSERT_EQ(out[0].dtype(), y_zp.dtype());
  int saturated = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(At(out[0], i), expected[i]) << "element " << i << " (real " << real[i] << ")";
    saturated += expected[i] == lo || expected[i] == hi;
  }
  // The data must exercise the requantization, not just its clamp.
  EXPECT_LT(saturated, static_cast<int>(expected.size()) / 4);
}

// ---- QLinearConv / ConvInteger ----

TEST(QuantIntegerKernels, QLinearConvPerChannelWeightsGroupTwo) {
  std::mt19937 rng(3);
  Conv2D c;
  c.group = 2;
  c.strides = {2, 1};
  c.pads = {1, 1, 1, 0};
  const Tensor x = Random<uint8_t>(TP::UINT8, {2, 4, 6, 5}, rng);
  const Tensor w = Random<int8_t>(TP::INT8, {4, 2, 3, 3}, rng);
  // One zero point and one power-of-two scale per output channel.
  const Tensor w_zp = I8({4}, {-3, 0, 5, 17});
  const Tensor w_scale = F32({4}, {1.f / 256, 1.f / 512, 1.f / 128, 1.f / 1024});
  const Tensor bias = I32({4}, {1000, -7, 0, 123457});
  CheckQLinearConv(c, x, F32({}, {1.f / 16}), U8({}, {131}), w, w_scale, w_zp, F32({}, {0.25f}),
                   U8({}, {128}), &bias);
}

TEST(QuantIntegerKernels, QLinearConvDepthwiseWithChannelMultiplierAndDilation) {
  std::mt19937 rng(5);
  Conv2D c;
  c.group = 3;  // 3 input channels, 6 outputs: two filters per channel
  c.dilations = {2, 2};
  c.pads = {2, 1, 2, 1};
  c.strides = {1, 2};
  const Tensor x = Random<uint8_t>(TP::UINT8, {1, 3, 7, 8}, rng);
  const Tensor w = Random<int8_t>(TP::INT8, {6, 1, 3, 3}, rng);
  const Tensor w_zp = I8({6}, {0, 1, -1, 2, -2, 0});
  const Tensor w_scale = F32({6}, {1.f / 64, 1.f / 32, 1.f / 128, 1.f / 64, 1.f / 16, 1.f / 32});
  CheckQLinearConv(c, x, F32({}, {1.f / 32}), U8({}, {100}), w, w_scale, w_zp, F32({}, {0.5f}),
                   U8({}, {120}), nullptr);
}

TEST(QuantIntegerKernels, QLinearConvInt8ActivationsAndUint8Weights) {
  std::mt19937 rng(11);
  Conv2D c;
  c.pads = {1, 1, 1, 1};
  const Tensor x = Random<int8_t>(TP::INT8, {1, 3, 5, 5}, rng);
  const Tensor w = Random<uint8_t>(TP::UINT8, {2, 3, 3, 3}, rng);
  CheckQLinearConv(c, x, F32({}, {1.f / 8}), I8({}, {-5}), w, F32({1}, {1.f / 512}), U8({1}, {128}),
                   F32({}, {0.5f}), I8({}, {3}), nullptr);
}

TEST(QuantIntegerKernels, QLinearConvInt8ByHand) {
  // x int8 [1,1,1,3] = {-10, 0, 20}, x_zp -10: centred {0, 10, 30}. w int8 [2,1,1,1] = {2, 1}
  // with per-channel zero points {0, 3} (centred {2, -2}) and scales {0.5, 0.25}; x_scale 1,
  // y_scale 1, y_zp int8 -1. Channel 0: {0, 10, 30} * 2 * 0.5 = {0, 10, 30}; channel 1:
  // {0, 10, 30} * -2 * 0.25 = {0, -5, -15}; plus y_zp: {-1, 9, 29}, {-1, -6, -16}.
  const Tensor x = I8({1, 1, 1, 3}, {-10, 0, 20});
  const Tensor x_scale = F32({}, {1.f}), x_zp = I8({}, {-10});
  const Tensor w = I8({2, 1, 1, 1}, {2, 1}), w_scale = F32({2}, {0.5f, 0.25f});
  const Tensor w_zp = I8({2}, {0, 3});
  const Tensor y_scale = F32({}, {1.f}), y_zp = I8({}, {-1});
  auto out = RunOp(NodeBuilder("QLinearConv", 8).node(), 10,
                   {&x, &x_scale, &x_zp, &w, &w_scale, &w_zp, &y_scale, &y_zp});
  ASSERT_EQ(out[0].dtype(), TP::INT8);
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 2, 1, 3}));
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{-1, 9, 29, -1, -6, -16}));
}

TEST(QuantIntegerKernels, ConvIntegerPerChannelZeroPointsAndSamePadding) {
  // x uint8 [1,2,2,2], x_zp 1; w int8 [2,1,2,2] with group 2 and w_zp {1, -1}; SAME_UPPER puts
  // the one padding row and column at the end.
  const Tensor x = U8({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});    // centred {0,1,2,3}, {4,5,6,7}
  const Tensor w = I8({2, 1, 2, 2}, {1, 2, 3, 4, -1, 0, 0, -1});  // centred {0,1,2,3}, {0,1,1,0}
  const Tensor x_zp = U8({}, {1}), w_zp = I8({2}, {1, -1});
  auto out =
      RunOp(NodeBuilder("ConvInteger", 4).Int("group", 2).Str("auto_pad", "SAME_UPPER").node(), 10,
            {&x, &w, &x_zp, &w_zp});
  ASSERT_EQ(out[0].dtype(), TP::INT32);
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  // Channel 0, taps {0,1,2,3} over windows of {0,1,2,3}: (0,0): 0*0+1*1+2*2+3*3 = 14;
  // (0,1): 0*1+1*0+2*3+3*0 = 6; (1,0): 0*2+1*3 = 3; (1,1): 0*3 = 0.
  // Channel 1, taps {0,1,1,0} over {4,5,6,7}: (0,0): 5+6 = 11; (0,1): 0*5+1*0+1*7 = 7;
  // (1,0): 0*6+1*7 = 7; (1,1): 0.
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{14, 6, 3, 0, 11, 7, 7, 0}));
}

// ConvInteger over geometries that reach every edge of the int16 product: output channels per
// group from 1 to 9 (tiles of 4 rows and their remainders), odd and even channels x taps (the
// products go in pairs; an odd count pairs the last with zero), 1 to 80 output positions per
// row (32-column tiles and masked remainders), strides 1 and 2, pads on every side; full-range
// uint8 values and zero points, against the direct sum in double (exact: every sum fits), at 1
// and 2 threads.
TEST(QuantIntegerKernels, ConvIntegerMatchesTheDirectSumOverTileEdges) {
  std::mt19937 rng(52);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 40; ++trial) {
    Conv2D c;
    c.group = trial % 5 == 0 ? pick(2, 3) : 1;
    const int64_t m = c.group * pick(1, 9), cg = pick(1, 5), k = pick(1, 3);
    c.strides = {pick(1, 2), pick(1, 2)};
    c.pads = {pick(0, k - 1), pick(0, k - 1), pick(0, k - 1), pick(0, k - 1)};
    const Tensor x =
        Random<uint8_t>(TP::UINT8, {pick(1, 2), c.group * cg, pick(k, 9), pick(k, 80)}, rng);
    const Tensor w = Random<uint8_t>(TP::UINT8, {m, cg, k, k}, rng);
    const Tensor x_zp = U8({}, {static_cast<uint8_t>(pick(0, 255))});
    const Tensor w_zp = U8({}, {static_cast<uint8_t>(pick(0, 255))});
    std::vector<double> xr(x.size()), wr(w.size());
    for (int64_t i = 0; i < x.size(); ++i) xr[i] = At(x, i) - At(x_zp, 0);
    for (int64_t i = 0; i < w.size(); ++i) wr[i] = At(w, i) - At(w_zp, 0);
    std::vector<int64_t> out_shape;
    const std::vector<double> expected = DirectConv(c, xr, x.shape(), wr, w.shape(), out_shape);
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      auto out = RunOp(ConvNode("ConvInteger", 4, c).node(), 10, {&x, &w, &x_zp, &w_zp});
      ASSERT_EQ(out[0].shape(), out_shape) << "trial " << trial;
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(At(out[0], static_cast<int64_t>(i)), expected[i])
            << "trial " << trial << " element " << i << " at " << threads << " threads";
      }
    }
  }
  SetNumThreads(0);
}

// ---- QLinearMatMul / MatMulInteger ----

std::vector<Tensor> QLinearMatMul(const Tensor& a, float a_scale, const Tensor& a_zp,
                                  const Tensor& b, const Tensor& b_scale, const Tensor& b_zp,
                                  float y_scale, const Tensor& y_zp) {
  const Tensor as = F32({}, {a_scale}), ys = F32({}, {y_scale});
  return RunOp(NodeBuilder("QLinearMatMul", 8).node(), 10,
               {&a, &as, &a_zp, &b, &b_scale, &b_zp, &ys, &y_zp});
}

TEST(QuantIntegerKernels, QLinearMatMulRoundsHalfToEven) {
  // a * 0.5 for odd a lands exactly on .5: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2,
  // 63.5 -> 64.
  const Tensor a = I8({6, 1}, {1, 3, 5, -1, -3, 127});
  auto out = QLinearMatMul(a, 1.f, I8({}, {0}), I8({1, 1}, {1}), F32({}, {0.5f}), I8({}, {0}), 1.f,
                           I8({}, {0}));
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{0, 2, 2, 0, -2, 64}));
}

TEST(QuantIntegerKernels, QLinearMatMulSaturates) {
  // uint8: a centred on 100 times b centred on 1 (3 - 1 = 2): {-200, 310, 0, 20} + y_zp 150.
  const Tensor a = U8({4, 1}, {0, 255, 100, 110});
  auto u8 = QLinearMatMul(a, 1.f, U8({}, {100}), U8({1, 1}, {3}), F32({}, {1.f}), U8({}, {1}), 1.f,
                          U8({}, {150}));
  EXPECT_EQ(Values<uint8_t>(u8[0]), (std::vector<uint8_t>{0, 255, 150, 170}));
  // int8: -128 * 127 and 127 * 127 leave the int8 range on both sides.
  auto i8 = QLinearMatMul(I8({2, 1}, {-128, 127}), 1.f, I8({}, {0}), I8({1, 1}, {127}),
                          F32({}, {1.f}), I8({}, {0}), 1.f, I8({}, {0}));
  EXPECT_EQ(Values<int8_t>(i8[0]), (std::vector<int8_t>{-128, 127}));
}

TEST(QuantIntegerKernels, QLinearMatMulPerColumnB) {
  // b's columns have zero points {1, 0} and scales {1, 0.5}: column 0 = 10*0 + 20*2 = 40,
  // column 1 = (10*2 + 20*4) * 0.5 = 50.
  auto out = QLinearMatMul(U8({1, 2}, {10, 20}), 1.f, U8({}, {0}), U8({2, 2}, {1, 2, 3, 4}),
                           F32({2}, {1.f, 0.5f}), U8({2}, {1, 0}), 1.f, U8({}, {0}));
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{40, 50}));
}

TEST(QuantIntegerKernels, MatMulIntegerBroadcastsBatchDims) {
  // A [2,1,2,3] uint8 with a zero point per row of each matrix ([2,1,2,1]); B [3,3,2] int8 with
  // a zero point per column ([2]). Batch dims [2,1] and [3] broadcast to [2,3].
  std::mt19937 rng(17);
  const Tensor a = Random<uint8_t>(TP::UINT8, {2, 1, 2, 3}, rng);
  const Tensor b = Random<int8_t>(TP::INT8, {3, 3, 2}, rng);
  const Tensor a_zp = U8({2, 1, 2, 1}, {0, 7, 200, 255});
  const Tensor b_zp = I8({2}, {-128, 9});
  auto out = RunOp(NodeBuilder("MatMulInteger", 4).node(), 10, {&a, &b, &a_zp, &b_zp});
  ASSERT_EQ(out[0].dtype(), TP::INT32);
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3, 2, 2}));
  std::vector<int32_t> expected;
  for (int i0 = 0; i0 < 2; ++i0)
    for (int i1 = 0; i1 < 3; ++i1)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          int64_t acc = 0;
          for (int k = 0; k < 3; ++k) {
            acc += (At(a, (i0 * 2 + r) * 3 + k) - At(a_zp, i0 * 2 + r)) *
                   (At(b, (i1 * 3 + k) * 2 + c) - At(b_zp, c));
          }
          expected.push_back(static_cast<int32_t>(acc));
        }
  EXPECT_EQ(Values<int32_t>(out[0]), expected);
}

TEST(QuantIntegerKernels, MatMulIntegerPromotesVectorsAndDefaultsZeroPoints) {
  // A [3] is a row vector against each of B's two [3,2] matrices; no zero points: 0.
  const Tensor a = I8({3}, {1, -2, 3});
  const Tensor b = U8({2, 3, 2}, {1, 2, 3, 4, 5, 6, 255, 0, 0, 255, 1, 1});
  auto out = RunOp(NodeBuilder("MatMulInteger", 2).node(), 10, {&a, &b});
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  // [1,-2,3] x [[1,2],[3,4],[5,6]] = [10, 12]; x [[255,0],[0,255],[1,1]] = [258, -507].
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{10, 12, 258, -507}));
}

// ---- DynamicQuantizeLinear ----

TEST(QuantIntegerKernels, DynamicQuantizeLinearAllZeroInput) {
  // The range [0, 0] would make the scale 0 and the zero point 0/0; like ONNX Runtime the
  // kernel gives scale 1 and zero point 0, and every value quantizes to 0.
  const Tensor x = F32({2, 2}, {0.f, -0.f, 0.f, 0.f});
  auto out = RunOp(NodeBuilder("DynamicQuantizeLinear", 1, 3).node(), 11, {&x});
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0, 0, 0}));
  ASSERT_EQ(out[1].shape(), std::vector<int64_t>{});
  EXPECT_EQ(out[1].data<float>()[0], 1.f);
  EXPECT_FALSE(std::isnan(out[1].data<float>()[0]));
  EXPECT_EQ(Values<uint8_t>(out[2]), (std::vector<uint8_t>{0}));
}

TEST(QuantIntegerKernels, DynamicQuantizeLinearByHand) {
  // Range [-1, 3]: scale 4/255, zero point 1 / (4/255) = 63.75 -> 64. 0.5 / scale = 31.875 ->
  // 32 (+64 = 96); 3 / scale = 191.25 -> 191 (+64 = 255); -1 -> -64 + 64 = 0.
  const Tensor x = F32({4}, {-1.f, 0.f, 0.5f, 3.f});
  auto out = RunOp(NodeBuilder("DynamicQuantizeLinear", 1, 3).node(), 11, {&x});
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{0, 64, 96, 255}));
  EXPECT_EQ(out[1].data<float>()[0], 4.f / 255.f);
  EXPECT_EQ(Values<uint8_t>(out[2]), (std::vector<uint8_t>{64}));
}

// Ties round half to even in the sixteen-lane loop and its tail alike: the range [-10, 245]
// gives scale 1 and zero point 10, so x = k + 0.5 lands exactly between two steps; NaN goes to
// the zero point.
TEST(QuantIntegerKernels, DynamicQuantizeLinearRoundsTiesToEvenInEveryLane) {
  std::vector<float> x = {-10.f, 245.f};
  for (int k = -10; k < 40; ++k) x.push_back(static_cast<float>(k) + 0.5f);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  const Tensor in = F32({static_cast<int64_t>(x.size())}, x);
  auto out = RunOp(NodeBuilder("DynamicQuantizeLinear", 1, 3).node(), 11, {&in});
  ASSERT_EQ(out[1].data<float>()[0], 1.f);
  ASSERT_EQ(Values<uint8_t>(out[2]), (std::vector<uint8_t>{10}));
  const std::vector<uint8_t> y = Values<uint8_t>(out[0]);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 255);
  for (int k = -10; k < 40; ++k) {
    const int even = k % 2 == 0 ? k : k + 1;  // k + 0.5 rounds to the even one of k, k + 1
    EXPECT_EQ(y[static_cast<size_t>(k + 12)], even + 10) << "x = " << k << ".5";
  }
  EXPECT_EQ(y.back(), 10) << "NaN quantizes to the zero point";
}

// The range of a tensor of several blocks (split over the threads): the minimum and the maximum
// in different blocks, a NaN in a third, at 1 and 2 threads: the By-hand numbers again.
TEST(QuantIntegerKernels, DynamicQuantizeLinearRangeOverBlocksAndThreads) {
  std::vector<float> x(100000, 0.5f);
  x[5] = -1.f;
  x[70000] = 3.f;
  x[40000] = std::numeric_limits<float>::quiet_NaN();
  const Tensor in = F32({static_cast<int64_t>(x.size())}, x);
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    auto out = RunOp(NodeBuilder("DynamicQuantizeLinear", 1, 3).node(), 11, {&in});
    EXPECT_EQ(out[1].data<float>()[0], 4.f / 255.f) << threads << " threads";
    EXPECT_EQ(Values<uint8_t>(out[2]), (std::vector<uint8_t>{64})) << threads << " threads";
    const std::vector<uint8_t> y = Values<uint8_t>(out[0]);
    EXPECT_EQ(y[5], 0);
    EXPECT_EQ(y[70000], 255);
    EXPECT_EQ(y[0], 96);
  }
  SetNumThreads(0);
}

// ---- constants centred at plan time ----

TEST(QuantIntegerKernels, ConstantWeightsPreparedOnceGiveTheSameResults) {
  // The numbers of QLinearConvInt8ByHand and QLinearMatMulPerColumnB, with the weights (and B)
  // and their per-channel zero points as initializers, which the prepare step centres.
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (int8[1, 1, 1, 3] x, uint8[1, 2] a) => (int8[1, 2, 1, 3] y, int32[1, 2] z)
  <float xs = {1.0}, int8 xz = {-10}, int8[2, 1, 1, 1] w = {2, 1}, float[2] ws = {0.5, 0.25},
   int8[2] wz = {0, 3}, float ys = {1.0}, int8 yz = {-1}, uint8[2, 2] b = {1, 2, 3, 4},
   uint8[2] bz = {1, 0}> {
  y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz)
  z = MatMulInteger(a, b, , bz)
})");
  Session session(model);
  for (int run = 0; run < 2; ++run) {
    auto out = session.Run({{"x", I8({1, 1, 1, 3}, {-10, 0, 20})}, {"a", U8({1, 2}, {10, 20})}});
    EXPECT_EQ(Values<int8_t>(out[0].value), (std::vector<int8_t>{-1, 9, 29, -1, -6, -16}));
    // 10 * (1 - 1) + 20 * (3 - 1) = 40; 10 * 2 + 20 * 4 = 100.
    EXPECT_EQ(Values<int32_t>(out[1].value), (std::vector<int32_t>{40, 100}));
  }
}

// ---- rejections ----

std::string BadInput(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(QuantIntegerKernels, NonScalarXScaleIsRejectedNamingIt) {
  const Tensor x = U8({1, 1, 2, 2}, {1, 2, 3, 4}), w = U8({1, 1, 1, 1}, {1});
  const Tensor x_scale = F32({2}, {1.f, 1.f}), one = F32({}, {1.f}), zp = U8({}, {0});
  const std::string msg = BadInput([&] {
    RunOp(NodeBuilder("QLinearConv", 8).node(), 10, {&x, &x_scale, &zp, &w, &one, &zp, &one, &zp});
  });
  EXPECT_NE(msg.find("node 'QLinearConv_under_test' (QLinearConv)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x_scale float32[2] must be a scalar"), std::string::npos) << msg;
}

TEST(QuantIntegerKernels, BadConstantsAndAttributesFailWhenTheSessionIsBuilt) {
  // x_scale is an initializer of two values: the prepare step rejects it before any run.
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (uint8[1, 1, 3, 3] x) => (uint8[1, 2, 3, 3] y)
  <float[2] xs = {1.0, 2.0}, uint8 xz = {0}, uint8[2, 1, 1, 1] w = {1, 2}, float ws = {1.0},
   uint8 wz = {0}, float ys = {1.0}, uint8 yz = {0}> {
  y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz)
})");
  model.proto.mutable_graph()->mutable_node(0)->set_name("qconv");
  std::string msg = BadInput([&] { Session session(model); });
  EXPECT_NE(msg.find("node 'qconv' (QLinearConv): x_scale float32[2] must be a scalar"),
            std::string::npos)
      << msg;

  // Per-channel w_scale of the wrong length, against constant weights with 2 output channels.
  io::Model wrong_channels = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (uint8[1, 1, 3, 3] x) => (uint8[1, 2, 3, 3] y)
  <float xs = {1.0}, uint8 xz = {0}, uint8[2, 1, 1, 1] w = {1, 2}, float[3] ws = {1.0, 1.0, 1.0},
   uint8[3] wz = {0, 0, 0}, float ys = {1.0}, uint8 yz = {0}> {
  y = QLinearConv(x, xs, xz, w, ws, wz, ys, yz)
})");
  msg = BadInput([&] { Session session(wrong_channels); });
  EXPECT_NE(msg.find("per output channel (2)"), std::string::npos) << msg;

  // An unknown auto_pad value, with nothing constant at all.
  io::Model bad_pad = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (uint8[1, 1, 3, 3] x, uint8[1, 1, 1, 1] w) => (int32[1, 1, 3, 3] y) {
  y = ConvInteger <auto_pad = "SAME"> (x, w)
})");
  msg = BadInput([&] { Session session(bad_pad); });
  EXPECT_NE(msg.find("attribute 'auto_pad' has value 'SAME'"), std::string::npos) << msg;
}

TEST(QuantIntegerKernels, MisshapenZeroPointsAreRejected) {
  const Tensor a = U8({2, 3}, {1, 2, 3, 4, 5, 6}), b = U8({3, 2}, {1, 2, 3, 4, 5, 6});
  // [3] is neither a row count (2) of a nor a scalar.
  const Tensor a_zp = U8({3}, {0, 0, 0});
  std::string msg = BadInput([&] {
    RunOp(NodeBuilder("MatMulInteger", 3).node(), 10, {&a, &b, &a_zp});
  });
  EXPECT_NE(msg.find("a_zero_point uint8[3] must be a scalar or hold one value per row of a"),
            std::string::npos)
      << msg;
  // A zero point whose type differs from its operand's.
  const Tensor b_zp = I8({}, {0});
  msg = BadInput([&] {
    RunOp(NodeBuilder("MatMulInteger", 4).node(), 10, {&a, &b, nullptr, &b_zp});
  });
  EXPECT_NE(msg.find("b_zero_point int8[scalar] must have the element type of b uint8[3x2]"),
            std::string::npos)
      << msg;
}

// ---- against ONNX Runtime, arbitrary scales ----

Tensor SevenBitWeights(const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor t(TP::INT8, shape);
  std::uniform_int_distribution<int> dist(-64, 63);
  for (int64_t i = 0; i < t.size(); ++i)
    t.mutable_data<int8_t>()[i] = static_cast<int8_t>(dist(rng));
  return t;
}

TEST(QuantIntegerKernels, MatchesOnnxRuntimeBitForBit) {
  const std::string reason = OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  std::mt19937 rng(23);
  {
    // uint8 activations, int8 per-channel weights, group 2, bias: ONNX Runtime's u8s8 path.
    // The weights stay within 7 bits: on AVX2 machines without VNNI that path sums pairs of
    // u8 x s8 products in saturating int16 (vpmaddubsw), so full-range weights make ONNX Runtime
    // itself off by a few units (seen here: 62 of 270 outputs, where a numpy reference agreed
    // with this kernel); onnxruntime's quantizer uses reduce_range for the same reason.
    onnx::NodeProto node = NodeBuilder("QLinearConv", 9)
                               .Int("group", 2)
                               .Ints("pads", {1, 0, 1, 2})
                               .Ints("strides", {1, 2})
                               .node();
    node.clear_input();
    for (const char* n : {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}) node.add_input(n);
    std::vector<std::pair<std::string, Tensor>> inputs = {
        {"x", Random<uint8_t>(TP::UINT8, {1, 4, 9, 9}, rng)},
        {"xs", F32({}, {0.0173f})},
        {"xz", U8({}, {121})},
        {"w", SevenBitWeights({6, 2, 3, 3}, rng)},
        {"ws", F32({6}, {0.0031f, 0.0047f, 0.0022f, 0.0059f, 0.0013f, 0.0041f})},
        {"wz", I8({6}, {0, 0, 0, 0, 0, 0})},
        {"ys", F32({}, {0.0833f})},
        {"yz", U8({}, {131})},
        {"b", I32({6}, {-1500, 300, 0, 2100, -40, 777})}};
    ExpectMatchesOrt(OneNodeModel(node, 13, inputs, TP::UINT8), inputs);
  }
  {
    onnx::NodeProto node = NodeBuilder("QLinearMatMul", 8).node();
    node.clear_input();
    for (const char* n : {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}) node.add_input(n);
    std::vector<std::pair<std::string, Tensor>> inputs = {
        {"a", Random<uint8_t>(TP::UINT8, {2, 5, 16}, rng)},
        {"as", F32({}, {0.0217f})},
        {"az", U8({}, {117})},
        {"b", Random<uint8_t>(TP::UINT8, {16, 7}, rng)},
        {"bs", F32({}, {0.0093f})},
        {"bz", U8({}, {140})},
        {"ys", F32({}, {0.151f})},
        {"yz", U8({}, {125})}};
    ExpectMatchesOrt(OneNodeModel(node, 13, inputs, TP::UINT8), inputs);
  }
  {
    onnx::NodeProto node = NodeBuilder("DynamicQuantizeLinear", 1, 3).node();
    node.set_input(0, "x");
    std::vector<std::pair<std::string, Tensor>> inputs = {{"x", RandomFloats({3, 50}, rng)}};
    onnx::ModelProto model = OneNodeModel(node, 13, inputs, TP::UINT8);
    model.mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
        TP::FLOAT);
    ExpectMatchesOrt(model, inputs, 0.0);
  }
}

}  // namespace
}  // namespace porttool::runtime::testing_util
