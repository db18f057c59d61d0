// Softmax and LogSoftmax over short contiguous rows (fewer than 16 values: UltraFace's 4420
// two-class scores) take the path that runs the exp across rows: against a double-precision
// reference, and bit for bit the same at 1 and 2 threads (rows split anywhere between them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RunOp;

TEST(SoftmaxKernel, ShortRowsMatchDoublePrecisionAndEveryThreadCount) {
  std::mt19937 rng(7);
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    for (int64_t n : {1, 2, 3, 5, 15, 16, 17}) {
      SCOPED_TRACE(op + " n=" + std::to_string(n));
      const int64_t rows = 1237;
      Tensor x = testing_util::RandomFloats({1, rows, n}, rng);
      for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] *= 20.f;
      const onnx::NodeProto node = NodeBuilder(op, 1).Int("axis", -1).node();
      std::vector<Tensor> by_threads;
      for (int threads : {1, 2}) {
        SetNumThreads(threads);
        by_threads.push_back(RunOp(node, 13, {&x})[0]);
      }
      SetNumThreads(0);
      ASSERT_EQ(std::memcmp(by_threads[0].data<float>(), by_threads[1].data<float>(),
                            x.size() * sizeof(float)),
                0);
      const float* in = x.data<float>();
      const float* got = by_threads[0].data<float>();
      for (int64_t r = 0; r < rows; ++r) {
        double max = in[r * n], sum = 0;
        for (int64_t k = 0; k < n; ++k) max = std::max<double>(max, in[r * n + k]);
        for (int64_t k = 0; k < n; ++k) sum += std::exp(in[r * n + k] - max);
        for (int64_t k = 0; k < n; ++k) {
          const double want = op == "Softmax" ? std::exp(in[r * n + k] - max) / sum
                                              : in[r * n + k] - max - std::log(sum);
          ASSERT_NEAR(got[r * n + k], want, 2e-6 * std::max(1.0, std::abs(want)))
              << "row " << r << " value " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace porttool::runtime
