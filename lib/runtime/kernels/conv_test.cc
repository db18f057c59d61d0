// Conv and ConvTranspose against a naive direct implementation written here, over many random
// shape/attribute combinations (every path: depthwise fast/generic, pointwise GEMM, im2col), and
// the rejections users hit.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RandomFloats;
using testing_util::RunOp;

struct ConvCase {
  int spatial = 2;
  int64_t batch = 1, c_in = 4, c_out = 4, group = 1;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end;
  bool bias = true;
};

// Pads a per-dim vector to 3 dims with a leading fill value.
std::array<int64_t, 3> To3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> r{fill, fill, fill};
  for (size_t i = 0; i < v.size(); ++i) r[3 - v.size() + i] = v[i];
  return r;
}

// Direct convolution: for every output, sum over the input channels of its group and the taps.
std::vector<float> NaiveConv(const ConvCase& c, const Tensor& x, const Tensor& w, const float* b,
                             std::vector<int64_t>& out_shape) {
  auto in = To3(c.in, 1), k = To3(c.kernel, 1), s = To3(c.strides, 1), d = To3(c.dilations, 1);
  auto pb = To3(c.pad_begin, 0), pe = To3(c.pad_end, 0);
  std::array<int64_t, 3> out;
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1)) / s[i] + 1;
  out_shape = {c.batch, c.c_out};
  for (int i = 3 - c.spatial; i < 3; ++i) out_shape.push_back(out[i]);
  const int64_t cin_g = c.c_in / c.group, cout_g = c.c_out / c.group;
  std::vector<float> y;
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t co = 0; co < c.c_out; ++co)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b ? b[co] : 0;
            const int64_t g = co / cout_g;
            for (int64_t ci = 0; ci < cin_g; ++ci)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                      continue;
                    const int64_t xc = n * c.c_in + g * cin_g + ci;
                    acc += px[((xc * in[0] + i0) * in[1] + i1) * in[2] + i2] *
                           pw[(((co * cin_g + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
            y.push_back(static_cast<float>(acc));
          }
  return y;
}

void CheckConv(const ConvCase& c, std::mt19937& rng, const std::string& what) {
  std::vector<int64_t> xs = {c.batch, c.c_in}, ws = {c.c_out, c.c_in / c.group};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  Tensor x = RandomFloats(xs, rng), w = RandomFloats(ws, rng), b = RandomFloats({c.c_out}, rng);
  std::vector<int64_t> pads = c.pad_begin;
  pads.insert(pads.end(), c.pad_end.begin(), c.pad_end.end());
  NodeBuilder node("Conv", 3);
  node.Ints("strides", c.strides).Ints("dilations", c.dilations).Ints("pads", pads);
  node.Int("group", c.group).Ints("kernel_shape", c.kernel);
  std::vector<int64_t> shape;
  auto expected = NaiveConv(c, x, w, c.bias ? b.data<float>() : nullptr, shape);
  auto out = RunOp(node.node(), 11, {&x, &w, c.bias ? &b : nullptr});
  testing_util::ExpectClose(out[0], shape, expected, what);
}

// Runs `node` with its weights prepared at one and two threads: both within tolerance of the
// double-precision direct sum, and bitwise the same.
void ExpectPreparedMatchesNaiveAtAnyThreadCount(const NodeBuilder& node, const ConvCase& c,
                                                const Tensor& x, const Tensor& w, const Tensor& b,
                                                const std::string& what) {
  std::vector<int64_t> shape;
  auto expected = NaiveConv(c, x, w, c.bias ? b.data<float>() : nullptr, shape);
  std::vector<Tensor> by_threads[2];
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    bool prepared = false;
    by_threads[threads - 1] = testing_util::RunOpPrepared(
        node.node(), 11, {&x, &w, c.bias ? &b : nullptr}, {false, true, true}, &prepared);
    ASSERT_TRUE(prepared) << "the prepare step packed no weights";
    testing_util::ExpectClose(by_threads[threads - 1][0], shape, expected,
                              fmt::format("{} threads {}", what, threads));
  }
  SetNumThreads(0);
  const Tensor &one = by_threads[0][0], &two = by_threads[1][0];
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(0, std::memcmp(one.data<float>(), two.data<float>(), one.size() * sizeof(float)))
      << what << ": one and two threads differ";
}

TEST(ConvKernel, MatchesNaiveConvOverRandomConfigurations) {
  std::mt19937 rng(42);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (int trial = 0; trial < 150; ++trial) {
      ConvCase c;
      c.spatial = static_cast<int>(pick(1, 3));
      c.batch = pick(1, 2);
      const int kind = static_cast<int>(pick(0, 3));  // 0 dense, 1 grouped, 2 depthwise, 3 1x1
      c.group = kind == 1 ? 2 : 1;
      c.c_in = kind == 2 ? pick(1, 6) : c.group * pick(1, 5);
      c.c_out = kind == 2 ? c.c_in : c.group * pick(1, 5);
      if (kind == 2) c.group = c.c_in;
      for (int i = 0; i < c.spatial; ++i) {
        const int64_t k = kind == 3 ? 1 : std::vector<int64_t>{1, 2, 3, 5}[pick(0, 3)];
        c.kernel.push_back(k);
        c.strides.push_back(kind == 3 && pick(0, 1) ? 1 : pick(1, 2));
        c.dilations.push_back(pick(0, 3) == 0 ? 2 : 1);
        c.pad_begin.push_back(kind == 3 && pick(0, 1) ? 0 : pick(0, 2));
        c.pad_end.push_back(kind == 3 && pick(0, 1) ? 0 : pick(0, 2));
        const int64_t extent = (k - 1) * c.dilations.back() + 1;
        c.in.push_back(std::max<int64_t>(extent, pick(1, c.spatial == 3 ? 7 : 19)));
      }
      c.bias = pick(0, 1) == 1;
      CheckConv(
          c, rng,
          fmt::format("threads {} trial {}: spatial {} in [{}] k [{}] s [{}] d [{}] pads [{}|{}] "
                      "group {} cin {} cout {}",
                      threads, trial, c.spatial, fmt::join(c.in, ","), fmt::join(c.kernel, ","),
                      fmt::join(c.strides, ","), fmt::join(c.dilations, ","),
                      fmt::join(c.pad_begin, ","), fmt::join(c.pad_end, ","), c.group, c.c_in,
                      c.c_out));
      if (HasFatalFailure()) return;
    }
  }
  SetNumThreads(0);
}

TEST(ConvKernel, DepthwiseFastPathsMatchNaive) {
  // The unrolled 3x3/5x5 stride 1/2 kernels, with and without padding (asymmetric too: stride-2
  // rows are staged split into even and odd columns from an odd or even first column), on widths
  // whose outputs take the 16-lane tiles, the 8-lane tiles or neither, and heights that leave a
  // remainder of the four-row tiles.
  std::mt19937 rng(7);
  for (int64_t k : {3, 5})
    for (int64_t s : {1, 2})
      for (int64_t pad : {0, 1, 2})
        for (int64_t width : {9, 23, 37, 70}) {
          ConvCase c;
          c.c_in = c.c_out = c.group = 8;
          c.in = {width == 70 ? 19 : 23, width};
          c.kernel = {k, k};
          c.strides = {s, s};
          c.dilations = {1, 1};
          c.pad_begin = {pad, pad};
          c.pad_end = {pad, (pad + width) % 3};
          if (c.in[1] + c.pad_begin[1] + c.pad_end[1] < k) continue;
          CheckConv(c, rng,
                    fmt::format("k{} s{} pads {}|{} width {}", k, s, pad, c.pad_end[1], width));
        }
}

TEST(ConvKernel, LargeLayersSplitAcrossChunksMatchNaive) {
  // Enough columns for several im2col chunks and pointwise column blocks.
  std::mt19937 rng(3);
  SetNumThreads(2);
  ConvCase dense;
  dense.c_in = 24, dense.c_out = 8;
  dense.in = {40, 45}, dense.kernel = {3, 3}, dense.strides = {1, 1}, dense.dilations = {1, 1};
  dense.pad_begin = {1, 1}, dense.pad_end = {1, 1};
  CheckConv(dense, rng, "dense");
  ConvCase pointwise = dense;
  pointwise.kernel = {1, 1}, pointwise.pad_begin = {0, 0}, pointwise.pad_end = {0, 0};
  CheckConv(pointwise, rng, "pointwise");
  SetNumThreads(0);
}

// Strided im2col over rows wide enough for its vector copy (stride 2 copies even lanes 16 at a
// time): strides 2 and 3 with the padding ends, odd and even widths, dilation 2.
TEST(ConvKernel, WideStridedRowsMatchNaive) {
  std::mt19937 rng(11);
  for (int64_t width : {69, 70}) {
    for (int64_t stride : {2, 3}) {
      for (int64_t dilation : {1, 2}) {
        ConvCase c;
        c.c_in = 3, c.c_out = 5;
        c.in = {5, width}, c.kernel = {3, 3}, c.strides = {stride, stride};
        c.dilations = {dilation, dilation}, c.pad_begin = {1, 1}, c.pad_end = {1, 2};
        CheckConv(c, rng, fmt::format("width {} stride {} dilation {}", width, stride, dilation));
      }
    }
  }
}

// A batch of small images runs as one GEMM over every image's columns (RunSmallImageBatch):
// 3x1 and 1x1 kernels over 4 images of 32x1 and 3x5, at 1 and 2 threads.
TEST(ConvKernel, SmallImageBatchesMatchNaive) {
  std::mt19937 rng(9);
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    ConvCase c;
    c.batch = 4, c.c_in = 76, c.c_out = 70;
    c.in = {32, 1}, c.kernel = {3, 1}, c.strides = {1, 1}, c.dilations = {1, 1};
    c.pad_begin = {1, 0}, c.pad_end = {1, 0};
    CheckConv(c, rng, "3x1 over 4x76x32x1");
    c.in = {3, 5}, c.kernel = {1, 1}, c.pad_begin = {0, 0}, c.pad_end = {0, 0};
    c.bias = false;
    CheckConv(c, rng, "1x1 over 4x76x3x5");
  }
  SetNumThreads(0);
}

// A batch of images with a handful of positions each and constant (prepared) weights is
// multiplied with the channels as the GEMM's columns (the LeakyRelu conv net's last stages: 4
// images of 2 or 4 positions). Channel counts that are not a multiple of the tile, bias or none,
// against the direct sum, and bitwise the same at one and two threads.
TEST(ConvKernel, NarrowBatchesWithPreparedWeightsMatchNaiveAtAnyThreadCount) {
  std::mt19937 rng(13);
  for (int64_t height : {2, 4, 1}) {
    ConvCase c;
    c.batch = 4, c.c_in = 40, c.c_out = height == 4 ? 70 : 200;
    c.in = {height, 1}, c.kernel = {3, 1}, c.strides = {1, 1}, c.dilations = {1, 1};
    c.pad_begin = {1, 0}, c.pad_end = {1, 0};
    c.bias = height != 4;
    Tensor x = RandomFloats({c.batch, c.c_in, height, 1}, rng);
    Tensor w = RandomFloats({c.c_out, c.c_in, 3, 1}, rng), b = RandomFloats({c.c_out}, rng);
    NodeBuilder node("Conv", 3);
    node.Ints("pads", {1, 0, 1, 0}).Ints("kernel_shape", {3, 1});
    ExpectPreparedMatchesNaiveAtAnyThreadCount(node, c, x, w, b, fmt::format("height {}", height));
    if (HasFatalFailure()) return;
  }
}

// 1-D convs over one input channel per group with constant weights and no padding read (an STFT
// as a conv) multiply the signal in place, as a matrix whose rows are `stride` floats apart:
// strides below, at and above the kernel, a channel multiplier with two groups, an end pad read
// and one not, many positions (several blocks per thread) and few, batches of two, at one and
// two threads with the same bits.
TEST(ConvKernel, StridedSignalConvsMatchNaiveAtAnyThreadCount) {
  std::mt19937 rng(17);
  struct Geometry {
    int64_t length, taps, stride, pad_end, c_in, c_out, group;
  };
  const Geometry geometries[] = {{16000, 512, 160, 0, 1, 37, 1}, {300, 10, 5, 0, 1, 16, 1},
                                 {200, 8, 8, 0, 2, 6, 2},        {101, 7, 9, 5, 1, 5, 1},
                                 {100, 10, 10, 5, 1, 9, 1},      {64, 64, 3, 0, 1, 70, 1}};
  for (const Geometry& g : geometries) {
    ConvCase c;
    c.spatial = 1, c.batch = 2, c.c_in = g.c_in, c.c_out = g.c_out, c.group = g.group;
    c.in = {g.length}, c.kernel = {g.taps}, c.strides = {g.stride}, c.dilations = {1};
    c.pad_begin = {0}, c.pad_end = {g.pad_end};
    c.bias = g.group == 1;
    Tensor x = RandomFloats({c.batch, c.c_in, g.length}, rng);
    Tensor w = RandomFloats({c.c_out, c.c_in / c.group, g.taps}, rng);
    Tensor b = RandomFloats({c.c_out}, rng);
    NodeBuilder node("Conv", 3);
    node.Ints("pads", {0, g.pad_end}).Ints("kernel_shape", {g.taps}).Ints("strides", {g.stride});
    node.Int("group", g.group);
    ExpectPreparedMatchesNaiveAtAnyThreadCount(
        node, c, x, w, b, fmt::format("length {} taps {} stride {}", g.length, g.taps, g.stride));
    if (HasFatalFailure()) return;
  }
}

// Large 3x3 stride-1 convs with constant weights take the Winograd F(2x2, 3x3) path (prepared
// once): odd output sizes (partial tiles and 8-tile groups), asymmetric pads, batches, bias or
// none, one and two threads, against the double-precision direct sum.
TEST(ConvKernel, WinogradPathMatchesNaive) {
  std::mt19937 rng(11);
  struct Geometry {
    std::vector<int64_t> in, pad_begin, pad_end;
  };
  const Geometry geometries[] = {{{33, 41}, {1, 1}, {1, 1}},
                                 {{34, 35}, {0, 0}, {0, 0}},
                                 {{40, 45}, {1, 0}, {0, 1}},
                                 {{37, 64}, {2, 2}, {0, 1}},
                                 {{40, 40}, {1, 1}, {1, 1}}};
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (const Geometry& g : geometries) {
      ConvCase c;
      c.batch = 2;  // the second image reads and writes past the first one's planes
      c.c_in = g.in[0] % 2 ? 16 : 24, c.c_out = g.in[1] % 2 ? 20 : 16;
      if (g.in[0] == g.in[1]) c.c_in = 96, c.c_out = 24;  // PP-OCRv4 det's neck convs
      c.in = g.in, c.kernel = {3, 3}, c.strides = {1, 1}, c.dilations = {1, 1};
      c.pad_begin = g.pad_begin, c.pad_end = g.pad_end;
      c.bias = g.in[0] % 2 == 0;
      Tensor x = RandomFloats({c.batch, c.c_in, c.in[0], c.in[1]}, rng);
      Tensor w = RandomFloats({c.c_out, c.c_in, 3, 3}, rng), b = RandomFloats({c.c_out}, rng);
      NodeBuilder node("Conv", 3);
      std::vector<int64_t> pads = c.pad_begin;
      pads.insert(pads.end(), c.pad_end.begin(), c.pad_end.end());
      node.Ints("pads", pads).Ints("kernel_shape", {3, 3});
      std::vector<int64_t> shape;
      auto expected = NaiveConv(c, x, w, c.bias ? b.data<float>() : nullptr, shape);
      bool winograd = false;
      auto out = testing_util::RunOpPrepared(node.node(), 11, {&x, &w, c.bias ? &b : nullptr},
                                             {false, true, true}, &winograd);
      ASSERT_TRUE(winograd) << "the prepare step built no Winograd weights";
      testing_util::ExpectClose(
          out[0], shape, expected,
          fmt::format("threads {} in [{}] pads [{}|{}]", threads, fmt::join(c.in, ","),
                      fmt::join(c.pad_begin, ","), fmt::join(c.pad_end, ",")),
          3e-4);  // sums of up to 864 products, added in another order than the direct sum
      if (HasFatalFailure()) return;
    }
  }
  SetNumThreads(0);
}

TEST(ConvKernel, AutoPadSameAndValid) {
  std::mt19937 rng(5);
  Tensor x = RandomFloats({1, 2, 7, 8}, rng), w = RandomFloats({3, 2, 3, 4}, rng);
  // SAME_UPPER with stride 2: out = ceil(in/2); total pad H = (4-1)*2+3-7 = 2 -> 1/1,
  // W = (4-1)*2+4-8 = 2 -> 1/1. SAME_LOWER: total 3 for W=7-style odd splits puts extra first.
  struct Expect {
    const char* mode;
    std::vector<int64_t> pb, pe;
  };
  Tensor x2 = RandomFloats({1, 2, 7, 7}, rng);
  for (const auto& [mode, pb, pe] :
       {Expect{"SAME_UPPER", {1, 1}, {1, 2}}, Expect{"SAME_LOWER", {1, 2}, {1, 1}}}) {
    // in 7x7, kernel 3x4, stride 2: out 4x4; total pad H = 6+3-7 = 2, W = 6+4-7 = 3.
    NodeBuilder node("Conv", 2);
    node.Str("auto_pad", mode).Ints("strides", {2, 2});
    ConvCase c;
    c.c_in = 2, c.c_out = 3, c.in = {7, 7}, c.kernel = {3, 4}, c.strides = {2, 2};
    c.dilations = {1, 1}, c.pad_begin = pb, c.pad_end = pe;
    std::vector<int64_t> shape;
    auto expected = NaiveConv(c, x2, w, nullptr, shape);
    auto out = RunOp(node.node(), 11, {&x2, &w});
    testing_util::ExpectClose(out[0], shape, expected, mode);
  }
  NodeBuilder valid("Conv", 2);
  valid.Str("auto_pad", "VALID");
  auto out = RunOp(valid.node(), 11, {&x, &w});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 3, 5, 5}));
}

// Zero input channels is an empty sum: every output is its channel's bias (it used to divide by
// zero sizing the im2col chunks).
TEST(ConvKernel, ZeroInputChannelsGiveTheBias) {
  Tensor x(onnx::TensorProto::FLOAT, {1, 0, 4, 4}), w(onnx::TensorProto::FLOAT, {2, 0, 3, 3});
  Tensor b(onnx::TensorProto::FLOAT, {2});
  b.mutable_data<float>()[0] = 1.5f;
  b.mutable_data<float>()[1] = -2.f;
  NodeBuilder node("Conv", 3);
  auto out = RunOp(node.node(), 11, {&x, &w, &b});
  ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{1, 2, 2, 2}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(out[0].data<float>()[i], i < 4 ? 1.5f : -2.f) << i;
}

TEST(ConvKernel, RejectsWhatItCannotRunWithClearErrors) {
  std::mt19937 rng(1);
  Tensor x4 = RandomFloats({1, 1, 2, 2, 2, 2}, rng), w4 = RandomFloats({1, 1, 1, 1, 1, 1}, rng);
  try {
    RunOp(NodeBuilder("Conv", 2).node(), 11, {&x4, &w4});
    FAIL() << "4-D spatial conv accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("Conv_under_test"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3-D"), std::string::npos) << e.what();
  }
  Tensor x = RandomFloats({1, 4, 5, 5}, rng), w = RandomFloats({2, 4, 3, 3}, rng);
  EXPECT_THROW(RunOp(NodeBuilder("Conv", 2).Int("group", 3).node(), 11, {&x, &w}), Error);
  EXPECT_THROW(RunOp(NodeBuilder("Conv", 2).Int("bogus", 1).node(), 11, {&x, &w}), Error);
  EXPECT_THROW(RunOp(NodeBuilder("Conv", 2).Ints("kernel_shape", {2, 2}).node(), 11, {&x, &w}),
               Error);
  EXPECT_THROW(RunOp(NodeBuilder("Conv", 2).Str("auto_pad", "SAME").node(), 11, {&x, &w}), Error);
  Tensor tiny = RandomFloats({1, 4, 2, 2}, rng);
  EXPECT_THROW(RunOp(NodeBuilder("Conv", 2).node(), 11, {&tiny, &w}), Error);  // empty output
}

// ---- ConvTranspose ----

struct TransposeCase {
  int64_t batch = 1, c_in = 2, c_out = 3, group = 1;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, output_padding;
};

std::vector<float> NaiveConvTranspose(const TransposeCase& c, const Tensor& x, const Tensor& w,
                                      const float* b, std::vector<int64_t>& out_shape) {
  const int rank = static_cast<int>(c.in.size());
  auto in = To3(c.in, 1), k = To3(c.kernel, 1), s = To3(c.strides, 1), d = To3(c.dilations, 1);
  auto pb = To3(c.pad_begin, 0), pe = To3(c.pad_end, 0), op = To3(c.output_padding, 0);
  std::array<int64_t, 3> out;
  for (int i = 0; i < 3; ++i)
    out[i] = s[i] * (in[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - pb[i] - pe[i];
  out_shape = {c.batch, c.c_out};
  for (int i = 3 - rank; i < 3; ++i) out_shape.push_back(out[i]);
  for (int64_t o : out) {
    if (o <= 0) return {};
  }
  const int64_t cin_g = c.c_in / c.group, cout_g = c.c_out / c.group;
  const int64_t plane = out[0] * out[1] * out[2];
  std::vector<double> y(c.batch * c.c_out * plane, 0);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t co = 0; co < c.c_out; ++co)
      for (int64_t p = 0; p < plane; ++p) y[(n * c.c_out + co) * plane + p] = b ? b[co] : 0;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ci = 0; ci < c.c_in; ++ci)
      for (int64_t i0 = 0; i0 < in[0]; ++i0)
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            const float xv =
                x.data<float>()[(((n * c.c_in + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2];
            const int64_t g = ci / cin_g;
            for (int64_t co = 0; co < cout_g; ++co)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t o0 = i0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t o1 = i1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t o2 = i2 * s[2] - pb[2] + k2 * d[2];
                    if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2])
                      continue;
                    const float wv =
                        w.data<float>()[(((ci * cout_g + co) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                    y[(n * c.c_out + g * cout_g + co) * plane + (o0 * out[1] + o1) * out[2] + o2] +=
                        xv * wv;
                  }
          }
  return std::vector<float>(y.begin(), y.end());
}

// The last 30 trials have stride equal to kernel and no padding or dilation (the 2x2 stride-2
// upsampling of FPN/DB heads): each output element takes exactly one tap, which the kernel
// writes in one pass (Col2ImTiles); every other one of them has no bias.
TEST(ConvTransposeKernel, MatchesNaiveOverRandomConfigurations) {
  std::mt19937 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 110; ++trial) {
    const bool tiled = trial >= 80, with_bias = !tiled || trial % 2 == 0;
    TransposeCase c;
    const int rank = static_cast<int>(pick(1, 3));
    c.batch = pick(1, 2);
    c.group = pick(1, 2);
    c.c_in = c.group * pick(1, 3);
    c.c_out = c.group * pick(1, 3);
    for (int i = 0; i < rank; ++i) {
      c.in.push_back(pick(1, rank == 3 ? 4 : 9));
      c.kernel.push_back(pick(1, tiled ? 3 : 4));
      c.strides.push_back(tiled ? c.kernel.back() : pick(1, 3));
      if (tiled) continue;
      c.dilations.push_back(pick(1, 2));
      c.output_padding.push_back(pick(0, std::max(c.strides.back(), c.dilations.back()) - 1));
      c.pad_begin.push_back(pick(0, c.kernel.back() - 1));
      c.pad_end.push_back(pick(0, c.kernel.back() - 1));
    }
    std::vector<int64_t> xs = {c.batch, c.c_in}, ws = {c.c_in, c.c_out / c.group};
    xs.insert(xs.end(), c.in.begin(), c.in.end());
    ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
    Tensor x = RandomFloats(xs, rng), w = RandomFloats(ws, rng), b = RandomFloats({c.c_out}, rng);
    std::vector<int64_t> shape;
    auto expected = NaiveConvTranspose(c, x, w, with_bias ? b.data<float>() : nullptr, shape);
    bool empty = false;
    for (size_t i = 2; i < shape.size(); ++i) empty = empty || shape[i] <= 0;
    if (empty) continue;
    std::vector<int64_t> pads = c.pad_begin;
    pads.insert(pads.end(), c.pad_end.begin(), c.pad_end.end());
    NodeBuilder node("ConvTranspose", with_bias ? 3 : 2);
    node.Ints("strides", c.strides).Int("group", c.group);
    if (!tiled) {
      node.Ints("dilations", c.dilations).Ints("pads", pads);
      node.Ints("output_padding", c.output_padding);
    }
    auto out = with_bias ? RunOp(node.node(), 11, {&x, &w, &b}) : RunOp(node.node(), 11, {&x, &w});
    testing_util::ExpectClose(out[0], shape, expected, "trial " + std::to_string(trial));
    if (HasFatalFailure()) return;
  }
}

// A stride-equal-to-kernel ConvTranspose wide enough to run in several pieces of input rows
// (conv.cc: about 2048 input positions each), at 1 and 2 threads: a row at a piece boundary
// must land where the naive transpose puts it.
TEST(ConvTransposeKernel, KernelSizedStridesAcrossRowPieces) {
  std::mt19937 rng(13);
  TransposeCase c;
  c.c_in = 3, c.c_out = 2;
  c.in = {13, 300};
  c.kernel = c.strides = {2, 2};
  Tensor x = RandomFloats({1, 3, 13, 300}, rng), w = RandomFloats({3, 2, 2, 2}, rng);
  Tensor b = RandomFloats({2}, rng);
  std::vector<int64_t> shape;
  const auto expected = NaiveConvTranspose(c, x, w, b.data<float>(), shape);
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    auto out =
        RunOp(NodeBuilder("ConvTranspose", 3).Ints("strides", {2, 2}).node(), 11, {&x, &w, &b});
    testing_util::ExpectClose(out[0], shape, expected, std::to_string(threads) + " threads");
  }
  SetNumThreads(0);
}

TEST(ConvTransposeKernel, OutputShapeAndSameUpperResolvePads) {
  std::mt19937 rng(13);
  Tensor x = RandomFloats({1, 1, 3, 3}, rng), w = RandomFloats({1, 2, 3, 3}, rng);
  // Full output 2*(3-1)+3 = 7; output_shape 6 -> total pad 1 -> NOTSET puts it at the begin.
  auto out = RunOp(
      NodeBuilder("ConvTranspose", 2).Ints("strides", {2, 2}).Ints("output_shape", {6, 6}).node(),
      11, {&x, &w});
  TransposeCase c;
  c.c_in = 1, c.c_out = 2, c.in = {3, 3}, c.kernel = {3, 3}, c.strides = {2, 2};
  c.dilations = {1, 1}, c.pad_begin = {1, 1}, c.pad_end = {0, 0}, c.output_padding = {0, 0};
  std::vector<int64_t> shape;
  auto expected = NaiveConvTranspose(c, x, w, nullptr, shape);
  testing_util::ExpectClose(out[0], shape, expected, "output_shape");
  // SAME_UPPER: out = in * stride = 6, the extra pad at the end.
  auto same = RunOp(
      NodeBuilder("ConvTranspose", 2).Ints("strides", {2, 2}).Str("auto_pad", "SAME_UPPER").node(),
      11, {&x, &w});
  c.pad_begin = {0, 0}, c.pad_end = {1, 1};
  expected = NaiveConvTranspose(c, x, w, nullptr, shape);
  testing_util::ExpectClose(same[0], shape, expected, "SAME_UPPER");
}

}  // namespace
}  // namespace porttool::runtime
