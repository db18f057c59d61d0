// Concat over inputs large enough to be copied by both threads in 64 KB blocks of the output:
// every element lands where the index formula puts it, at 1 and 2 threads, whatever the block
// boundaries cut (an input's row, an outer row, an empty input). The ONNX backend node tests
// cover the small cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
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

// The input coordinate an output coordinate reads along one axis, straight from the ONNX Pad
// definition (-1: the constant), computed per element: the oracle for the run-based kernel.
int64_t PadSource(int64_t o, int64_t before, int64_t dim, const std::string& mode) {
  int64_t i = o - before;
  if (i >= 0 && i < dim) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : dim - 1;
  while (i < 0 || i >= dim) i = i < 0 ? -i : 2 * (dim - 1) - i;  // reflect
  return i;
}

// Pad copies runs of rows now (M-LSD's NHWC pads): every mode, negative pads (a crop), padding on
// the leading, middle and last axes, and no padding at all, element by element against the
// definition.
TEST(PadKernel, RunsMatchTheDefinitionElementByElement) {
  std::mt19937 rng(5);
  struct Case {
    std::vector<int64_t> shape, pads;
    std::string mode;
  };
  const std::vector<Case> cases = {
      {{1, 20, 20, 32}, {0, 1, 1, 0, 0, 2, 2, 0}, "constant"},  // NHWC, tf2onnx
      {{1, 3, 9, 7}, {0, 0, 3, 2, 0, 0, 1, 4}, "reflect"},
      {{2, 3, 5, 4}, {1, 0, 2, 1, 0, 2, 0, 3}, "edge"},
      {{2, 6, 5}, {0, -2, 1, 0, -1, 1}, "constant"},  // crop the middle axis, pad the last
      {{11}, {4, 3}, "reflect"},
      {{3, 4, 5}, {2, 0, 0, 1, 0, 0}, "constant"},  // only the leading axis
      {{3, 4, 5}, {0, 0, 0, 0, 0, 0}, "edge"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("shape [{}] pads [{}] {}", fmt::join(c.shape, ","),
                             fmt::join(c.pads, ","), c.mode));
    Tensor x = testing_util::RandomFloats(c.shape, rng);
    Tensor pads(onnx::TensorProto::INT64, {static_cast<int64_t>(c.pads.size())});
    std::copy(c.pads.begin(), c.pads.end(), pads.mutable_data<int64_t>());
    Tensor value(onnx::TensorProto::FLOAT, {});
    *value.mutable_data<float>() = 7.5f;
    auto out = RunOp(NodeBuilder("Pad", 3).Str("mode", c.mode).node(), 13, {&x, &pads, &value});
    const int rank = static_cast<int>(c.shape.size());
    std::vector<int64_t> shape(rank);
    for (int d = 0; d < rank; ++d) shape[d] = c.shape[d] + c.pads[d] + c.pads[d + rank];
    ASSERT_EQ(out[0].shape(), shape);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < out[0].size(); ++o) {
      int64_t offset = 0;
      bool inside = true;
      for (int d = 0; d < rank; ++d) {
        const int64_t i = PadSource(idx[d], c.pads[d], c.shape[d], c.mode);
        inside = inside && i >= 0;
        offset = offset * c.shape[d] + std::max<int64_t>(i, 0);
      }
      const float want = inside ? x.data<float>()[offset] : 7.5f;
      ASSERT_EQ(out[0].data<float>()[o], want) << "output element " << o;
      for (int d = rank; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  }
}

}  // namespace
}  // namespace porttool::runtime
