// Bias correction: the per-tap input means against a brute-force walk over the conv's windows
// (explicit pads with stride, and SAME_UPPER on odd sizes with a depthwise conv), the same means
// for any thread count, the mean output shift against a hand value, and end to end: a conv whose
// int8 weights all round the same way shifts its output mean, and the corrected QDQ model does not.
#include "lib/quant/bias_correction.h"

#include <gtest/gtest.h>

#include <random>

#include "lib/quant/equalize.h"
#include "lib/quant/quantize_calibrate.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::quant {
namespace {

using runtime::Tensor;
using TP = onnx::TensorProto;
namespace fs = std::filesystem;

// A model with one Conv named "conv" over x [1, C, H, W]; `attrs` in the text format.
io::Model ConvModel(int64_t c, int64_t h, int64_t w, int64_t out, int64_t per_group,
                    const std::string& attrs, std::vector<float> weights) {
  std::string values;
  for (size_t i = 0; i < weights.size(); ++i)
    values += fmt::format("{}{}", i ? ", " : "", weights[i]);
  const std::string text = fmt::format(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1,{0},{1},{2}] x) => (float[1,{3},?,?] y) {{
  wt = Constant <value = float[{3},{4},3,3] {{{5}}}> ()
  y = Conv <{6}> (x, wt)
}})",
                                       c, h, w, out, per_group, values, attrs);
  io::Model m = io::ParseText(text);
  m.proto.mutable_graph()->mutable_node(1)->set_name("conv");
  return m;
}

std::vector<float> Ramp(size_t n, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(i % 7) - 0.3f;
  return v;
}

// Writes `count` samples x [1, c, h, w] of N(mean, 1) values; returns them.
std::vector<Tensor> WriteSamples(const fs::path& dir, int count, int64_t c, int64_t h, int64_t w,
                                 float mean = 0.f) {
  fs::create_directories(dir);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(mean, 1.f);
  std::vector<Tensor> out;
  for (int s = 0; s < count; ++s) {
    Tensor t(TP::FLOAT, {1, c, h, w});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = normal(rng);
    runtime::WriteNpy(dir / fmt::format("{:04d}.x.npy", s), t);
    out.push_back(t);
  }
  return out;
}

// Brute force: for every output position, the input each 3x3 tap reads (0 in the padding).
std::vector<double> BruteTapMeans(const std::vector<Tensor>& xs, int64_t stride, int64_t pad_h,
                                  int64_t pad_w, int64_t oh, int64_t ow) {
  const int64_t c = xs[0].dim(1), h = xs[0].dim(2), w = xs[0].dim(3);
  std::vector<double> sums(static_cast<size_t>(c * 9), 0.0);
  for (const Tensor& x : xs) {
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t ih = y * stride - pad_h + kh, iw = z * stride - pad_w + kw;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              sums[ch * 9 + kh * 3 + kw] += x.data<float>()[(ch * h + ih) * w + iw];
            }
  }
  for (double& s : sums) s /= static_cast<double>(xs.size() * oh * ow);
  return sums;
}

ConvInputMeans MeansOf(const io::Model& m, const fs::path& dir, int threads) {
  SampleSet set = ListSamples(dir, runtime::Session(m).inputs(), std::nullopt);
  ConvInputMeansMap means = CollectConvInputMeans(m, set, threads);
  EXPECT_EQ(means.count("conv"), 1u);
  return means.at("conv");
}

TEST(BiasCorrection, TapMeansMatchTheWindowsWithPadsAndStride) {
  testing::TempDir tmp;
  auto xs = WriteSamples(tmp / "d", 3, 2, 5, 6);
  io::Model m = ConvModel(2, 5, 6, 3, 2, "pads = [1, 1, 1, 1], strides = [2, 2]", Ramp(54, 0.1f));
  ConvInputMeans got = MeansOf(m, tmp / "d", 2);
  ASSERT_EQ(got.channels, 2);
  ASSERT_EQ(got.taps, 9);
  // Output 3x3: (5 + 2 - 3) / 2 + 1 = 3 rows, (6 + 2 - 3) / 2 + 1 = 3 columns.
  std::vector<double> want = BruteTapMeans(xs, 2, 1, 1, 3, 3);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.mean[i], want[i], 1e-9) << i;
  // The corner tap (0,0) reads padding at the first row and column: it differs from the centre.
  EXPECT_NE(got.mean[0], got.mean[4]);
  // Same sums in index order whatever the thread count: bitwise equal.
  EXPECT_EQ(MeansOf(m, tmp / "d", 1).mean, got.mean);
}

TEST(BiasCorrection, TapMeansOfADepthwiseSameUpperConv) {
  testing::TempDir tmp;
  auto xs = WriteSamples(tmp / "d", 2, 2, 5, 6, 0.5f);
  io::Model m = ConvModel(2, 5, 6, 2, 1, "auto_pad = \"SAME_UPPER\", group = 2, strides = [2, 2]",
                          Ramp(18, 0.2f));
  ConvInputMeans got = MeansOf(m, tmp / "d", 2);
  // SAME_UPPER: rows 5 -> 3 with 2 rows of padding, 1 before; columns 6 -> 3 with 1, 0 before.
  std::vector<double> want = BruteTapMeans(xs, 2, 1, 0, 3, 3);
  ASSERT_EQ(got.mean.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.mean[i], want[i], 1e-9) << i;
}

TEST(BiasCorrection, ShiftIsTheWeightErrorTimesTheTapMean) {
  // One output channel over two input channels of one tap each: weights 1.0 and 0.006 on the
  // per-channel scale 1/127; 0.006 rounds up to 1/127, an error of 1/127 - 0.006.
  Tensor w(TP::FLOAT, {1, 2, 1, 1}), q(TP::FLOAT, {1, 2, 1, 1});
  w.mutable_data<float>()[0] = 1.f, w.mutable_data<float>()[1] = 0.006f;
  q.mutable_data<float>()[0] = 1.f, q.mutable_data<float>()[1] = 1.f / 127;
  ConvInputMeans means{2, 1, {3.0, 10.0}, {}};
  std::vector<double> shift = MeanOutputShift(w, q, 1, means);
  ASSERT_EQ(shift.size(), 1u);
  EXPECT_NEAR(shift[0], (1.0 / 127 - 0.006) * 10.0, 1e-7);
}

// Mean of (QDQ - float) over every output value of every sample.
double MeanError(const io::Model& f, const io::Model& q, const std::vector<Tensor>& xs) {
  runtime::Session sf(f), sq(q);
  double sum = 0;
  int64_t n = 0;
  for (const Tensor& x : xs) {
    Tensor a = sf.Run({{"x", x}})[0].value, b = sq.Run({{"x", x}})[0].value;
    for (int64_t i = 0; i < a.size(); ++i) sum += b.data<float>()[i] - a.data<float>()[i];
    n += a.size();
  }
  return sum / static_cast<double>(n);
}

TEST(BiasCorrection, CorrectedQdqKeepsTheOutputMean) {
  testing::TempDir tmp;
  // Input channel 1 sits around 10; its weights 0.006 at every tap all round up to 1/127 (the
  // channel scale is set by the 1.0 on channel 0): the output mean shifts by 9 x 0.00187 x 10.
  std::vector<float> weights(18, 0.006f);
  for (int i = 0; i < 9; ++i) weights[i] = i == 4 ? 1.f : 0.f;
  io::Model m = ConvModel(2, 6, 6, 1, 2, "pads = [1, 1, 1, 1]", weights);
  auto xs = WriteSamples(tmp / "d", 8, 2, 6, 6);
  for (Tensor& x : xs) {
    for (int64_t i = 36; i < 72; ++i) x.mutable_data<float>()[i] = 10.f + 0.01f * (i % 5);
  }
  for (size_t s = 0; s < xs.size(); ++s)
    runtime::WriteNpy(tmp / "d" / fmt::format("{:04d}.x.npy", s), xs[s]);
  QuantizeCalibrateRequest req;
  req.data_dir = tmp / "d";
  req.evaluate = false;
  req.qdq.per_channel = true;
  QuantizeCalibrateResult plain = QuantizeCalibrate(m, req);
  req.bias_correction = true;
  QuantizeCalibrateResult corrected = QuantizeCalibrate(m, req);
  EXPECT_EQ(plain.qdq.bias_corrected, 0);
  EXPECT_EQ(corrected.qdq.bias_corrected, 1);
  // Interior positions see all 9 taps of channel 1, border ones fewer: the shift is below 9 taps'.
  const double full = 9 * (1.0 / 127 - 0.006) * 10.1;
  EXPECT_GT(MeanError(m, plain.qdq_model, xs), 0.5 * full);
  EXPECT_LT(std::fabs(MeanError(m, corrected.qdq_model, xs)), 0.05 * full);
  // The correction became an int32 bias behind a DequantizeLinear (the conv had none).
  bool has_bias = false;
  for (const auto& n : corrected.qdq_model.proto.graph().node()) {
    if (n.name() == "conv") has_bias = n.input_size() == 3 && !n.input(2).empty();
  }
  EXPECT_TRUE(has_bias);
}

TEST(BiasCorrection, NeedsCalibrationSamplesBesidesATable) {
  testing::TempDir tmp;
  io::Model m = ConvModel(2, 5, 6, 3, 2, "pads = [1, 1, 1, 1]", Ramp(54, 0.1f));
  WriteSamples(tmp / "d", 4, 2, 5, 6);
  QuantizeCalibrateRequest req;
  req.data_dir = tmp / "d";
  req.evaluate = false;
  QuantizeCalibrateResult first = QuantizeCalibrate(m, req);
  req.table = first.table;
  req.data_dir.clear();
  req.bias_correction = true;
  try {
    QuantizeCalibrate(m, req);
    FAIL() << "bias correction without samples";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("bias correction needs the calibration samples"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace porttool::quant

namespace porttool::quant {
namespace {

// Conv A (2 -> 3 channels, 1x1) whose output channels differ 40x in range, read by a depthwise
// 3x3 Conv B; `extra` adds a node that also reads A's output.
io::Model PairModel(const std::string& extra = "") {
  const std::string text = fmt::format(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1,2,6,6] x) => (float[1,3,6,6] z{0}) {{
  wa = Constant <value = float[3,2,1,1] {{4.0, -2.0, 0.1, 0.05, -1.0, 0.5}}> ()
  ba = Constant <value = float[3] {{0.5, 0.01, -0.1}}> ()
  y = Conv (x, wa, ba)
  wb = Constant <value = float[3,1,3,3] {{0.1, 0.2, 0.1, 0.0, 0.5, -0.3, 0.2, 0.1, 0.1,
      0.3, -0.2, 0.1, 0.4, 0.5, 0.3, -0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.9, 0.2, 0.1, 0.1, 0.1}}> ()
  z = Conv <group = 3, pads = [1, 1, 1, 1]> (y, wb)
  {1}
}})",
                                       extra.empty() ? "" : ", float[1,3,6,6] e", extra);
  io::Model m = io::ParseText(text);
  int i = 0;
  for (auto& n : *m.proto.mutable_graph()->mutable_node()) n.set_name(fmt::format("n{}", i++));
  return m;
}

double MaxRelativeDifference(const Tensor& a, const Tensor& b) {
  double top = 0, diff = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    top = std::max(top, static_cast<double>(std::fabs(a.data<float>()[i])));
    diff = std::max(diff, static_cast<double>(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
  }
  return diff / top;
}

TEST(Equalize, RescalesALinearConvPairExactly) {
  testing::TempDir tmp;
  auto xs = WriteSamples(tmp / "d", 4, 2, 6, 6);
  io::Model m = PairModel();
  SampleSet set = ListSamples(tmp / "d", runtime::Session(m).inputs(), std::nullopt);
  io::Model eq = m;
  EqualizeResult r = EqualizeChannels(eq, CollectConvInputMeans(m, set, 2));
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].tensor, "y");
  EXPECT_GT(r.tensors[0].spread_before, 10);
  EXPECT_NEAR(r.tensors[0].spread_after, 1.0, 1e-9);  // depthwise reader: fully equalized
  // The model computes the same function, and y's channels now share one range.
  runtime::Session a(m), b(eq);
  for (const Tensor& x : xs) {
    EXPECT_LT(MaxRelativeDifference(a.Run({{"x", x}})[0].value, b.Run({{"x", x}})[0].value), 1e-6);
  }
  ConvInputMeans after = CollectConvInputMeans(eq, set, 1).at("n4");
  const double hi = *std::max_element(after.absmax.begin(), after.absmax.end());
  const double lo = *std::min_element(after.absmax.begin(), after.absmax.end());
  EXPECT_LT(hi / lo, 1.0001);
}

TEST(Equalize, LeavesATensorAnotherOpReads) {
  testing::TempDir tmp;
  WriteSamples(tmp / "d", 2, 2, 6, 6);
  io::Model m = PairModel("e = Relu (y)");
  SampleSet set = ListSamples(tmp / "d", runtime::Session(m).inputs(), std::nullopt);
  EXPECT_TRUE(EqualizeChannels(m, CollectConvInputMeans(m, set, 1)).tensors.empty());
}

// The worst output channel's SQNR (dB) of `q` against `f` over the samples.
double WorstChannelSqnr(const io::Model& f, const io::Model& q, const std::vector<Tensor>& xs) {
  runtime::Session sf(f), sq(q);
  std::vector<double> signal(3, 0.0), noise(3, 0.0);
  for (const Tensor& x : xs) {
    Tensor a = sf.Run({{"x", x}})[0].value, b = sq.Run({{"x", x}})[0].value;
    for (int64_t i = 0; i < a.size(); ++i) {
      const double d = a.data<float>()[i] - b.data<float>()[i];
      signal[i / 36] += a.data<float>()[i] * a.data<float>()[i];
      noise[i / 36] += d * d;
    }
  }
  double worst = 1e9;
  for (int c = 0; c < 3; ++c) worst = std::min(worst, 10 * std::log10(signal[c] / noise[c]));
  return worst;
}

TEST(Equalize, ImprovesTheSmallChannels) {
  testing::TempDir tmp;
  auto xs = WriteSamples(tmp / "d", 8, 2, 6, 6);
  QuantizeCalibrateRequest req;
  req.data_dir = tmp / "d";
  req.evaluate = false;
  req.qdq.per_channel = true;
  io::Model m = PairModel();
  const double plain = WorstChannelSqnr(m, QuantizeCalibrate(m, req).qdq_model, xs);
  req.equalize = true;
  QuantizeCalibrateResult eq = QuantizeCalibrate(m, req);
  EXPECT_EQ(eq.equalized.tensors.size(), 1u);
  // The channel 40x below the largest gained about 5 bits of its activation's resolution.
  EXPECT_GT(WorstChannelSqnr(m, eq.qdq_model, xs), plain + 10) << plain;
  // A given table was calibrated on tensors equalization would rescale.
  req.table = eq.table;
  EXPECT_THROW(QuantizeCalibrate(m, req), Error);
}

}  // namespace
}  // namespace porttool::quant
