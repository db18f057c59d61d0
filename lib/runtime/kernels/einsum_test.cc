// Einsum beyond the five backend node tests: the GEMM-based fast path and the plain summation
// loop agree on random data for matmul-like, transposing, reducing, diagonal, broadcasting and
// three-operand equations (each path is the other's oracle), both match hand-computed values, and
// malformed equations fail at plan time naming the node, the attribute and its value.
#include "lib/runtime/kernels/einsum.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using kernels::EinsumPath;
using testing_util::FloatTensor;
using testing_util::NodeBuilder;
using testing_util::RandomFloats;

struct Both {
  Tensor fast, general;
};

Both RunBoth(const std::string& equation, const std::vector<const Tensor*>& inputs) {
  const auto node =
      NodeBuilder("Einsum", static_cast<int>(inputs.size())).Str("equation", equation).node();
  KernelContext ctx(node, 12, inputs);
  const auto eq = kernels::ParseEinsumEquation(ctx, equation, static_cast<int>(inputs.size()));
  return {kernels::EvaluateEinsum(ctx, eq, inputs, EinsumPath::kFast),
          kernels::EvaluateEinsum(ctx, eq, inputs, EinsumPath::kGeneral)};
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

void ExpectAgree(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes,
                 const std::vector<int64_t>& expected_shape, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::vector<Tensor> tensors;
  for (const auto& s : shapes) tensors.push_back(RandomFloats(s, rng));
  std::vector<const Tensor*> inputs;
  for (const auto& t : tensors) inputs.push_back(&t);
  const Both r = RunBoth(equation, inputs);
  ASSERT_EQ(r.general.shape(), expected_shape) << equation;
  testing_util::ExpectClose(r.fast, expected_shape, Values(r.general), equation, 1e-4);
}

TEST(EinsumKernel, FastPathAgreesWithGeneralPath) {
  ExpectAgree("bij,bjk->bik", {{3, 4, 5}, {3, 5, 6}}, {3, 4, 6});
  ExpectAgree("ij,jk", {{7, 5}, {5, 3}}, {7, 3});
  ExpectAgree("bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}, {2, 3, 5, 6});  // attention scores
  ExpectAgree("bhqk,bhkd->bhqd", {{2, 3, 5, 6}, {2, 3, 6, 4}}, {2, 3, 5, 4});
  ExpectAgree("ji,jk->ik", {{5, 7}, {5, 3}}, {7, 3});              // A transposed, no copy
  ExpectAgree("ij,kj->ik", {{7, 5}, {3, 5}}, {7, 3});              // B transposed, no copy
  ExpectAgree("ij,jk->ki", {{7, 5}, {5, 3}}, {3, 7});              // output transposed, no copy
  ExpectAgree("bij,jk->kbi", {{2, 4, 5}, {5, 3}}, {3, 2, 4});      // output permuted
  ExpectAgree("ibj,bjk->bik", {{4, 2, 5}, {2, 5, 3}}, {2, 4, 3});  // operand permuted
  ExpectAgree("ij->ji", {{3, 4}}, {4, 3});
  ExpectAgree("ijk->kij", {{2, 3, 4}}, {4, 2, 3});
  ExpectAgree("ij->i", {{3, 4}}, {3});
  ExpectAgree("ij->j", {{3, 4}}, {4});
  ExpectAgree("ijk->", {{2, 3, 4}}, {});
  ExpectAgree("i,i", {{6}, {6}}, {});
  ExpectAgree("i,j->ij", {{3}, {4}}, {3, 4});
  ExpectAgree("ij,ij->ij", {{3, 4}, {3, 4}}, {3, 4});
  ExpectAgree("ij,ij->", {{3, 4}, {3, 4}}, {});
  ExpectAgree("ijk,jl->il", {{3, 4, 5}, {4, 2}}, {3, 2});  // k summed on A alone first
  ExpectAgree("ii->i", {{4, 4}}, {4});
  ExpectAgree("ii", {{4, 4}}, {});
  ExpectAgree("iij,jk->ik", {{3, 3, 4}, {4, 2}}, {3, 2});  // diagonal, then contraction
  ExpectAgree("...ii->...i", {{3, 5, 5}}, {3, 5});
  ExpectAgree("...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}, {2, 5, 3, 2});  // broadcast batch
  ExpectAgree("...ij,jk", {{2, 3, 4}, {4, 5}}, {2, 3, 5});         // implicit: "..." first
  ExpectAgree("bij,bjk->bik", {{1, 3, 4}, {5, 4, 2}}, {5, 3, 2});  // size-1 label broadcast
  ExpectAgree("ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, {3, 2});
  ExpectAgree("ab,bc,ca->", {{3, 4}, {4, 5}, {5, 3}}, {});
  ExpectAgree("Ab,bC->AC", {{3, 4}, {4, 2}}, {3, 2});  // upper-case labels
  ExpectAgree("ij,jk->ik", {{0, 4}, {4, 3}}, {0, 3});  // empty output
  ExpectAgree("ij,jk->ik", {{3, 0}, {0, 2}}, {3, 2});  // sum over nothing
}

TEST(EinsumKernel, LargeBatchedMatMulAgrees) {
  // Enough rows that BatchedGemm splits batches and row blocks across threads.
  ExpectAgree("bmk,bkn->bmn", {{3, 70, 33}, {3, 33, 20}}, {3, 70, 20}, 7);
  ExpectAgree("mk,kn->mn", {{200, 16}, {16, 9}}, {200, 9}, 8);
}

TEST(EinsumKernel, HandComputedMatMulOnBothPaths) {
  Tensor a = FloatTensor({2, 2}, {1, 2, 3, 4});
  Tensor b = FloatTensor({2, 2}, {5, 6, 7, 8});
  const Both r = RunBoth("ij,jk->ik", {&a, &b});
  testing_util::ExpectClose(r.fast, {2, 2}, {19, 22, 43, 50}, "fast");
  testing_util::ExpectClose(r.general, {2, 2}, {19, 22, 43, 50}, "general");
  const Both t = RunBoth("ij,jk->ki", {&a, &b});
  testing_util::ExpectClose(t.fast, {2, 2}, {19, 43, 22, 50}, "fast, transposed output");
  testing_util::ExpectClose(t.general, {2, 2}, {19, 43, 22, 50}, "general, transposed output");
}

TEST(EinsumKernel, DiagonalAndTrace) {
  Tensor x = FloatTensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Both d = RunBoth("ii->i", {&x});
  testing_util::ExpectClose(d.fast, {3}, {1, 5, 9}, "diagonal fast");
  testing_util::ExpectClose(d.general, {3}, {1, 5, 9}, "diagonal general");
  const Both tr = RunBoth("ii", {&x});
  testing_util::ExpectClose(tr.fast, {}, {15}, "trace fast");
  testing_util::ExpectClose(tr.general, {}, {15}, "trace general");
}

TEST(EinsumKernel, EllipsisBroadcastsLikeNumpy) {
  // A [2, 1, 2] (ellipsis dims [2, 1]) times B [3, 2] (ellipsis dims [3]) over the last label:
  // out[a, b] = sum_i A[a, 0, i] * B[b, i], shape [2, 3].
  Tensor a = FloatTensor({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = FloatTensor({3, 2}, {1, 0, 0, 1, 1, 1});
  const Both r = RunBoth("...i,...i->...", {&a, &b});
  testing_util::ExpectClose(r.fast, {2, 3}, {1, 2, 3, 3, 4, 7}, "fast");
  testing_util::ExpectClose(r.general, {2, 3}, {1, 2, 3, 3, 4, 7}, "general");
}

TEST(EinsumKernel, IntegersAreExactOnBothPaths) {
  Tensor a(onnx::TensorProto::INT32, {2, 3});
  Tensor b(onnx::TensorProto::INT32, {3, 2});
  for (int i = 0; i < 6; ++i) {
    a.mutable_data<int32_t>()[i] = i - 2;
    b.mutable_data<int32_t>()[i] = 3 * i + 1;
  }
  const Both r = RunBoth("ij,jk->ik", {&a, &b});
  const std::vector<int32_t> expected = {-2 * 1 + -1 * 7 + 0 * 13, -2 * 4 + -1 * 10 + 0 * 16,
                                         1 * 1 + 2 * 7 + 3 * 13, 1 * 4 + 2 * 10 + 3 * 16};
  for (const Tensor* t : {&r.fast, &r.general}) {
    ASSERT_EQ(t->shape(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(std::vector<int32_t>(t->data<int32_t>(), t->data<int32_t>() + 4), expected);
  }
}

TEST(EinsumKernel, RegisteredKernelRunsTheFastPath) {
  std::mt19937 rng(3);
  Tensor a = RandomFloats({2, 3, 4}, rng), b = RandomFloats({2, 4, 5}, rng);
  auto out = testing_util::RunOp(NodeBuilder("Einsum", 2).Str("equation", "bij, bjk -> bik").node(),
                                 12, {&a, &b});
  const Both r = RunBoth("bij,bjk->bik", {&a, &b});
  testing_util::ExpectClose(out[0], {2, 3, 5}, Values(r.general), "kernel");
}

// The message of the Error the prepare step throws for `equation` on `inputs` inputs.
std::string PrepareError(const std::string& equation, int inputs) {
  const PrepareFn* prepare = KernelRegistry::Default().FindPrepare("", "Einsum", 12);
  if (prepare == nullptr) return "no prepare step";
  const auto node = NodeBuilder("Einsum", inputs).Str("equation", equation).node();
  KernelContext ctx(node, 12, std::vector<const Tensor*>(inputs, nullptr));
  try {
    (*prepare)(ctx);
  } catch (const Error& e) {
    return e.kind() == ErrorKind::kBadInput ? e.what() : "wrong kind";
  }
  return "";
}

TEST(EinsumKernel, InvalidEquationsFailAtPlanTime) {
  for (const auto& [equation, inputs, why] : std::vector<std::tuple<std::string, int, std::string>>{
           {"ij,jk->ik", 1, "2 terms for 1 inputs"},
           {"ij", 2, "1 terms for 2 inputs"},
           {"i2->i", 1, "character '2'"},
           {"ij->ii", 1, "output label 'i' repeats"},
           {"ij->k", 1, "output label 'k' is in no input term"},
           {"i..j->ij", 1, "a '.' outside '...'"},
           {"...i...->i", 1, "two '...'"},
           {"ij->i->j", 1, "more than one '->'"},
       }) {
    const std::string message = PrepareError(equation, inputs);
    EXPECT_NE(message.find("Einsum_under_test"), std::string::npos) << equation << ": " << message;
    EXPECT_NE(message.find("attribute 'equation' value '" + equation + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find(why), std::string::npos) << equation << ": " << message;
  }
  EXPECT_EQ(PrepareError("bij , bjk -> bik", 2), "");  // whitespace is allowed
  // An attribute the op does not have, at plan time too.
  const PrepareFn* prepare = KernelRegistry::Default().FindPrepare("", "Einsum", 12);
  ASSERT_NE(prepare, nullptr);
  const auto node = NodeBuilder("Einsum", 1).Str("equation", "ii").Int("axis", 0).node();
  KernelContext ctx(node, 12, {nullptr});
  EXPECT_THROW((*prepare)(ctx), Error);
}

TEST(EinsumKernel, ShapeMismatchesFailNamingTheNode) {
  Tensor a = FloatTensor({2, 3}, std::vector<float>(6, 1));
  Tensor b = FloatTensor({4, 2}, std::vector<float>(8, 1));
  auto run = [&](const std::string& equation, std::vector<const Tensor*> inputs) {
    return testing_util::RunOp(
        NodeBuilder("Einsum", static_cast<int>(inputs.size())).Str("equation", equation).node(), 12,
        inputs);
  };
  EXPECT_THROW(run("ij,jk->ik", {&a, &b}), Error);  // j is 3 and 4
  EXPECT_THROW(run("ijk->i", {&a}), Error);         // rank 2, three labels
  EXPECT_THROW(run("ii->i", {&a}), Error);          // diagonal of a 2x3
  Tensor c = FloatTensor({2, 2, 3}, std::vector<float>(12, 1));
  // "..." covers a dim the explicit output drops: numpy rejects it too.
  try {
    run("...ij->ij", {&c});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no '...'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime
