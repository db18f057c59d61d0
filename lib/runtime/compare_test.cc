// Per-tensor CompareModels runs the reference and the candidate in lockstep: these tests cover
// what the hand-over must get right besides memory (which cli_run_test measures): execution orders
// that differ (the reference's tensors spilled to disk and read back, then removed), the first
// divergent tensor in the candidate's order, and a reference that fails mid-run (reported, no
// hang).
#include "lib/runtime/compare.h"

#include <gtest/gtest.h>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

// Two independent branches joined at the end; the node order decides which branch runs first.
constexpr const char* kPFirst = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    p1 = Relu(x)
    p2 = Neg(p1)
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    y = Add(p2, q2)
  })";
constexpr const char* kQFirst = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    p1 = Relu(x)
    p2 = Neg(p1)
    y = Add(p2, q2)
  })";
// As kQFirst with p2 = Abs(p1) = p1 instead of -p1: p2 and y diverge, q1, q2 and p1 do not.
constexpr const char* kQFirstDiverging = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    p1 = Relu(x)
    p2 = Abs(p1)
    y = Add(p2, q2)
  })";

std::vector<std::string> Names(const ModelComparison& c) {
  std::vector<std::string> names;
  for (const auto& t : c.intermediates) names.push_back(t.name);
  return names;
}

TensorMap Inputs(const io::Model& model) {
  Session session(model);
  return RandomInputs(session, 0);
}

TEST(CompareModelsPerTensor, OrdersThatDifferSpillAndComeBackInTheCandidatesOrder) {
  io::Model a = io::ParseText(kPFirst), b = io::ParseText(kQFirst);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  for (size_t budget : {size_t{0}, size_t{4} << 20}) {
    options.lockstep_budget = budget;  // 0: everything A makes before B asks for it is spilled
    ModelComparison c = CompareModels(a, b, Inputs(a), options);
    EXPECT_EQ(Names(c), (std::vector<std::string>{"q1", "q2", "p1", "p2", "y"})) << budget;
    EXPECT_TRUE(c.within_tolerance);
    EXPECT_FALSE(c.first_divergent.has_value());
    ASSERT_EQ(c.outputs.size(), 1u);
    EXPECT_EQ(c.outputs[0].stats.max_abs, 0.0);
    EXPECT_TRUE(std::filesystem::is_empty(scratch.path())) << "spilled tensors are removed";
  }
}

TEST(CompareModelsPerTensor, FirstDivergentTensorInTheCandidatesOrder) {
  io::Model a = io::ParseText(kPFirst), b = io::ParseText(kQFirstDiverging);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  options.lockstep_budget = 0;
  ModelComparison c = CompareModels(a, b, Inputs(a), options);
  ASSERT_TRUE(c.first_divergent.has_value());
  const TensorComparison& first = c.intermediates[*c.first_divergent];
  EXPECT_EQ(first.name, "p2");
  EXPECT_EQ(first.op, "Abs");
  EXPECT_TRUE(c.intermediates[0].stats.within_tolerance);  // q1
  EXPECT_FALSE(c.within_tolerance);
  // Same statistics as comparing the two tensors directly.
  Session sa(a), sb(b);
  TensorMap in = Inputs(a);
  Tensor ya = sa.Run(in)[0].value, yb = sb.Run(in)[0].value;
  TensorStats direct = CompareTensors(ya, yb, 1e-3, 1e-4);
  EXPECT_EQ(c.outputs[0].stats.max_abs, direct.max_abs);
  EXPECT_EQ(c.outputs[0].stats.mean_abs, direct.mean_abs);
  EXPECT_EQ(c.outputs[0].stats.cosine, direct.cosine);
}

// The reference fails at run time (a Reshape to 7 elements of a 6-element tensor) while the
// candidate waits for that tensor: the reference's error comes out, nothing hangs.
TEST(CompareModelsPerTensor, ReferenceFailingMidRunIsReported) {
  io::Model a = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[6] y) {
      n = Neg(x)
      s = Constant<value = int64[1] {7}>()
      r = Reshape(n, s)
      y = Abs(r)
    })");
  io::Model b = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[6] y) {
      n = Neg(x)
      s = Constant<value = int64[1] {6}>()
      r = Reshape(n, s)
      y = Abs(r)
    })");
  CompareOptions options;
  options.per_tensor = true;
  testing::TempDir scratch;
  options.scratch_dir = scratch.path();
  EXPECT_THROW(CompareModels(a, b, Inputs(a), options), Error);
  // And the other way round: the candidate fails, the reference is left to finish.
  EXPECT_THROW(CompareModels(b, a, Inputs(a), options), Error);
}

}  // namespace
}  // namespace porttool::runtime
