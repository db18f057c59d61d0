// Float16 emulation: the rounding against numpy's float16 conversion (the IEEE oracle) over every
// binade, the edges by hand, and a session that computes in float16: weights and op boundaries
// rounded, overflow past 65504 named with its node, a chain mixing a float16 segment with a
// float32 one.
#include "lib/runtime/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "lib/runtime/chain.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(Float16, EdgesRoundAsTheHardwareConversionDoes) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(RoundToFloat16(65504.0f), 65504.0f);
  EXPECT_EQ(RoundToFloat16(65519.99f), 65504.0f);
  EXPECT_EQ(RoundToFloat16(65520.0f), inf);  // the tie past the largest finite value
  EXPECT_EQ(RoundToFloat16(-1e6f), -inf);
  EXPECT_EQ(RoundToFloat16(1.0f + 0x1p-11f), 1.0f);                // tie to even
  EXPECT_EQ(RoundToFloat16(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // tie to even, upward
  EXPECT_EQ(RoundToFloat16(0x1p-25f), 0.0f);                       // subnormal tie to even
  EXPECT_EQ(RoundToFloat16(3 * 0x1p-25f), 0x1p-23f);
  EXPECT_EQ(RoundToFloat16(0x1p-24f), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(Bits(RoundToFloat16(-0.0f)), Bits(-0.0f));
  EXPECT_TRUE(std::isnan(RoundToFloat16(std::nanf(""))));
  EXPECT_EQ(RoundToFloat16(inf), inf);
}

// numpy's astype(float16) is IEEE round-to-nearest-even: every value must match it bit for bit.
TEST(Float16, MatchesNumpyOnEveryBinade) {
  testing::TempDir dir;
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  Tensor values(onnx::TensorProto::FLOAT, {200000});
  float* p = values.mutable_data<float>();
  for (int64_t i = 0; i < values.size(); ++i) {
    // Exponents around binary16's range, where the interesting cases are.
    uint32_t u = bits(rng);
    u = (u & 0x807fffffu) | ((100u + (u >> 23) % 60u) << 23);
    std::memcpy(&p[i], &u, sizeof u);
  }
  WriteNpy(dir / "in.npy", values);
  auto r = testing::RunShell(
      "/usr/bin/python3 -c \"import numpy as n; n.save('" + (dir / "out.npy").string() +
      "', n.load('" + (dir / "in.npy").string() + "').astype(n.float16).astype(n.float32))\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Tensor want = ReadTensorFile(dir / "out.npy");
  const float* q = want.data<float>();
  int64_t mismatches = 0;
  for (int64_t i = 0; i < values.size(); ++i) {
    if (Bits(RoundToFloat16(p[i])) != Bits(q[i]) && mismatches++ < 5) {
      ADD_FAILURE() << p[i] << " -> " << RoundToFloat16(p[i]) << ", numpy " << q[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// y = (x * w) * 1000: with x and w near 1, x*w rounds at the boundary and the product overflows.
const char* kScaled = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) {
  w = Constant<value = float[4] {1.0001, 2.0, 3.0, 100.0}>()
  big = Constant<value = float[1] {1000.0}>()
  t = Mul(x, w)
  y = Mul(t, big)
})";

TEST(Float16, SessionRoundsWeightsAndOpBoundariesAndNamesTheOverflow) {
  io::Model model = io::ParseText(kScaled);
  model.proto.mutable_graph()->mutable_node(3)->set_name("scale");
  Tensor x(onnx::TensorProto::FLOAT, {4});
  for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = 1.0f;
  Session fp32(model), fp16(model, {.float16 = true});
  const Tensor want_tensor = fp32.Run({{"x", x}})[0].value;
  const Tensor got = fp16.Run({{"x", x}})[0].value;
  const float* want = want_tensor.data<float>();
  const float* g = got.data<float>();
  // 1.0001 is no float16 value: the weight is rounded to 1.0 once, then x*w and the product.
  EXPECT_EQ(g[0], RoundToFloat16(RoundToFloat16(1.0001f) * 1000.0f));
  EXPECT_NE(g[0], want[0]);
  EXPECT_EQ(g[1], 2000.0f);
  EXPECT_EQ(g[3], std::numeric_limits<float>::infinity()) << "100 * 1000 is past 65504";
  ASSERT_EQ(fp16.float16_overflows().size(), 1u);
  EXPECT_EQ(fp16.float16_overflows()[0].tensor, "y");
  EXPECT_EQ(fp16.float16_overflows()[0].node, "scale");
  EXPECT_EQ(fp16.float16_overflows()[0].max_abs, 100000.0f);
  EXPECT_TRUE(fp32.float16_overflows().empty());
}

// float32_nodes: a kept node's output is not rounded, nor a weight only kept nodes read; the
// other nodes still compute in float16 around it.
TEST(Float16, KeptNodesComputeInFloat32WithTheirOwnWeights) {
  io::Model model = io::ParseText(kScaled);
  model.proto.mutable_graph()->mutable_node(2)->set_name("weigh");
  model.proto.mutable_graph()->mutable_node(3)->set_name("scale");
  Tensor x(onnx::TensorProto::FLOAT, {4});
  for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = 1.0f;

  Session keep_scale(model, {.float16 = true, .float32_nodes = {"scale"}});
  const Tensor y = keep_scale.Run({{"x", x}})[0].value;
  EXPECT_TRUE(keep_scale.float16_overflows().empty()) << "the overflowing node runs in float32";
  EXPECT_EQ(y.data<float>()[3], 100000.0f);
  // 'weigh' still computes in float16: its weight 1.0001 was rounded to 1 before the product.
  EXPECT_EQ(y.data<float>()[0], 1000.0f);

  Session keep_weigh(model, {.float16 = true, .float32_nodes = {"weigh"}});
  std::map<std::string, Tensor> seen;
  const Tensor y2 =
      keep_weigh
          .Run({{"x", x}}, [&](const std::string& name, const Tensor& v) { seen[name] = v; })[0]
          .value;
  // The weight only 'weigh' reads stays 1.0001, and so does its product; 'scale' rounds again.
  EXPECT_EQ(seen.at("t").data<float>()[0], 1.0001f);
  EXPECT_EQ(y2.data<float>()[0], RoundToFloat16(1.0001f * 1000.0f));
  ASSERT_EQ(keep_weigh.float16_overflows().size(), 1u);
  EXPECT_EQ(keep_weigh.float16_overflows()[0].node, "scale");
}

TEST(Float16, UnknownKeptNodesAreAUsageErrorNamingThem) {
  io::Model model = io::ParseText(kScaled);
  model.proto.mutable_graph()->mutable_node(3)->set_name("scale");
  try {
    Session s(model, {.float16 = true, .float32_nodes = {"scale", "scal", "nowhere"}});
    FAIL() << "unknown node names were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("'nowhere'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'scal'"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("'scale'"), std::string::npos) << e.what();
  }
}

// float64 is not an accelerator type: it is neither rounded nor counted as an overflow past
// 65504, and the session names it.
TEST(Float16, Float64TensorsStayFloat64) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (double[2] x, float[2] f) => (double[2] y, float[2] z) {
  w = Constant<value = double[2] {1.0001, 1000.0}>()
  y = Mul(x, w)
  z = Mul(f, f)
})");
  Tensor x(onnx::TensorProto::DOUBLE, {2}), f(onnx::TensorProto::FLOAT, {2});
  x.mutable_data<double>()[0] = 1.0;
  x.mutable_data<double>()[1] = 100.0;
  f.mutable_data<float>()[0] = 1.0f + 0x1p-12f;
  f.mutable_data<float>()[1] = 2.0f;
  Session fp16(model, {.float16 = true});
  auto out = fp16.Run({{"x", x}, {"f", f}});
  EXPECT_EQ(out[0].value.data<double>()[0], 1.0001);
  EXPECT_EQ(out[0].value.data<double>()[1], 100000.0);
  EXPECT_EQ(out[1].value.data<float>()[0], 1.0f) << "float32 tensors are still rounded";
  EXPECT_TRUE(fp16.float16_overflows().empty());
  EXPECT_EQ(fp16.float16_kept_float64(), (std::vector<std::string>{"w", "x", "y"}));
  Session fp32(model);
  fp32.Run({{"x", x}, {"f", f}});
  EXPECT_TRUE(fp32.float16_kept_float64().empty());
}

// PP-OCRv4 det's case: a BatchNormalization variance past 65504 (a Constant, which exporters
// leave unnamed) is an overflow named by the node reading it, and zeroes the channel; keeping that
// node in float32 keeps its parameters too and computes the channel.
TEST(Float16, AnOverflowingConstantWeightIsNamedByItsReaderAndKeepingTheReaderFixesIt) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 2, 1, 1] x) => (float[1, 2, 1, 1] y) {
  s = Constant<value = float[2] {10000.0, 1.0}>()
  b = Constant<value = float[2] {0.0, 0.0}>()
  m = Constant<value = float[2] {0.0, 0.0}>()
  v = Constant<value = float[2] {100000000.0, 1.0}>()
  y = BatchNormalization<epsilon = 0.0>(x, s, b, m, v)
})");
  model.proto.mutable_graph()->mutable_node(4)->set_name("bn");
  Tensor x(onnx::TensorProto::FLOAT, {1, 2, 1, 1});
  x.mutable_data<float>()[0] = 3.0f;
  x.mutable_data<float>()[1] = 5.0f;

  Session rounded(model, {.float16 = true});
  const auto zeroed = rounded.Run({{"x", x}});
  EXPECT_EQ(zeroed[0].value.data<float>()[0], 0.0f) << "3 * 1e4 / sqrt(inf)";
  ASSERT_EQ(rounded.float16_overflows().size(), 1u);
  EXPECT_EQ(rounded.float16_overflows()[0].tensor, "v");
  EXPECT_EQ(rounded.float16_overflows()[0].node, "bn");
  EXPECT_TRUE(rounded.float16_overflows()[0].weight);

  Session kept(model, {.float16 = true, .float32_nodes = {"bn"}});
  const auto out = kept.Run({{"x", x}});
  EXPECT_FLOAT_EQ(out[0].value.data<float>()[0], 3.0f) << "3 * 1e4 / sqrt(1e8)";
  EXPECT_FLOAT_EQ(out[0].value.data<float>()[1], 5.0f);
  EXPECT_TRUE(kept.float16_overflows().empty());
}

TEST(Float16, ChainComputesEachSegmentInItsOwnPrecision) {
  io::Model whole = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  t = Mul(x, x)
  y = Add(t, x)
})");
  io::Model first = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] t) {
  t = Mul(x, x)
})");
  io::Model second = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2] t, float[2] x) => (float[2] y) {
  y = Add(t, x)
})");
  Tensor x(onnx::TensorProto::FLOAT, {2});
  x.mutable_data<float>()[0] = 1.0f + 0x1p-12f;  // no float16 value: rounds to 1
  x.mutable_data<float>()[1] = 3.0f;
  ChainSession chain(whole, {&first, &second}, std::vector<SessionOptions>{{.float16 = true}, {}});
  Tensor y = chain.Run({{"x", x}})[0].value;
  // The float16 segment saw x rounded to 1 and produced 1; the float32 one adds the exact x.
  EXPECT_EQ(y.data<float>()[0], 1.0f + (1.0f + 0x1p-12f));
  EXPECT_EQ(y.data<float>()[1], 12.0f);
}

}  // namespace
}  // namespace porttool::runtime
