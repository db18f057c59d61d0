// Regression tests for the defects a hostile reading of the kernels found: out-of-bounds reads,
// wrapping size arithmetic, undefined float->int casts and allocations sized by model data. Each
// case used to crash, hang, read out of bounds or allocate terabytes; now it is a bad-input
// error naming the node, decided before anything large is allocated.
#include <gtest/gtest.h>

#include <cmath>

#include "lib/io/model.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/resource_limits.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::Int64Tensor;
using testing_util::NodeBuilder;
using testing_util::RunOp;
using TP = onnx::TensorProto;

// Runs the op and returns the bad-input message it must fail with ("" when it did not fail).
std::string BadInputMessage(const onnx::NodeProto& node, int opset,
                            std::vector<const Tensor*> inputs) {
  const uint64_t live_before = LiveTensorBytes();
  try {
    RunOp(node, opset, std::move(inputs));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    // Nothing it allocated on the way stays behind.
    EXPECT_EQ(LiveTensorBytes(), live_before);
    return e.what();
  }
  ADD_FAILURE() << node.op_type() << " accepted a hostile input";
  return "";
}

Tensor Scalar(float v) { return FloatTensor({}, {v}); }

TEST(KernelHardening, GatherElementsIndicesLargerThanDataOffTheAxis) {
  Tensor data = FloatTensor({2, 2}, {1, 2, 3, 4});
  Tensor indices = Int64Tensor({3, 2}, {0, 1, 0, 1, 0, 1});  // 3 rows, data has 2
  auto msg = BadInputMessage(NodeBuilder("GatherElements", 2).Int("axis", 1).node(), 13,
                             {&data, &indices});
  EXPECT_NE(msg.find("exceed data"), std::string::npos) << msg;
  // Along the axis itself the indices tensor may be longer than data (values are range-checked).
  Tensor along = Int64Tensor({2, 3}, {0, 1, 1, 1, 0, 0});
  auto out = RunOp(NodeBuilder("GatherElements", 2).Int("axis", 1).node(), 13, {&data, &along});
  testing_util::ExpectClose(out[0], {2, 3}, {1, 2, 2, 4, 3, 3}, "gather along axis 1");
}

TEST(KernelHardening, ConcatOfScalarsHasNoAxis) {
  Tensor a = Scalar(1), b = Scalar(2);
  auto msg = BadInputMessage(NodeBuilder("Concat", 2).Int("axis", 0).node(), 13, {&a, &b});
  EXPECT_NE(msg.find("out of range for a rank-0"), std::string::npos) << msg;
}

TEST(KernelHardening, BlocksizeWhoseSquareWrapsIsRefused) {
  Tensor x(TP::FLOAT, {1, 0, 1, 1});  // zero channels: "divisible" by anything
  auto d2s = BadInputMessage(
      NodeBuilder("DepthToSpace", 1).Int("blocksize", int64_t{1} << 32).node(), 13, {&x});
  EXPECT_NE(d2s.find("overflows"), std::string::npos) << d2s;
  Tensor y(TP::FLOAT, {1, 1, 0, 0});
  auto s2d = BadInputMessage(
      NodeBuilder("SpaceToDepth", 1).Int("blocksize", int64_t{1} << 32).node(), 13, {&y});
  EXPECT_NE(s2d.find("overflows"), std::string::npos) << s2d;
}

TEST(KernelHardening, ExpandToTerabytesIsRefusedBeforeAllocating) {
  Tensor x = FloatTensor({1}, {1});
  Tensor shape = Int64Tensor({3}, {1 << 20, 1 << 20, 1 << 10});
  auto msg = BadInputMessage(NodeBuilder("Expand", 2).node(), 13, {&x, &shape});
  EXPECT_NE(msg.find("per-tensor memory limit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1048576, 1048576, 1024]"), std::string::npos) << msg;
  Tensor negative = Int64Tensor({2}, {-1, 4});
  EXPECT_NE(BadInputMessage(NodeBuilder("Expand", 2).node(), 13, {&x, &negative}).find("negative"),
            std::string::npos);
}

TEST(KernelHardening, ConstantOfShapeTileAndReshapeWithHugeShapes) {
  Tensor shape = Int64Tensor({1}, {int64_t{1} << 40});
  EXPECT_NE(
      BadInputMessage(NodeBuilder("ConstantOfShape", 1).node(), 13, {&shape}).find("memory limit"),
      std::string::npos);
  Tensor negative = Int64Tensor({2}, {3, -2});
  EXPECT_NE(BadInputMessage(NodeBuilder("ConstantOfShape", 1).node(), 13, {&negative})
                .find("negative dim"),
            std::string::npos);
  Tensor x = FloatTensor({2, 2}, {1, 2, 3, 4});
  Tensor repeats = Int64Tensor({2}, {int64_t{1} << 62, 4});
  EXPECT_NE(BadInputMessage(NodeBuilder("Tile", 2).node(), 13, {&x, &repeats}).find("overflows"),
            std::string::npos);
  Tensor wrap = Int64Tensor({3}, {int64_t{1} << 62, int64_t{1} << 62, 4});  // product wraps to 0
  EXPECT_NE(BadInputMessage(NodeBuilder("Reshape", 2).node(), 13, {&x, &wrap}).find("2^63"),
            std::string::npos);
}

TEST(KernelHardening, RangeWithInfiniteOrNanCount) {
  Tensor zero = Scalar(0), one = Scalar(1), inf = Scalar(INFINITY), nan = Scalar(NAN);
  EXPECT_FALSE(BadInputMessage(NodeBuilder("Range", 3).node(), 13, {&zero, &inf, &one}).empty());
  EXPECT_FALSE(BadInputMessage(NodeBuilder("Range", 3).node(), 13, {&zero, &nan, &one}).empty());
  Tensor empty(TP::FLOAT, {0});  // no value to read at all
  EXPECT_FALSE(BadInputMessage(NodeBuilder("Range", 3).node(), 13, {&empty, &one, &one}).empty());
  Tensor tiny = Scalar(1e-30f);  // 1e30 elements
  EXPECT_FALSE(BadInputMessage(NodeBuilder("Range", 3).node(), 13, {&zero, &one, &tiny}).empty());
}

TEST(KernelHardening, PadWithHugePads) {
  Tensor x(TP::FLOAT, {0, 1});
  // The output is empty (a zero dim) however long the padded axis: no per-axis table is built.
  Tensor pads = Int64Tensor({4}, {0, 0, 0, int64_t{1} << 62});
  auto out = RunOp(NodeBuilder("Pad", 2).node(), 13, {&x, &pads});
  EXPECT_EQ(out[0].size(), 0);
  EXPECT_EQ(out[0].dim(1), (int64_t{1} << 62) + 1);
  Tensor overflow = Int64Tensor({4}, {0, 0, 0, INT64_MAX});
  EXPECT_NE(BadInputMessage(NodeBuilder("Pad", 2).node(), 13, {&x, &overflow}).find("overflow"),
            std::string::npos);
  Tensor y = FloatTensor({1, 1}, {1});
  Tensor big = Int64Tensor({4}, {0, 0, 1 << 30, 1 << 30});
  EXPECT_NE(BadInputMessage(NodeBuilder("Pad", 2).node(), 13, {&y, &big}).find("memory limit"),
            std::string::npos);
}

TEST(KernelHardening, ResizeWithInfiniteOrHugeScales) {
  Tensor x = FloatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  for (float s : {INFINITY, 1e30f, NAN}) {
    Tensor scales = FloatTensor({4}, {1, 1, s, 1});
    EXPECT_FALSE(
        BadInputMessage(NodeBuilder("Resize", 3).node(), 13, {&x, nullptr, &scales}).empty())
        << s;
  }
  // An extreme downscale puts every coordinate far outside the input: edge taps, no UB.
  Tensor sizes = Int64Tensor({4}, {1, 1, 2, 2});
  Tensor wide(TP::FLOAT, {1, 1, 1, int64_t{1} << 20});
  auto out = RunOp(NodeBuilder("Resize", 4).Str("mode", "linear").node(), 13,
                   {&wide, nullptr, nullptr, &sizes});
  EXPECT_EQ(out[0].size(), 4);
}

// Linear interpolation of int64 values near 1e12 needs double accumulation: float holds 24 bits,
// so every output would be off by up to 2^16. Expected values by the spec's formula (asymmetric,
// x = i / 2): the midpoints of neighbours, the last output clamped to the edge.
TEST(KernelHardening, ResizeAccumulatesInt64AndDoubleInDouble) {
  const int64_t base = 1'000'000'000'001;
  Tensor x = Int64Tensor({1, 1, 1, 3}, {base, base + 2, base + 4});
  Tensor scales = FloatTensor({4}, {1, 1, 1, 2});
  auto node = NodeBuilder("Resize", 3)
                  .Str("mode", "linear")
                  .Str("coordinate_transformation_mode", "asymmetric")
                  .node();
  auto out = RunOp(node, 13, {&x, nullptr, &scales});
  const int64_t* p = out[0].data<int64_t>();
  std::vector<int64_t> expected = {base, base + 1, base + 2, base + 3, base + 4, base + 4};
  EXPECT_EQ(std::vector<int64_t>(p, p + 6), expected);

  Tensor xd(TP::DOUBLE, {1, 1, 1, 2});
  xd.mutable_data<double>()[0] = 1.0;
  xd.mutable_data<double>()[1] = 1.0 + 1e-12;
  auto outd = RunOp(node, 13, {&xd, nullptr, &scales});
  EXPECT_DOUBLE_EQ(outd[0].data<double>()[1], 1.0 + 0.5e-12);
}

TEST(KernelHardening, NegativeDimIsBadInputNotInternal) {
  try {
    Tensor t(TP::FLOAT, {2, -3});
    FAIL() << "a negative dim was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("negative dim"), std::string::npos) << e.what();
  }
}

// Found by fuzz_executor: integer reductions accumulated in int64 with plain arithmetic (signed
// overflow is UB) and ReduceLogSumExp cast exp(v) to int64 (UB past 2^63). They wrap like ONNX
// Runtime's accumulators and saturate exp instead.
TEST(KernelHardening, IntegerReductionsOfHugeValuesHaveNoUndefinedBehaviour) {
  Tensor x = Int64Tensor({3}, {INT64_MAX, INT64_MAX, INT64_MIN});
  auto sum = RunOp(NodeBuilder("ReduceSum", 1).Int("keepdims", 0).node(), 13, {&x});
  EXPECT_EQ(sum[0].data<int64_t>()[0], INT64_MAX - 1);  // wraps: MAX + MAX + MIN = MAX - 1
  auto prod = RunOp(NodeBuilder("ReduceProd", 1).Int("keepdims", 0).node(), 13, {&x});
  EXPECT_EQ(prod[0].rank(), 0);
  auto l1 = RunOp(NodeBuilder("ReduceL1", 1).Int("keepdims", 0).node(), 13, {&x});
  EXPECT_EQ(l1[0].rank(), 0);
  Tensor big = Int64Tensor({1}, {1000});
  auto lse = RunOp(NodeBuilder("ReduceLogSumExp", 1).Int("keepdims", 0).node(), 13, {&big});
  EXPECT_EQ(lse[0].data<int64_t>()[0], INT64_MAX);  // exp(1000) saturates
  Tensor u = Tensor(TP::UINT64, {2});
  u.mutable_data<uint64_t>()[0] = UINT64_MAX;
  u.mutable_data<uint64_t>()[1] = UINT64_MAX;
  auto mean = RunOp(NodeBuilder("ReduceMean", 1).Int("keepdims", 0).node(), 13, {&u});
  EXPECT_EQ(mean[0].dtype(), TP::UINT64);
}

// Found by fuzz_executor: a NonZero node declaring two outputs ran, left the second empty and
// the session reported an internal error ("please report"); the model is malformed: bad input.
TEST(KernelHardening, NodeDeclaringMoreOutputsThanItsOpHasIsBadInput) {
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (int64[a, b] y, int64[c] z) {
  y, z = NonZero(x)
})");
  model.proto.mutable_graph()->mutable_node(0)->set_name("nz");
  try {
    Session session(model);
    session.Run({{"x", FloatTensor({2}, {0, 1})}});
    FAIL() << "NonZero with two outputs ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_EQ(e.node(), "nz");
    EXPECT_NE(std::string(e.what()).find("declares 2 outputs; the op has at most 1"),
              std::string::npos)
        << e.what();
  }
}

// Found by fuzz_executor: Clip of a float by an int64 bound read the bound as float64 and failed
// inside the kernel as an internal error. Inputs that break the op's type constraints are bad
// input naming the input, checked before the kernel runs.
TEST(KernelHardening, InputsBreakingTheOpsTypeConstraintsAreBadInput) {
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  lo = Constant <value = int64 {0}> ()
  y = Clip(x, lo)
})");
  model.proto.mutable_graph()->mutable_node(1)->set_name("clip");
  try {
    Session session(model);
    session.Run({{"x", FloatTensor({2}, {-1, 1})}});
    FAIL() << "Clip with an int64 bound ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_EQ(e.node(), "clip");
    EXPECT_EQ(e.tensor(), "lo");
    EXPECT_NE(std::string(e.what()).find("input 1 ('lo') is int64 but input 0 ('x') is float32"),
              std::string::npos)
        << e.what();
  }
  // A dtype the formal parameter does not allow at all: Relu of a bool.
  io::Model relu = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (bool[2] x) => (bool[2] y) {
  y = Relu(x)
})");
  try {
    Session session(relu);
    Tensor b(TP::BOOL, {2});
    session.Run({{"x", b}});
    FAIL() << "Relu of a bool ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("is tensor(bool), which the op does not accept"),
              std::string::npos)
        << e.what();
  }
}

// Runs `text` on x = float[2] {1, 2} and returns the error it fails with.
Error SessionError(const std::string& text) {
  io::Model model = io::ParseText(text);
  model.proto.mutable_graph()->mutable_node(0)->set_name("n0");
  try {
    Session session(model);
    session.Run({{"x", FloatTensor({2}, {1, 2})}});
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the model ran";
  return Error(ErrorKind::kInternal, "");
}

// Found by fuzz_executor (s3-12): the output-count check used the schema of the model's opset
// only; Atanh at opset 7 (the op is from opset 9) has none there, its kernel ran anyway and the
// undeclared second output came out as an internal error. The op's latest schema gives the count.
TEST(KernelHardening, ExtraOutputsAreBadInputAtAnOpsetBeforeTheOp) {
  Error e = SessionError(R"(
<ir_version: 8, opset_import: ["" : 7]>
g (float[2] x) => (float[2] y, float[2] z) {
  y, z = Atanh(x)
})");
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
  EXPECT_NE(std::string(e.what()).find("declares 2 outputs; the op has at most 1"),
            std::string::npos)
      << e.what();
}

// Found by fuzz_executor (s3-12): a session did not register porttool's contrib schemas itself,
// so FastGelu (com.microsoft) had no type or output-count check unless inference had run first
// in the process; an int64 input then failed inside the kernel as an internal error.
TEST(KernelHardening, ContribOpsAreCheckedWithoutInferenceRunningFirst) {
  Error type = SessionError(R"(
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[2] x) => (float[2] y) {
  i = Cast <to = 7> (x)
  y = com.microsoft.FastGelu(i)
})");
  EXPECT_EQ(type.kind(), ErrorKind::kBadInput) << type.what();
  Error outputs = SessionError(R"(
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[2] x) => (float[2] y, float[2] z) {
  y, z = com.microsoft.Gelu(x)
})");
  EXPECT_EQ(outputs.kind(), ErrorKind::kBadInput) << outputs.what();
}

// Found by fuzz_executor (s3-12, UBSan): QuantizeLinear of a NaN cast NaN to uint8, which is
// undefined behaviour. NaN quantizes to the zero point.
TEST(KernelHardening, QuantizeLinearOfNanGivesTheZeroPoint) {
  Tensor x = FloatTensor({3}, {std::nanf(""), 1.0f, -1.0f});
  Tensor scale = Scalar(1.0f);
  Tensor zp(TP::UINT8, {});
  zp.mutable_data<uint8_t>()[0] = 7;
  auto out = RunOp(NodeBuilder("QuantizeLinear", 3).node(), 13, {&x, &scale, &zp});
  EXPECT_EQ(out[0].data<uint8_t>()[0], 7);
  EXPECT_EQ(out[0].data<uint8_t>()[1], 8);
  EXPECT_EQ(out[0].data<uint8_t>()[2], 6);
}

// Found by fuzz_executor (s3-12, out-of-memory): HannWindow and its kin filled a scratch vector of
// `size` doubles before allocating the output, so a huge size escaped the memory limits.
TEST(KernelHardening, WindowOfHugeSizeIsRefusedBeforeAllocating) {
  Tensor size = Int64Tensor({}, {int64_t{1} << 40});
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    EXPECT_NE(BadInputMessage(NodeBuilder(op, 1).node(), 17, {&size}), "") << op;
  }
  Tensor four = Int64Tensor({}, {4});
  auto hann = RunOp(NodeBuilder("HannWindow", 1).node(), 17, {&four});
  EXPECT_FLOAT_EQ(hann[0].data<float>()[2], 1.0f);  // periodic: 0, 0.5, 1, 0.5
}

class ResourceLimitsTest : public ::testing::Test {
 protected:
  void TearDown() override { SetResourceLimits({}); }
};

TEST_F(ResourceLimitsTest, PerTensorAndTotalCaps) {
  SetResourceLimits({.tensor_bytes = 1 << 20, .total_bytes = 3 << 20});
  EXPECT_THROW(Tensor(TP::FLOAT, {512, 1024}), Error);  // 2 MB > 1 MB per tensor
  const uint64_t base = LiveTensorBytes();
  {
    Tensor a(TP::FLOAT, {256, 1024}), b(TP::FLOAT, {256, 1024});  // 1 MB each
    EXPECT_EQ(LiveTensorBytes(), base + (2 << 20));
    try {
      Tensor d(TP::FLOAT, {256, 1024}), e(TP::FLOAT, {256, 1024});
      FAIL() << "4 MB live under a 3 MB total cap";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("total tensor memory limit"), std::string::npos);
    }
  }
  EXPECT_EQ(LiveTensorBytes(), base);  // freed tensors give their bytes back
  Tensor again(TP::FLOAT, {256, 1024});
}

TEST(KernelHardening, SessionNamesNodeAndTensorOfARefusedAllocation) {
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g () => (float[a, b, c] y) {
  x = Constant <value = float[1] {1.0}> ()
  shape = Constant <value = int64[3] {1048576, 1048576, 1024}> ()
  y = Expand(x, shape)
})");
  for (auto& n : *model.proto.mutable_graph()->mutable_node()) n.set_name(n.output(0) + "_node");
  Session session(model);
  try {
    session.Run({});
    FAIL() << "Expand to 4 PB ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.node(), "y_node");
    std::string msg = e.what();
    EXPECT_NE(msg.find("producing 'y'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4096.00 TiB"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace porttool::runtime
