// porttool's own GEMM (sgemm.h) against a double-precision reference over odd shapes, every
// transpose and alpha/beta, and bitwise the same however C is split (the property that makes
// outputs the same at any thread count), and through the MatMul kernel at 1 and 2 threads.
#include "lib/runtime/kernels/sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lib/runtime/execution.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime::kernels {
namespace {

std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& f : v) f = u(rng);
  return v;
}

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

// Checks Sgemm against sum_k in double; the bound is the forward error of a k-term float sum.
void ExpectNearReference(const Case& t) {
  const int64_t lda = t.ta ? t.m : t.k, ldb = t.tb ? t.k : t.n, ldc = t.n + 3;
  const auto a = RandomValues(t.m * t.k, 1), b = RandomValues(t.k * t.n, 2);
  auto c = RandomValues(t.m * ldc, 3);
  const auto c0 = c;
  Sgemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb, t.beta, c.data(), ldc);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < t.k; ++p) {
        const double x = t.ta ? a[p * lda + i] : a[i * lda + p];
        const double y = t.tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += x * y;
        magnitude += std::abs(x * y);
      }
      const double ref = t.alpha * sum + (t.beta == 0 ? 0.0 : t.beta * c0[i * ldc + j]);
      const double bound = 1e-7 * (t.k + 2) * (std::abs(t.alpha) * magnitude + 1.0);
      ASSERT_NEAR(c[i * ldc + j], ref, bound)
          << "m " << t.m << " n " << t.n << " k " << t.k << " ta " << t.ta << " tb " << t.tb
          << " at (" << i << ", " << j << ")";
    }
  }
}

TEST(Sgemm, MatchesADoubleReferenceOverOddShapes) {
  const int64_t sizes[] = {1, 7, 63, 65, 1000};
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        if (m * n * k > 5'000'000) continue;
        for (int flags = 0; flags < 4; ++flags) {
          ExpectNearReference({m, n, k, (flags & 1) != 0, (flags & 2) != 0, 1.f, 0.f});
        }
      }
  // Every count of rows a micro-tile can be left with (each has its own instantiation).
  for (int64_t m = 2; m <= 12; ++m) ExpectNearReference({m, 65, 63, false, false, 1.f, 0.f});
  ExpectNearReference({65, 63, 300, false, false, 0.5f, 2.f});  // two depth blocks, beta
  ExpectNearReference({7, 1000, 513, true, true, -1.5f, 1.f});
}

TEST(Sgemm, ZeroDepthScalesCByBeta) {
  std::vector<float> c = {1, 2, 3, 4};
  Sgemm(false, false, 2, 2, 0, 1.f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
}

// Row blocks, column blocks or the whole: every element gets the same bits, with B packed (depth
// 530) and read in place (depth 40, where pieces move the boundary between in-place panels and
// the packed partial one).
TEST(Sgemm, SplittingCGivesTheSameBits) {
  for (const int64_t k : {530, 40}) {
    const int64_t m = 97, n = 1100;
    const auto a = RandomValues(m * k, 4), b = RandomValues(k * n, 5);
    std::vector<float> whole(m * n), split(m * n);
    Sgemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, whole.data(), n);
    for (int64_t r0 = 0; r0 < m; r0 += 13) {
      for (int64_t c0 = 0; c0 < n; c0 += 77) {
        const int64_t r = std::min<int64_t>(13, m - r0), w = std::min<int64_t>(77, n - c0);
        Sgemm(false, false, r, w, k, 1.f, a.data() + r0 * k, k, b.data() + c0, n, 0.f,
              split.data() + r0 * n + c0, n);
      }
    }
    EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)), 0)
        << "depth " << k;
    // Both operands packed once, C in aligned pieces (12 rows, 80 columns), as MatMul's column
    // pieces over a constant B run it.
    const PackedA pa = PackMatrixA(false, m, k, a.data(), k);
    const PackedB pb = PackMatrixB(false, k, n, b.data(), n);
    std::vector<float> packed(m * n);
    for (int64_t r0 = 0; r0 < m; r0 += 12) {
      for (int64_t c0 = 0; c0 < n; c0 += 80) {
        const int64_t r = std::min<int64_t>(12, m - r0), w = std::min<int64_t>(80, n - c0);
        SgemmPackedAB(pa, r0, r, pb, c0, w, 0.f, packed.data() + r0 * n + c0, n);
      }
    }
    EXPECT_EQ(std::memcmp(whole.data(), packed.data(), whole.size() * sizeof(float)), 0)
        << "packed A and B, depth " << k;
  }
}

// The MatMul kernel splits its rows across the pool: the same bits at 1 and 2 threads.
TEST(Sgemm, MatMulIsBitwiseTheSameAtOneAndTwoThreads) {
  const int64_t m = 1000, k = 65, n = 63;
  const auto a = RandomValues(m * k, 6), b = RandomValues(k * n, 7);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2}) {
    ScopedExecution scope({.threads = threads});
    Tensor ta(onnx::TensorProto::FLOAT, {m, k}), tb(onnx::TensorProto::FLOAT, {k, n});
    std::copy(a.begin(), a.end(), ta.mutable_data<float>());
    std::copy(b.begin(), b.end(), tb.mutable_data<float>());
    const Tensor y =
        testing_util::RunOp(testing_util::NodeBuilder("MatMul", 2).node(), 13, {&ta, &tb})[0];
    results.emplace_back(y.data<float>(), y.data<float>() + y.size());
  }
  EXPECT_EQ(results[0], results[1]);
}

// A constant B packed at plan time (PrepareMatMul) gives the bits of the unpacked product, in
// column pieces at 1 and 2 threads.
TEST(Sgemm, MatMulWithPackedWeightsIsBitwiseTheUnpackedOne) {
  const int64_t m = 70, k = 300, n = 1000;
  const auto a = RandomValues(m * k, 8), b = RandomValues(k * n, 9);
  Tensor ta(onnx::TensorProto::FLOAT, {m, k}), tb(onnx::TensorProto::FLOAT, {k, n});
  std::copy(a.begin(), a.end(), ta.mutable_data<float>());
  std::copy(b.begin(), b.end(), tb.mutable_data<float>());
  const auto node = testing_util::NodeBuilder("MatMul", 2).node();
  for (int threads : {1, 2}) {
    ScopedExecution scope({.threads = threads});
    bool packed = false;
    const Tensor with =
        testing_util::RunOpPrepared(node, 13, {&ta, &tb}, {false, true}, &packed)[0];
    const Tensor without = testing_util::RunOp(node, 13, {&ta, &tb})[0];
    EXPECT_TRUE(packed);
    ASSERT_EQ(with.size(), without.size());
    EXPECT_EQ(std::memcmp(with.raw(), without.raw(), with.size() * sizeof(float)), 0)
        << threads << " thread(s)";
  }
}

}  // namespace
}  // namespace porttool::runtime::kernels
