// Known input values: the input becomes an initializer of its declared type and shape and leaves
// the graph inputs; a name, a number, a count or a file that does not fit is a usage error naming
// the input and what it is.
#include "lib/shape/input_values.h"

#include <gtest/gtest.h>

#include "lib/util/error.h"

namespace porttool::shape {
namespace {

io::Model Model() {
  return io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] audio, int64 sr, float[3] window, int64[N] ids, uint8 flag, float[2,M,K] two)
      => (float[1,4] y) { y = Identity(audio) })");
}

InputValue Numbers(std::vector<InputNumber> numbers) {
  InputValue v;
  v.numbers = std::move(numbers);
  return v;
}

const onnx::TensorProto* Initializer(const io::Model& m, const std::string& name) {
  for (const auto& t : m.proto.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

bool IsInput(const io::Model& m, const std::string& name) {
  for (const auto& vi : m.proto.graph().input()) {
    if (vi.name() == name) return true;
  }
  return false;
}

// The usage error ApplyInputValues throws, or "" when it does not.
std::string UsageError(const InputValues& values) {
  io::Model m = Model();
  try {
    ApplyInputValues(m, values);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e.what();
  }
  return "";
}

TEST(InputValues, ScalarBecomesARankZeroInitializerOfTheInputsType) {
  io::Model m = Model();
  ApplyInputValues(m, {{"sr", Numbers({int64_t{16000}})}});
  const auto* t = Initializer(m, "sr");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->data_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(t->dims_size(), 0);
  ASSERT_EQ(t->int64_data_size(), 1);
  EXPECT_EQ(t->int64_data(0), 16000);
  EXPECT_FALSE(IsInput(m, "sr"));
  EXPECT_TRUE(IsInput(m, "audio"));
}

TEST(InputValues, ListsTakeTheDeclaredShapeOrFillItsUnknownDim) {
  io::Model m = Model();
  ApplyInputValues(m, {{"window", Numbers({0.25, int64_t{1}, 0.5})},
                       {"ids", Numbers({int64_t{7}, int64_t{8}})},
                       {"flag", Numbers({int64_t{255}})}});
  const auto* w = Initializer(m, "window");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(std::vector<int64_t>(w->dims().begin(), w->dims().end()), std::vector<int64_t>{3});
  EXPECT_EQ(std::vector<float>(w->float_data().begin(), w->float_data().end()),
            (std::vector<float>{0.25f, 1.0f, 0.5f}));
  const auto* ids = Initializer(m, "ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(std::vector<int64_t>(ids->dims().begin(), ids->dims().end()), std::vector<int64_t>{2});
  EXPECT_EQ(Initializer(m, "flag")->int32_data(0), 255);
  EXPECT_EQ(InputValuesText(
                {{"ids", Numbers({int64_t{7}, int64_t{8}})}, {"sr", Numbers({int64_t{16000}})}}),
            "ids=7,8, sr=16000");
}

TEST(InputValues, WhatDoesNotFitIsAUsageErrorNamingTheInput) {
  std::string e = UsageError({{"rate", Numbers({int64_t{16000}})}});
  EXPECT_NE(e.find("'rate' is not a graph input; the inputs are: audio float32 1x4, sr int64 "
                   "scalar"),
            std::string::npos)
      << e;
  e = UsageError({{"sr", Numbers({0.5})}});
  EXPECT_NE(e.find("'sr' is int64, which cannot hold 0.5"), std::string::npos) << e;
  e = UsageError({{"flag", Numbers({int64_t{300}})}});
  EXPECT_NE(e.find("'flag' is uint8, which cannot hold 300 (from 0 to 255)"), std::string::npos)
      << e;
  e = UsageError({{"window", Numbers({int64_t{1}, int64_t{2}})}});
  EXPECT_NE(e.find("'window' is [3] in the model; 2 value(s) were given"), std::string::npos) << e;
  e = UsageError({{"sr", Numbers({int64_t{1}, int64_t{2}})}});
  EXPECT_NE(e.find("'sr' is a scalar in the model; 2 value(s) were given"), std::string::npos) << e;
  e = UsageError({{"two", Numbers({int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}})}});
  EXPECT_NE(e.find("with several unknown dims, give a .npy file"), std::string::npos) << e;
  // 16000.0 is the integer 16000: the type decides, not how it was written.
  EXPECT_EQ(UsageError({{"sr", Numbers({16000.0})}}), "");
}

TEST(InputValues, AFilesTypeAndDimsMustMatchTheDeclaration) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT32);
  t.add_int32_data(16000);
  InputValue v;
  v.tensor = t;
  std::string e = UsageError({{"sr", v}});
  EXPECT_NE(e.find("'sr' is int64 in the model; the file holds int32"), std::string::npos) << e;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.clear_int32_data();
  for (int i = 0; i < 4; ++i) t.add_float_data(1.0f);
  t.add_dims(4);
  v.tensor = t;
  e = UsageError({{"window", v}});
  EXPECT_NE(e.find("'window' is [3] in the model; the file holds [4]"), std::string::npos) << e;
}

TEST(InputValues, RangesMustNameAnInputWithoutAValue) {
  io::Model m = Model();
  EXPECT_NO_THROW(CheckInputRanges(m, {{"sr", {8000, 16000}}}));
  auto message = [&](const InputRanges& r, const InputValues& v) -> std::string {
    try {
      CheckInputRanges(m, r, v);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"rate", {0, 1}}}, {}).find("'rate' is not a graph input"), std::string::npos);
  EXPECT_NE(message({{"sr", {2, 1}}}, {}).find("expected finite LO <= HI, got 2:1"),
            std::string::npos);
  EXPECT_NE(
      message({{"sr", {0, 1}}}, {{"sr", Numbers({int64_t{1}})}}).find("'sr' is also given a value"),
      std::string::npos);
}

}  // namespace
}  // namespace porttool::shape
