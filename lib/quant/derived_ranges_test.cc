// Derived ranges must equal what scanning the tensors gives: every rule on real kernel outputs,
// including the decreasing ones (a negative scale, a constant minus x), and the cases that must
// not be derived (two activations, c / x, a non-scalar constant).
#include "lib/quant/derived_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "lib/quant/calibrate.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::quant {
namespace {

using runtime::Tensor;
using TP = onnx::TensorProto;
namespace fs = std::filesystem;

constexpr const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,3,3] x) => (float[1,2,3,3] y, float[1,2,3,3] q, float[1,2,3,3] v, float[1,6,6,6] cat, float[2,9] flat, float[1,2,4,4] hp) {
  neg = Constant <value = float[1] {-2.5}> ()
  one = Constant <value_float = 1.0> ()
  lo = Constant <value_float = -1.0> ()
  hi = Constant <value_float = 3.0> ()
  four = Constant <value = float[1] {4.0}> ()
  row = Constant <value = float[3] {1.0, 2.0, 3.0}> ()
  roi = Constant <value = float[0] {}> ()
  two = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  half = Constant <value = float[4] {1.0, 1.0, 1.5, 1.5}> ()
  shape = Constant <value = int64[2] {2, 9}> ()
  m = Mul (x, neg)
  a = Add (one, m)
  c = Clip (a, lo, hi)
  r = Relu (c)
  d = Div (r, four)
  y = Sub (one, d)
  q = Div (one, x)
  v = Mul (x, row)
  up = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (d, roi, two)
  up2 = Resize <mode = "nearest"> (m, roi, two)
  cat = Concat <axis = 1> (up, up2, up)
  flat = Reshape (m, shape)
  hp = Resize <mode = "nearest", coordinate_transformation_mode = "half_pixel"> (a, roi, half)
})";

TEST(DerivedRanges, RulesForMonotonicOpsOnly) {
  io::Model m = io::ParseText(kChain);
  auto rules = DerivableRanges(m);
  for (const char* derived : {"m", "a", "c", "r", "d", "y", "up", "up2", "cat", "flat", "hp"}) {
    EXPECT_TRUE(rules.count(derived)) << derived;
  }
  for (const char* scanned : {"q", "v", "x"}) EXPECT_FALSE(rules.count(scanned)) << scanned;
  EXPECT_EQ(rules.at("y").op, RangeRule::Op::kSubtractFrom);
  EXPECT_EQ(rules.at("cat").inputs, (std::vector<std::string>{"up", "up2", "up"}));
  EXPECT_EQ(rules.at("m").a, -2.5f);
  EXPECT_EQ(rules.at("c").a, -1.0f);
  EXPECT_EQ(rules.at("c").b, 3.0f);
}

TEST(DerivedRanges, EqualTheScannedExtremesOfTheKernelOutputs) {
  testing::TempDir tmp;
  io::Model m = io::ParseText(kChain);
  fs::create_directories(tmp / "data");
  Tensor x(TP::FLOAT, {1, 2, 3, 3});
  for (int64_t i = 0; i < x.size(); ++i)
    x.mutable_data<float>()[i] = 0.37f * (i - 7) + 0.01f * i * i;
  runtime::WriteNpy(tmp / "data" / "0.x.npy", x);
  StatsMap stats = CollectStats(m, ListSamples(tmp / "data", runtime::Session(m).inputs(), {}), {});
  // The same tensors by running the model and scanning each one.
  runtime::Session session(m);
  session.RunObserved({{"x", x}}, [&](const runtime::ProducedTensor& p) {
    if (p.node.op_type() == "Constant") return;
    const float* v = p.value.data<float>();
    auto [lo, hi] = std::minmax_element(v, v + p.value.size());
    EXPECT_EQ(stats.at(p.name).stats.min(), *lo) << p.name;
    EXPECT_EQ(stats.at(p.name).stats.max(), *hi) << p.name;
  });
  // The chain really clips: y is 1 - relu(clip(1 - 2.5 x, -1, 3)) / 4, within [0.25, 1].
  EXPECT_EQ(stats.at("y").stats.min(), 0.25);
  EXPECT_EQ(stats.at("y").stats.max(), 1.0);
}

TEST(DerivedRanges, NonFiniteInputsAndOverflowAreScanned) {
  RangeRule times_big{{"x"}, RangeRule::Op::kMultiply, 1e30f};
  using Ranges = std::vector<SampleRange>;
  EXPECT_FALSE(DeriveRange(times_big, Ranges{{-1e10f, 1.f, 0}}));  // -1e40 overflows
  EXPECT_FALSE(DeriveRange(times_big, Ranges{{-1.f, 1.f, 3}}));    // x had NaN/Inf
  RangeRule times_minus_two{{"x"}, RangeRule::Op::kMultiply, -2.f};
  auto r = DeriveRange(times_minus_two, Ranges{{-1.f, 3.f, 0}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, -6.f);
  EXPECT_EQ(r->hi, 2.f);
  RangeRule concat{{"a", "b"}, RangeRule::Op::kSame};
  auto both = DeriveRange(concat, Ranges{{-1.f, 3.f, 0}, {-4.f, 2.f, 0}});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->lo, -4.f);
  EXPECT_EQ(both->hi, 3.f);
}

}  // namespace
}  // namespace porttool::quant
