// Casts to the narrow float types the executor holds as float32 (float16, bfloat16): the result
// must be rounded to what the declared type can represent, also for CastLike, whose target type
// only the model's declaration knows (its float16/bfloat16 input arrives as float32).
#include <gtest/gtest.h>

#include <cstring>

#include "lib/io/model.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"

namespace porttool::runtime::testing_util {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// 1 + 3/4 of bfloat16's last place: truncation gives 1, rounding would give 1 + 2^-7.
const float kBetweenBf16Steps = 1.0f + 0.75f / 128;

std::vector<float> RunOneOutput(const std::string& text, TensorMap inputs) {
  io::Model model = io::ParseText(text);
  Session session(model);
  auto outputs = session.Run(inputs);
  const Tensor& y = outputs.at(0).value;
  EXPECT_EQ(y.dtype(), onnx::TensorProto::FLOAT);
  return {y.data<float>(), y.data<float>() + y.size()};
}

TEST(Cast, ToBFloat16DropsTheLowHalfAndKeepsNaN) {
  auto y = RunOneOutput(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (bfloat16[4] y) {
  y = Cast <to = 16> (x)
}
)",
                        {{"x", FloatTensor({4}, {kBetweenBf16Steps, -kBetweenBf16Steps,
                                                 FromBits(0x7f800001u), 3.0f})}});
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_TRUE(std::isnan(y[2]));  // a NaN whose payload is in the low half is not infinity
  EXPECT_EQ(y[3], 3.0f);
}

TEST(Cast, CastLikeRoundsToTheDeclaredNarrowTypeOfItsTarget) {
  const Tensor x = FloatTensor({2}, {kBetweenBf16Steps, 1.0f + 1.0f / 4096});
  auto bf16 = RunOneOutput(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, bfloat16[1] like) => (bfloat16[2] y) {
  y = CastLike (x, like)
}
)",
                           {{"x", x}, {"like", FloatTensor({1}, {0})}});
  EXPECT_EQ(bf16[0], 1.0f);
  EXPECT_EQ(bf16[1], 1.0f);
  auto half = RunOneOutput(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, float16[1] like) => (float16[2] y) {
  y = CastLike (x, like)
}
)",
                           {{"x", FloatTensor({2}, {1.0f + 3.0f / 4096, 1.0f + 1.0f / 4096})},
                            {"like", FloatTensor({1}, {0})}});
  EXPECT_EQ(half[0], 1.0f + 1.0f / 1024);  // float16 rounds to nearest: 3/4 of its last place up
  EXPECT_EQ(half[1], 1.0f);                // and 1/4 of it down
}

TEST(Cast, BFloat16DataIsReadAsTheFloatsItHolds) {
  onnx::TensorProto proto;
  proto.set_name("b");
  proto.set_data_type(onnx::TensorProto::BFLOAT16);
  proto.add_dims(2);
  const uint16_t bits[2] = {0x3f81, 0xc040};  // 1.0078125, -3
  proto.set_raw_data(bits, sizeof bits);
  Tensor t = TensorFromProto(proto);
  ASSERT_EQ(t.dtype(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(t.data<float>()[0], 1.0078125f);
  EXPECT_EQ(t.data<float>()[1], -3.0f);
}

}  // namespace
}  // namespace porttool::runtime::testing_util
