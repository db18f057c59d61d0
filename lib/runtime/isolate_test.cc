// The isolated comparison on hand-built models whose local and accumulated errors are known:
// a scaled Mul (local error exactly its own, the Add after it locally exact but accumulating the
// Mul's), a Q/DQ pair walked back through to the nearest shared tensor, several samples
// accumulated, names the models do not share listed as not comparable, and no shared name at all.
#include "lib/runtime/isolate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

// A: out = 2x + 1.
constexpr const char* kA = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[4] x) => (float[4] out) <float two = {2.0}, float one = {1.0}> {
    m = Mul(x, two)
    out = Add(m, one)
  })";
// B: the same names, Mul by 2.5: m = 2.5x, out = 2.5x + 1.
constexpr const char* kB = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[4] x) => (float[4] out) <float two = {2.5}, float one = {1.0}> {
    m = Mul(x, two)
    out = Add(m, one)
  })";
// B with m quantized (scale 0.5) before the Add: Q and DQ produce names A lacks.
constexpr const char* kBQdq = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[4] x) => (float[4] out) <float two = {2.5}, float one = {1.0}, float s = {0.5},
                                    int8 z = {0}> {
    m = Mul(x, two)
    mq = QuantizeLinear(m, s, z)
    md = DequantizeLinear(mq, s, z)
    out = Add(md, one)
  })";

TensorMap X(std::vector<float> v) {
  Tensor t(onnx::TensorProto::FLOAT, {4});
  for (int i = 0; i < 4; ++i) t.mutable_data<float>()[i] = v[static_cast<size_t>(i)];
  return {{"x", t}};
}

CompareOptions Options(const testing::TempDir& dir) {
  CompareOptions o;
  o.scratch_dir = dir.path();
  return o;
}

const IsolatedTensor& Find(const IsolateResult& r, const std::string& tensor) {
  for (const auto& t : r.tensors) {
    if (t.tensor == tensor) return t;
  }
  throw std::runtime_error("no row for " + tensor);
}

TEST(IsolateComparison, ScaledMulHasItsOwnLocalErrorAndTheAddOnlyAccumulated) {
  testing::TempDir dir;
  io::Model a = io::ParseText(kA), b = io::ParseText(kB);
  IsolateComparison isolate(a, b, Options(dir));
  isolate.AddSample(X({1, 2, 3, 4}));
  IsolateResult r = isolate.Result();
  ASSERT_EQ(r.tensors.size(), 2u);
  EXPECT_EQ(r.samples, 1u);
  // Ranked: Mul (local error) before Add (none).
  EXPECT_EQ(r.tensors[0].tensor, "m");
  EXPECT_EQ(r.tensors[1].tensor, "out");
  const IsolatedTensor& m = Find(r, "m");
  EXPECT_EQ(m.op, "Mul");
  EXPECT_EQ(m.cone_nodes, 1);
  EXPECT_TRUE(m.from_a.empty());  // it reads the graph input and a weight
  // |2.5x - 2x| = 0.5x over x = 1..4; SQNR = 10 log10(sum (2x)^2 / sum (0.5x)^2) = 10 log10 16.
  EXPECT_DOUBLE_EQ(m.local.max_abs, 2.0);
  EXPECT_DOUBLE_EQ(m.local.mean_abs, 1.25);
  EXPECT_NEAR(m.local.sqnr_db, 10 * std::log10(16.0), 1e-9);
  EXPECT_DOUBLE_EQ(m.accumulated.max_abs, 2.0);
  EXPECT_FALSE(m.local.within_tolerance);
  // The Add fed A's m computes A's out exactly; B's own run carries the Mul's error.
  const IsolatedTensor& out = Find(r, "out");
  EXPECT_EQ(out.from_a, std::vector<std::string>{"m"});
  EXPECT_EQ(out.local.max_abs, 0.0);
  EXPECT_TRUE(std::isinf(out.local.sqnr_db));
  EXPECT_TRUE(out.local.within_tolerance);
  EXPECT_DOUBLE_EQ(out.accumulated.max_abs, 2.0);
  EXPECT_DOUBLE_EQ(out.accumulated.mean_abs, 1.25);
  // Outputs as compare reports them.
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_DOUBLE_EQ(r.outputs[0].stats.max_abs, 2.0);
  EXPECT_FALSE(r.within_tolerance);
  EXPECT_TRUE(r.not_comparable.empty());
}

TEST(IsolateComparison, StatisticsAccumulateOverSamples) {
  testing::TempDir dir;
  io::Model a = io::ParseText(kA), b = io::ParseText(kB);
  IsolateComparison isolate(a, b, Options(dir));
  isolate.AddSample(X({1, 2, 3, 4}));
  isolate.AddSample(X({-8, 0, 0, 0}));
  IsolateResult r = isolate.Result();
  EXPECT_EQ(r.samples, 2u);
  const IsolatedTensor& m = Find(r, "m");
  EXPECT_EQ(m.local.count, 8);
  EXPECT_DOUBLE_EQ(m.local.max_abs, 4.0);         // 0.5 * |-8|
  EXPECT_DOUBLE_EQ(m.local.mean_abs, 9.0 / 8.0);  // (1 + 2 + 3 + 4) * 0.5 + 4, over 8
  // The sums carry over: sum (2x)^2 = 4 * (30 + 64), noise = 0.25 * (30 + 64): still 16.
  EXPECT_NEAR(m.local.sqnr_db, 10 * std::log10(16.0), 1e-9);
  EXPECT_EQ(Find(r, "out").local.max_abs, 0.0);
}

TEST(IsolateComparison, QdqConeWalksBackToTheNearestSharedTensor) {
  testing::TempDir dir;
  io::Model a = io::ParseText(kA), b = io::ParseText(kBQdq);
  IsolateComparison isolate(a, b, Options(dir));
  isolate.AddSample(X({0.1f, 0.2f, 0.3f, 0.4f}));
  IsolateResult r = isolate.Result();
  ASSERT_EQ(r.tensors.size(), 2u);
  const IsolatedTensor& out = Find(r, "out");
  // The Add's cone: Q and DQ of A's m (0.2, 0.4, 0.6, 0.8) on a 0.5 grid (half to even):
  // 0, 0.5, 0.5, 1.0 -> errors 0.2, 0.1, 0.1, 0.2 (the quantization of m alone).
  EXPECT_EQ(out.cone_nodes, 3);
  EXPECT_EQ(out.from_a, std::vector<std::string>{"m"});
  EXPECT_NEAR(out.local.max_abs, 0.2, 1e-6);
  EXPECT_NEAR(out.local.mean_abs, 0.15, 1e-6);
  // B's own run: m = 0.25, 0.5, 0.75, 1.0 -> 0, 0.5, 1.0, 1.0; out - A's out = -0.2, 0.1, 0.4, 0.2.
  EXPECT_NEAR(out.accumulated.max_abs, 0.4, 1e-6);
  EXPECT_NEAR(Find(r, "m").local.max_abs, 0.2, 1e-6);  // 0.5 * 0.4
  EXPECT_TRUE(r.not_comparable.empty());
}

TEST(IsolateComparison, NodesWhoseTensorsTheOtherLacksAreListed) {
  testing::TempDir dir;
  // B computes the same out without A's m: A's Mul is not comparable, B's Neg/Neg pair neither.
  io::Model a = io::ParseText(kA);
  io::Model b = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] out) <float two = {2.0}, float one = {1.0}> {
      m2 = Mul(x, two)
      out = Add(m2, one)
      n = Neg(x)
    })");
  IsolateComparison isolate(a, b, Options(dir));
  isolate.AddSample(X({1, 2, 3, 4}));
  IsolateResult r = isolate.Result();
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].tensor, "out");
  EXPECT_EQ(r.tensors[0].cone_nodes, 2);  // Add and the Mul behind it (m2 is B's alone)
  EXPECT_EQ(r.tensors[0].local.max_abs, 0.0);
  ASSERT_EQ(r.not_comparable.size(), 2u);
  EXPECT_EQ(r.not_comparable[0].model, "a");
  EXPECT_EQ(r.not_comparable[0].tensor, "m");
  EXPECT_EQ(r.not_comparable[1].model, "b");
  EXPECT_EQ(r.not_comparable[1].tensor, "n");
}

TEST(IsolateComparison, NoSharedTensorNameIsAUsageError) {
  testing::TempDir dir;
  io::Model a = io::ParseText(kA);
  io::Model b = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Neg(x)
    })");
  try {
    IsolateComparison isolate(a, b, Options(dir));
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("share no tensor name"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime
