// MatMul (1-D promotion, batch broadcasting, the folded-batch path) and Gemm (transposes, alpha,
// beta, C broadcasting) against naive loops.
#include <gtest/gtest.h>

#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RandomFloats;
using testing_util::RunOp;

// numpy.matmul on float tensors, written out.
std::vector<float> NaiveMatMul(const Tensor& a, const Tensor& b, std::vector<int64_t>& shape) {
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  const bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  const size_t rank = std::max(as.size(), bs.size());
  while (as.size() < rank) as.insert(as.begin(), 1);
  while (bs.size() < rank) bs.insert(bs.begin(), 1);
  const int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
  std::vector<int64_t> batch;
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) {
    batch.push_back(std::max(as[i], bs[i]));
    batches *= batch.back();
  }
  shape = batch;
  if (!av) shape.push_back(m);
  if (!bv) shape.push_back(n);
  std::vector<float> y;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rem = bi, aoff = 0, boff = 0, astride = m * k, bstride = k * n;
    for (size_t i = batch.size(); i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      aoff += (as[i] == 1 ? 0 : idx) * astride;
      boff += (bs[i] == 1 ? 0 : idx) * bstride;
      astride *= as[i];
      bstride *= bs[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.data<float>()[aoff + i * k + p] * b.data<float>()[boff + p * n + j];
        y.push_back(static_cast<float>(acc));
      }
  }
  return y;
}

TEST(MatMulKernel, MatchesNumpySemanticsForBroadcastShapes) {
  std::mt19937 rng(21);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{3, 4}, {4, 5}},
      {{4}, {4, 5}},
      {{3, 4}, {4}},
      {{4}, {4}},
      {{2, 3, 4}, {4, 5}},
      {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {5, 4, 6}},
      {{1, 3, 4}, {7, 4, 2}},
      {{3, 2, 3, 4}, {4}},
      {{40, 64}, {64, 48}},
      {{5, 70, 8}, {8, 9}},
      {{0, 4}, {4, 3}}};
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (const auto& [as, bs] : cases) {
      Tensor a = RandomFloats(as, rng), b = RandomFloats(bs, rng);
      std::vector<int64_t> shape;
      auto expected = NaiveMatMul(a, b, shape);
      auto out = RunOp(NodeBuilder("MatMul", 2).node(), 13, {&a, &b});
      testing_util::ExpectClose(out[0], shape, expected, a.DebugString() + " @ " + b.DebugString());
    }
  }
  SetNumThreads(0);
}

TEST(MatMulKernel, IntegersAndMismatchedInnerDims) {
  Tensor a(onnx::TensorProto::INT64, {2, 2}), b(onnx::TensorProto::INT64, {2, 1});
  int64_t av[] = {1, 2, 3, 4}, bv[] = {5, 6};
  std::copy(av, av + 4, a.mutable_data<int64_t>());
  std::copy(bv, bv + 2, b.mutable_data<int64_t>());
  auto out = RunOp(NodeBuilder("MatMul", 2).node(), 13, {&a, &b});
  EXPECT_EQ(out[0].data<int64_t>()[0], 17);
  EXPECT_EQ(out[0].data<int64_t>()[1], 39);
  std::mt19937 rng(1);
  Tensor x = RandomFloats({2, 3}, rng), y = RandomFloats({4, 2}, rng);
  EXPECT_THROW(RunOp(NodeBuilder("MatMul", 2).node(), 13, {&x, &y}), Error);
}

// Gemm against a double-precision loop, with B as a run-time input and as a constant the kernel
// packs at plan time: both within float rounding of the loop and bitwise equal to each other
// (the packed path is used for alpha 1 only, so both alphas are covered; the one-row shape is
// hey_jarvis's layer, cut into column pieces).
TEST(GemmKernel, TransposesAlphaBetaAndBroadcastCWithAndWithoutPackedB) {
  std::mt19937 rng(22);
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& s : {Shape{37, 19, 23}, Shape{1, 300, 200}})
    for (const float alpha : {0.5f, 1.f})
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (const std::vector<int64_t>& cs :
               std::vector<std::vector<int64_t>>{{}, {s.n}, {1, s.n}, {s.m, 1}, {s.m, s.n}, {1}}) {
            const int64_t m = s.m, k = s.k, n = s.n;
            Tensor a =
                RandomFloats(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, rng);
            Tensor b =
                RandomFloats(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, rng);
            Tensor c = RandomFloats(cs, rng);
            const bool has_c = !cs.empty();
            std::vector<float> expected;
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double acc = 0;
                for (int64_t p = 0; p < k; ++p)
                  acc += a.data<float>()[ta ? p * m + i : i * k + p] *
                         b.data<float>()[tb ? j * k + p : p * n + j];
                double cv = 0;
                if (has_c) {
                  std::vector<int64_t> c2 = cs;
                  while (c2.size() < 2) c2.insert(c2.begin(), 1);
                  cv = c.data<float>()[(c2[0] == 1 ? 0 : i) * c2[1] + (c2[1] == 1 ? 0 : j)];
                }
                expected.push_back(static_cast<float>(alpha * acc + (has_c ? 2.0 * cv : 0)));
              }
            NodeBuilder node("Gemm", has_c ? 3 : 2);
            node.Int("transA", ta).Int("transB", tb).Float("alpha", alpha).Float("beta", 2.f);
            const std::string what = "m " + std::to_string(m) + " alpha " + std::to_string(alpha) +
                                     " transA " + std::to_string(ta) + " transB " +
                                     std::to_string(tb) + " C " + c.DebugString();
            auto out = RunOp(node.node(), 13, {&a, &b, has_c ? &c : nullptr});
            testing_util::ExpectClose(out[0], {m, n}, expected, what);
            bool packed = false;
            auto out_packed = testing_util::RunOpPrepared(
                node.node(), 13, {&a, &b, has_c ? &c : nullptr}, {false, true, false}, &packed);
            EXPECT_TRUE(packed) << what;
            ASSERT_EQ(out_packed[0].shape(), out[0].shape()) << what;
            for (int64_t i = 0; i < m * n; ++i) {
              ASSERT_EQ(out_packed[0].data<float>()[i], out[0].data<float>()[i])
                  << what << " element " << i;
            }
          }
}

// Double data takes its own loop (gemm.cc), not the float SGEMM: transposes, alpha and beta
// against a long-double reference, to double precision.
TEST(GemmKernel, DoubleDataKeepsDoublePrecision) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> dist(-1, 1);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t(onnx::TensorProto::DOUBLE, shape);
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<double>()[i] = dist(rng);
    return t;
  };
  const int64_t m = 9, k = 31, n = 17;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      Tensor a = random(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
      Tensor b = random(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
      Tensor c = random({m, n});
      NodeBuilder node("Gemm", 3);
      node.Int("transA", ta).Int("transB", tb).Float("alpha", 0.5f).Float("beta", 2.f);
      auto out = RunOp(node.node(), 13, {&a, &b, &c});
      ASSERT_EQ(out[0].dtype(), onnx::TensorProto::DOUBLE);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          long double acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            acc += static_cast<long double>(a.data<double>()[ta ? p * m + i : i * k + p]) *
                   b.data<double>()[tb ? j * k + p : p * n + j];
          }
          const long double expected = 0.5L * acc + 2.0L * c.data<double>()[i * n + j];
          EXPECT_NEAR(out[0].data<double>()[i * n + j], static_cast<double>(expected), 1e-13)
              << "transA " << ta << " transB " << tb << " at " << i << "," << j;
        }
      }
    }
  }
}

TEST(GemmKernel, RejectsBadShapesAndUnknownAttributes) {
  std::mt19937 rng(2);
  Tensor a = RandomFloats({2, 3}, rng), b = RandomFloats({3, 4}, rng), c = RandomFloats({3}, rng);
  EXPECT_THROW(RunOp(NodeBuilder("Gemm", 3).node(), 13, {&a, &b, &c}), Error);
  EXPECT_THROW(RunOp(NodeBuilder("Gemm", 2).Int("broadcast", 1).node(), 13, {&a, &b}), Error);
  EXPECT_THROW(RunOp(NodeBuilder("Gemm", 2).Int("transA", 1).node(), 13, {&a, &b}), Error);
}

}  // namespace
}  // namespace porttool::runtime
