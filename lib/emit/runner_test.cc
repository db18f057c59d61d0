// emit-runner's library side: the shipped C layout converters (compiled into this test as they
// are shipped) round-trip, int8 parameters cover their range, and a split that does not match
// its pipeline.json is refused with an error naming the file before anything is written.
#include "lib/emit/runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "lib/emit/demo_split_test_util.h"
#include "lib/emit/split_writer.h"
#include "lib/io/model.h"
#include "lib/ir/split.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

extern "C" {
#include "lib/emit/runner_c/pl_layout.c"  // NOLINT: the shipped C file under test
}

namespace porttool {
namespace {

namespace fs = std::filesystem;

struct LayoutCase {
  std::vector<int64_t> dims;  // NCHW
  int64_t c2;
  int64_t w_align;
};

class Nc1hwc2 : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(Nc1hwc2, PackUnpackRoundTripsAndPadsWithTheZeroPoint) {
  const auto& c = GetParam();
  int64_t n = c.dims[0] * c.dims[1] * c.dims[2] * c.dims[3];
  std::vector<int8_t> src(n), back(n, 0);
  std::iota(src.begin(), src.end(), int8_t{-100});
  int64_t stride = pl_w_stride(c.dims[3], c.w_align);
  size_t packed_n = pl_nc1hwc2_elems(c.dims.data(), c.c2, stride);
  int64_t c1 = (c.dims[1] + c.c2 - 1) / c.c2;
  ASSERT_EQ(packed_n, static_cast<size_t>(c.dims[0] * c1 * c.dims[2] * stride * c.c2));
  std::vector<int8_t> packed(packed_n, 99);
  pl_pack_nc1hwc2_i8(src.data(), c.dims.data(), c.c2, stride, -7, packed.data());
  pl_unpack_nc1hwc2_i8(packed.data(), c.dims.data(), c.c2, stride, back.data());
  EXPECT_EQ(src, back);
  // Element (n, c, h, w) sits at ((n*C1 + c/C2)*H + h)*stride*C2 + w*C2 + c%C2.
  int64_t C = c.dims[1], H = c.dims[2], W = c.dims[3];
  size_t pads = 0;
  for (int8_t v : packed) pads += v == -7;
  size_t want_pads = packed_n - static_cast<size_t>(n);
  EXPECT_GE(pads, want_pads);  // the iota data may contain -7 itself
  int64_t nn = c.dims[0] - 1, cc = C - 1, hh = H - 1, ww = W - 1;
  size_t at =
      static_cast<size_t>((((nn * c1 + cc / c.c2) * H + hh) * stride + ww) * c.c2 + cc % c.c2);
  EXPECT_EQ(packed[at], src[((nn * C + cc) * H + hh) * W + ww]);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Nc1hwc2,
                         ::testing::Values(LayoutCase{{1, 3, 4, 5}, 16, 1},
                                           LayoutCase{{2, 20, 3, 7}, 16, 1},
                                           LayoutCase{{1, 20, 3, 7}, 8, 4},
                                           LayoutCase{{1, 32, 2, 5}, 16, 16},
                                           LayoutCase{{1, 8, 1, 1}, 8, 8}));

TEST(FusedConversion, EqualsQuantizeThenPackAndDequantizesWithinHalfAStep) {
  const int64_t dims[4] = {1, 19, 3, 6};
  const int64_t stride = pl_w_stride(6, 8);
  std::vector<float> x(19 * 3 * 6);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2.5f, 4.0f);
  for (auto& v : x) v = u(rng);
  auto q = emit::QuantFromRange(-2.5f, 4.0f);
  std::vector<int8_t> qi(x.size()), packed_a(pl_nc1hwc2_elems(dims, 16, stride)),
      packed_b(packed_a.size());
  pl_quantize_i8(x.data(), x.size(), q.scale, q.zero_point, qi.data());
  pl_pack_nc1hwc2_i8(qi.data(), dims, 16, stride, pl_quantize1(0, q.scale, q.zero_point),
                     packed_a.data());
  pl_quantize_pack_nc1hwc2(x.data(), dims, 16, stride, q.scale, q.zero_point, packed_b.data());
  EXPECT_EQ(packed_a, packed_b);
  std::vector<float> back(x.size());
  pl_unpack_dequantize_nc1hwc2(packed_b.data(), dims, 16, stride, q.scale, q.zero_point,
                               back.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(back[i] - x[i]), q.scale / 2 * 1.001f);
}

TEST(NhwcTranspose, RoundTrips) {
  const int64_t dims[4] = {2, 3, 4, 5};
  std::vector<float> x(120), nhwc(120), back(120);
  std::iota(x.begin(), x.end(), 0.0f);
  pl_nchw_to_nhwc_f32(x.data(), dims, nhwc.data());
  EXPECT_EQ(nhwc[1], x[20]);  // (0,h0,w0,c1) is (0,c1,h0,w0)
  pl_nhwc_to_nchw_f32(nhwc.data(), dims, back.data());
  EXPECT_EQ(x, back);
}

TEST(QuantFromRange, CoversTheRangeAndZeroExactly) {
  auto q = emit::QuantFromRange(0.5f, 6.0f);  // widened to include 0
  EXPECT_NEAR(q.scale, 6.0f / 255, 1e-7);
  EXPECT_EQ(pl_quantize1(0.0f, q.scale, q.zero_point), q.zero_point);
  EXPECT_EQ(q.zero_point, -128);
  auto s = emit::QuantFromRange(-3.0f, 1.0f);
  EXPECT_EQ(pl_quantize1(-3.0f, s.scale, s.zero_point), -128);
  EXPECT_EQ(pl_quantize1(1.0f, s.scale, s.zero_point), 127);
}

using testing::WriteDemoSplit;

std::string EmitError(const fs::path& pipeline, const fs::path& out) {
  emit::RunnerRequest request;
  request.pipeline_json = pipeline;
  request.out_dir = out;
  try {
    emit::EmitRunner(request);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_FALSE(fs::exists(out)) << "a refused package must not be written";
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(EmitRunnerBadInput, MissingSegmentFileIsNamed) {
  testing::TempDir dir;
  auto pipeline = WriteDemoSplit(dir / "split");
  fs::remove(dir / "split" / "01_host.onnx");
  EXPECT_NE(EmitError(pipeline, dir / "pkg").find("01_host.onnx"), std::string::npos);
}

TEST(EmitRunnerBadInput, SegmentFileFromAnotherSplitIsNamed) {
  testing::TempDir dir;
  auto pipeline = WriteDemoSplit(dir / "split");
  fs::copy_file(dir / "split" / "00_accelerator.onnx", dir / "split" / "02_accelerator.onnx",
                fs::copy_options::overwrite_existing);
  std::string e = EmitError(pipeline, dir / "pkg");
  EXPECT_NE(e.find("02_accelerator.onnx"), std::string::npos) << e;
}

TEST(EmitRunnerBadInput, MalformedManifestNamesFileAndPointer) {
  testing::TempDir dir;
  auto pipeline = WriteDemoSplit(dir / "split");
  std::string text = testing::ReadFile(pipeline);
  text.replace(text.find("\"producer\": 0"), 13, "\"producer\": 9");
  testing::WriteFile(pipeline, text);
  std::string e = EmitError(pipeline, dir / "pkg");
  EXPECT_NE(e.find("pipeline.json"), std::string::npos) << e;
  EXPECT_NE(e.find("/bridges/0/producer"), std::string::npos) << e;
}

TEST(EmitRunner, PlansBridgesFromProducerToLastConsumer) {
  testing::TempDir dir;
  emit::RunnerRequest request;
  request.pipeline_json = WriteDemoSplit(dir / "split");
  request.out_dir = dir / "pkg";
  request.alignment = 128;
  auto r = emit::EmitRunner(request);
  ASSERT_EQ(r.arena.tensors.size(), 3u);
  EXPECT_FALSE(analysis::ValidatePlan(r.arena).has_value());
  // All three bridges are live during segment 1 (it reads block2.out while stem.out waits for
  // segment 2 and it writes gelu.out), so no reuse is possible: the arena is their sum.
  EXPECT_EQ(r.arena.arena_bytes, 65536u + 32768u + 32768u);
  for (const auto& t : r.arena.tensors) EXPECT_EQ(t.offset % 128, 0u);
  EXPECT_TRUE(fs::exists(dir / "pkg" / "pipeline.h"));
  EXPECT_NE(
      testing::ReadFile(dir / "pkg" / "pipeline.h").find("#define PIPELINE_ARENA_SIZE 131072u"),
      std::string::npos);
}

}  // namespace
}  // namespace porttool
