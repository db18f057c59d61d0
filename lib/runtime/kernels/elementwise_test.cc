// Broadcasting binary ops over tensors large enough to be split across threads: rows are cut
// into segments, so a tensor times a scalar (a single row) is split too. Each element must be
// computed once, from the right operands, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime::testing_util {
namespace {

// a - b with numpy broadcasting, for a of shape [rows, cols] and b of [1], [cols] or [rows, 1].
std::vector<float> NaiveSub(const Tensor& a, const Tensor& b, int64_t rows, int64_t cols) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t bi = b.size() == 1 ? 0 : (b.size() == cols ? c : r);
      out.push_back(a.data<float>()[r * cols + c] - b.data<float>()[bi]);
    }
  }
  return out;
}

TEST(Broadcast, LargeOperandsSplitAcrossThreadsMatchNaive) {
  std::mt19937 rng(9);
  const int64_t rows = 3, cols = 70001;  // several segments per row, the last one short
  const Tensor a = RandomFloats({rows, cols}, rng);
  const std::vector<std::vector<int64_t>> b_shapes = {{1}, {cols}, {rows, 1}};
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (const auto& shape : b_shapes) {
      const Tensor b = RandomFloats(shape, rng);
      auto out = RunOp(NodeBuilder("Sub", 2).node(), 14, {&a, &b});
      ExpectClose(
          out[0], {rows, cols}, NaiveSub(a, b, rows, cols),
          "threads " + std::to_string(threads) + " b of rank " + std::to_string(shape.size()), 0);
      // And the other operand order, where the scalar comes first.
      auto flipped = RunOp(NodeBuilder("Sub", 2).node(), 14, {&b, &a});
      std::vector<float> negated = NaiveSub(a, b, rows, cols);
      for (float& v : negated) v = -v;
      ExpectClose(flipped[0], {rows, cols}, negated, "flipped", 0);
      if (HasFatalFailure()) return;
    }
  }
  SetNumThreads(0);
}

}  // namespace
}  // namespace porttool::runtime::testing_util
