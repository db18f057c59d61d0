// BatchNormalization, LayerNormalization (axis, broadcast Scale/B, Mean/InvStdDev outputs) and
// InstanceNormalization against direct formulas; training-mode rejection.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::NodeBuilder;
using testing_util::RandomFloats;
using testing_util::RunOp;

TEST(NormKernels, BatchNormalizationInference) {
  std::mt19937 rng(41);
  Tensor x = RandomFloats({2, 3, 4, 5}, rng), scale = RandomFloats({3}, rng),
         bias = RandomFloats({3}, rng), mean = RandomFloats({3}, rng);
  Tensor var = testing_util::FloatTensor({3}, {0.5f, 1.5f, 2.f});
  auto out = RunOp(NodeBuilder("BatchNormalization", 5).Float("epsilon", 1e-3f).node(), 15,
                   {&x, &scale, &bias, &mean, &var});
  std::vector<float> expected;
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t c = (i / 20) % 3;
    expected.push_back((x.data<float>()[i] - mean.data<float>()[c]) /
                           std::sqrt(var.data<float>()[c] + 1e-3f) * scale.data<float>()[c] +
                       bias.data<float>()[c]);
  }
  testing_util::ExpectClose(out[0], x.shape(), expected, "bn");
  EXPECT_THROW(RunOp(NodeBuilder("BatchNormalization", 5).Int("training_mode", 1).node(), 15,
                     {&x, &scale, &bias, &mean, &var}),
               Error);
  EXPECT_THROW(
      RunOp(NodeBuilder("BatchNormalization", 5, 3).node(), 14, {&x, &scale, &bias, &mean, &var}),
      Error);  // running statistics outputs are training-only
}

TEST(NormKernels, LayerNormalizationAxesAndStatistics) {
  std::mt19937 rng(42);
  Tensor x = RandomFloats({2, 3, 4}, rng);
  for (int64_t axis : {-1, 1, 0}) {
    const int a = static_cast<int>(axis < 0 ? axis + 3 : axis);
    std::vector<int64_t> norm_shape(x.shape().begin() + a, x.shape().end());
    Tensor scale = RandomFloats(norm_shape, rng);
    Tensor bias = RandomFloats({norm_shape.back()}, rng);  // broadcast along the last dim only
    int64_t inner = 1;
    for (int64_t d : norm_shape) inner *= d;
    std::vector<float> expected, means, invs;
    for (int64_t r = 0; r < x.size() / inner; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x.data<float>()[r * inner + i];
      mean /= inner;
      for (int64_t i = 0; i < inner; ++i) var += std::pow(x.data<float>()[r * inner + i] - mean, 2);
      const double inv = 1 / std::sqrt(var / inner + 1e-5);
      means.push_back(static_cast<float>(mean));
      invs.push_back(static_cast<float>(inv));
      for (int64_t i = 0; i < inner; ++i) {
        expected.push_back(static_cast<float>((x.data<float>()[r * inner + i] - mean) * inv *
                                                  scale.data<float>()[i] +
                                              bias.data<float>()[i % norm_shape.back()]));
      }
    }
    auto out = RunOp(NodeBuilder("LayerNormalization", 3, 3).Int("axis", axis).node(), 17,
                     {&x, &scale, &bias});
    const std::string what = "axis " + std::to_string(axis);
    testing_util::ExpectClose(out[0], x.shape(), expected, what);
    std::vector<int64_t> stat_shape = x.shape();
    for (int i = a; i < 3; ++i) stat_shape[i] = 1;
    testing_util::ExpectClose(out[1], stat_shape, means, what + " mean");
    testing_util::ExpectClose(out[2], stat_shape, invs, what + " inv_std_dev");
  }
}

TEST(NormKernels, InstanceNormalization) {
  std::mt19937 rng(43);
  Tensor x = RandomFloats({2, 3, 5}, rng), scale = RandomFloats({3}, rng),
         bias = RandomFloats({3}, rng);
  auto out = RunOp(NodeBuilder("InstanceNormalization", 3).Float("epsilon", 1e-2f).node(), 6,
                   {&x, &scale, &bias});
  std::vector<float> expected;
  for (int64_t p = 0; p < 6; ++p) {
    double mean = 0, var = 0;
    for (int i = 0; i < 5; ++i) mean += x.data<float>()[p * 5 + i] / 5.0;
    for (int i = 0; i < 5; ++i) var += std::pow(x.data<float>()[p * 5 + i] - mean, 2) / 5.0;
    for (int i = 0; i < 5; ++i)
      expected.push_back(static_cast<float>((x.data<float>()[p * 5 + i] - mean) /
                                                std::sqrt(var + 1e-2) * scale.data<float>()[p % 3] +
                                            bias.data<float>()[p % 3]));
  }
  testing_util::ExpectClose(out[0], x.shape(), expected, "instance norm");
}

}  // namespace
}  // namespace porttool::runtime
