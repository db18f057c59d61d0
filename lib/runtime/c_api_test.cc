// The C API (include/porttool/runtime.h): same numbers as runtime::Session on caller-owned
// buffers, declared input/output info, and failures reported as a code plus a message naming the
// culprit instead of an exception crossing the C boundary.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "include/porttool/runtime.h"
#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

// A two-input model whose output depends on both inputs in an order-sensitive way.
constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3] a, float[2,3] b) => (float[2,3] y, float[3] m) {
  d = Sub(a, b)
  y = Mul(d, a)
  m = ReduceMax<axes = [0], keepdims = 0>(y)
}
)";

struct CApi : ::testing::Test {
  void SetUp() override {
    io::Model model = io::ParseText(kModel);
    path = dir / "m.onnx";
    testing::WriteFile(path, model.proto.SerializeAsString());
  }
  testing::TempDir dir;
  std::filesystem::path path;
};

pt_tensor Tensor(const char* name, float* data, std::vector<int64_t> dims) {
  pt_tensor t{};
  t.name = name;
  t.dtype = PT_FLOAT;
  t.rank = dims.size();
  for (size_t i = 0; i < dims.size(); ++i) t.dims[i] = dims[i];
  t.data = data;
  t.bytes = 6 * sizeof(float);
  return t;
}

TEST_F(CApi, RunsIntoCallerBuffersAndMatchesTheSession) {
  pt_session* s = nullptr;
  ASSERT_EQ(pt_session_create(path.c_str(), nullptr, &s), PT_OK) << pt_last_error();
  ASSERT_EQ(pt_session_input_count(s), 2u);
  ASSERT_EQ(pt_session_output_count(s), 2u);
  pt_tensor_info info;
  ASSERT_EQ(pt_session_output_info(s, 1, &info), PT_OK);
  EXPECT_STREQ(info.name, "m");
  EXPECT_EQ(info.rank, 1u);
  EXPECT_EQ(info.dims[0], 3);

  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {6, 5, 4, 3, 2, 1}, y[6] = {}, m[3] = {};
  // Inputs by name in reverse order; outputs by position, "m" first by name.
  pt_tensor in[2] = {Tensor("b", b, {2, 3}), Tensor("a", a, {2, 3})};
  pt_tensor out[2] = {Tensor("m", m, {}), Tensor("y", y, {})};
  out[0].bytes = sizeof m;
  ASSERT_EQ(pt_session_run(s, in, 2, out, 2), PT_OK) << pt_last_error();

  io::Model model = io::Load(path);
  runtime::Session session(model);
  runtime::TensorMap inputs;
  runtime::Tensor ta(PT_FLOAT, {2, 3}), tb(PT_FLOAT, {2, 3});
  std::memcpy(ta.mutable_raw(), a, sizeof a);
  std::memcpy(tb.mutable_raw(), b, sizeof b);
  inputs["a"] = ta;
  inputs["b"] = tb;
  auto expected = session.Run(inputs);
  EXPECT_EQ(std::memcmp(y, expected[0].value.raw(), sizeof y), 0);
  EXPECT_EQ(std::memcmp(m, expected[1].value.raw(), sizeof m), 0);
  EXPECT_EQ(out[0].rank, 1u);
  EXPECT_EQ(out[0].dims[0], 3);
  EXPECT_EQ(out[1].dtype, PT_FLOAT);
  // Inputs are read in place and left alone.
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(b[5], 1);
  pt_session_free(s);
}

// Thread counts are per session: the second session created does not change the first's (the C
// API used to apply each session's count to the whole process), and both compute the same.
TEST_F(CApi, TwoSessionsWithDifferentThreadCountsKeepTheirOwn) {
  pt_session_options one_thread, two_threads;
  pt_session_options_init(&one_thread);
  pt_session_options_init(&two_threads);
  one_thread.threads = 1;
  two_threads.threads = 2;
  pt_session *a = nullptr, *b = nullptr;
  ASSERT_EQ(pt_session_create(path.c_str(), &one_thread, &a), PT_OK) << pt_last_error();
  ASSERT_EQ(pt_session_create(path.c_str(), &two_threads, &b), PT_OK) << pt_last_error();
  EXPECT_EQ(pt_session_threads(a), 1);
  EXPECT_EQ(pt_session_threads(b), 2);
  float x[6] = {1, 2, 3, 4, 5, 6}, z[6] = {6, 5, 4, 3, 2, 1};
  float ya[6] = {}, ma[3] = {}, yb[6] = {}, mb[3] = {};
  pt_tensor in[2] = {Tensor("a", x, {2, 3}), Tensor("b", z, {2, 3})};
  pt_tensor out_a[2] = {Tensor("y", ya, {}), Tensor("m", ma, {})};
  pt_tensor out_b[2] = {Tensor("y", yb, {}), Tensor("m", mb, {})};
  out_a[1].bytes = out_b[1].bytes = sizeof ma;
  ASSERT_EQ(pt_session_run(b, in, 2, out_b, 2), PT_OK) << pt_last_error();
  ASSERT_EQ(pt_session_run(a, in, 2, out_a, 2), PT_OK) << pt_last_error();
  EXPECT_EQ(std::memcmp(ya, yb, sizeof ya), 0);
  EXPECT_EQ(std::memcmp(ma, mb, sizeof ma), 0);
  EXPECT_EQ(pt_session_threads(a), 1);
  pt_session_free(a);
  pt_session_free(b);
}

// The executor writes outputs straight into the caller's memory when the producing kernel
// allocates them (no output allocation, no copy), including an output other nodes still read.
TEST_F(CApi, OutputsAreProducedInCallerMemory) {
  io::Model model = io::Load(path);
  runtime::Session session(model);
  runtime::TensorMap inputs;
  runtime::Tensor ta(PT_FLOAT, {2, 3}), tb(PT_FLOAT, {2, 3});
  for (int i = 0; i < 6; ++i) {
    ta.mutable_data<float>()[i] = static_cast<float>(i + 1);
    tb.mutable_data<float>()[i] = static_cast<float>(6 - i);
  }
  inputs["a"] = ta;
  inputs["b"] = tb;
  auto expected = session.Run(inputs);
  alignas(64) float y[6] = {}, m[3] = {};
  auto results = session.RunInto(inputs, {{"y", {y, sizeof y}}, {"m", {m, sizeof m}}});
  EXPECT_EQ(results[0].value.raw(), static_cast<void*>(y));
  EXPECT_EQ(results[1].value.raw(), static_cast<void*>(m));
  EXPECT_EQ(std::memcmp(y, expected[0].value.raw(), sizeof y), 0);
  EXPECT_EQ(std::memcmp(m, expected[1].value.raw(), sizeof m), 0);
}

// When another output of the same node takes the buffer (same size and type), it gets its own
// copy and the bound output still arrives in the buffer with its own values.
TEST(CApiBuffers, SiblingOutputOfTheSameSizeDoesNotKeepTheCallerBuffer) {
  testing::TempDir dir;
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[2] lo, float[2] hi) { lo, hi = Split<axis = 0>(x) })");
  auto path = dir / "split.onnx";
  testing::WriteFile(path, model.proto.SerializeAsString());
  runtime::Session session(model);
  runtime::Tensor x(PT_FLOAT, {4});
  for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = static_cast<float>(i + 1);
  float hi[2] = {};
  auto results = session.RunInto({{"x", x}}, {{"hi", {hi, sizeof hi}}});
  EXPECT_NE(results[0].value.raw(), static_cast<void*>(hi));
  EXPECT_EQ(results[0].value.data<float>()[0], 1);
  EXPECT_EQ(results[1].value.data<float>()[1], 4);

  pt_session* s = nullptr;
  ASSERT_EQ(pt_session_create(path.c_str(), nullptr, &s), PT_OK) << pt_last_error();
  float xs[4] = {1, 2, 3, 4}, out_hi[2] = {};
  pt_tensor in = Tensor("x", xs, {4});
  in.bytes = sizeof xs;
  pt_tensor out = Tensor("hi", out_hi, {});
  out.bytes = sizeof out_hi;
  ASSERT_EQ(pt_session_run(s, &in, 1, &out, 1), PT_OK) << pt_last_error();
  EXPECT_EQ(out_hi[0], 3);
  EXPECT_EQ(out_hi[1], 4);
  pt_session_free(s);
}

TEST_F(CApi, FailuresAreCodesWithMessagesNamingTheCulprit) {
  pt_session* s = nullptr;
  EXPECT_EQ(pt_session_create((dir / "missing.onnx").c_str(), nullptr, &s), PT_ERR_BAD_INPUT);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(pt_last_error()).find("missing.onnx"), std::string::npos);
  EXPECT_EQ(pt_last_error_code(), PT_ERR_BAD_INPUT);

  ASSERT_EQ(pt_session_create(path.c_str(), nullptr, &s), PT_OK);
  float a[6] = {}, b[6] = {}, y[6] = {};
  pt_tensor in[2] = {Tensor("a", a, {2, 3}), Tensor("b", b, {3, 2})};
  pt_tensor out[1] = {Tensor("y", y, {})};
  EXPECT_EQ(pt_session_run(s, in, 2, out, 1), PT_ERR_BAD_INPUT);
  EXPECT_NE(std::string(pt_last_error()).find("'b'"), std::string::npos) << pt_last_error();

  in[1] = Tensor("b", b, {2, 3});
  out[0].bytes = 8;  // too small for float[2,3]
  EXPECT_EQ(pt_session_run(s, in, 2, out, 1), PT_ERR_USAGE);
  EXPECT_NE(std::string(pt_last_error()).find("'y'"), std::string::npos) << pt_last_error();

  in[0].name = "nope";
  EXPECT_EQ(pt_session_run(s, in, 2, out, 1), PT_ERR_USAGE);
  EXPECT_NE(std::string(pt_last_error()).find("nope"), std::string::npos);

  pt_tensor_info info;
  EXPECT_EQ(pt_session_input_info(s, 7, &info), PT_ERR_USAGE);
  pt_session_free(s);
}

}  // namespace
}  // namespace porttool
