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
g (float[1,2,3,3] x) => (float[1,2,3,3] y, float[1,2,3,3] q, float[1,2,3,3] v) {
  neg = Constant <value = float[1] {-2.5}> ()
  one = Constant <value_float = 1.0> ()
  lo = Constant <value_float = -1.0> ()
  hi = Constant <value_float = 3.0> ()
  four = Constant <value = float[1] {4.0}> ()
  row = Constant <value = float[3] {1.0, 2.0, 3.0}> ()
  m = Mul (x, neg)
  a = Add (one, m)
  c = Clip (a, lo, hi)
  r = Relu (c)
  d = Div (r, four)
  y = Sub (one, d)
  q = Div (one, x)
  v = Mul (x, row)
})";

TEST(DerivedRanges, RulesForMonotonicOpsOnly) {
  io::Model m = io::ParseText(kChain);
  auto rules = DerivableRanges(m);
  for (const char* derived : {"m", "a", "c", "r", "d", "y"}) {
    EXPECT_TRUE(rules.count(derived)) << derived;
  }
  for (const char* scanned : {"q", "v", "x"}) EXPECT_FALSE(rules.count(scanned)) << scanned;
  EXPECT_EQ(rules.at("y").op, RangeRule::Op::kSubtractFrom);
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
  RangeRule times_big{"x", RangeRule::Op::kMultiply, 1e30f};
  EXPECT_FALSE(DeriveRange(times_big, {-1e10f, 1.f, 0}));  // -1e40 overflows
  EXPECT_FALSE(DeriveRange(times_big, {-1.f, 1.f, 3}));    // x had NaN/Inf
  auto r = DeriveRange({"x", RangeRule::Op::kMultiply, -2.f}, {-1.f, 3.f, 0});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, -6.f);
  EXPECT_EQ(r->hi, 2.f);
}

}  // namespace
}  // namespace porttool::quant
