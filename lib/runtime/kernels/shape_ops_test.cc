// Concat over inputs large enough to be copied by both threads in 64 KB blocks of the output:
// every element lands where the index formula puts it, at 1 and 2 threads, whatever the block
// boundaries cut (an input's row, an outer row, an empty input). The ONNX backend node tests
// cover the small cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/parallel.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RunOp;

TEST(ConcatKernel, LargeInputsLandWhereTheIndexFormulaPutsThemAtAnyThreadCount) {
  std::mt19937 rng(11);
  // [outer, axis sizes..., inner] on axis 1: det's four 24-channel maps (outer 1), rows of odd
  // byte sizes over several outer rows, and an empty input between two others.
  struct Case {
    int64_t outer, inner;
    std::vector<int64_t> sizes;
  };
  for (const Case& c : {Case{1, 160 * 160, {24, 24, 24, 24}}, Case{3, 1237, {5, 17, 1}},
                        Case{2, 9001, {3, 0, 4}}}) {
    std::vector<Tensor> inputs;
    int64_t total = 0;
    for (int64_t size : c.sizes) {
      inputs.push_back(testing_util::RandomFloats({c.outer, size, c.inner}, rng));
      total += size;
    }
    std::vector<float> expected;
    for (int64_t o = 0; o < c.outer; ++o) {
      for (const Tensor& t : inputs) {
        const int64_t row = t.dim(1) * c.inner;
        expected.insert(expected.end(), t.data<float>() + o * row, t.data<float>() + (o + 1) * row);
      }
    }
    std::vector<const Tensor*> operands;
    for (const Tensor& t : inputs) operands.push_back(&t);
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      auto out = RunOp(NodeBuilder("Concat", static_cast<int>(inputs.size())).Int("axis", 1).node(),
                       13, operands);
      ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{c.outer, total, c.inner}));
      EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].size()),
                expected)
          << fmt::format("outer {} inner {} at {} threads", c.outer, c.inner, threads);
    }
    SetNumThreads(0);
  }
}

}  // namespace
}  // namespace porttool::runtime
