// `porttool emit-runner` end to end: split, generate, build the package with -Wall -Wextra
// -Werror, run it, and compare with porttool's executor on the unsplit model (the oracle for
// float bridges) or, with a fake NPU, with each producing segment re-run on the runner's own
// inputs (each int8 bridge within half a quantization step). Bad inputs to the generated runner
// are errors naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

std::string PkgConfig() {
  const char* dir = std::getenv("PORTTOOL_PKG_CONFIG_PATH");
  return std::string("PKG_CONFIG_PATH=") + (dir ? dir : "");
}

// Builds with the package's own CMakeLists.txt; returns the runner binary.
fs::path BuildWithCMake(const fs::path& pkg) {
  auto r = RunShell(PkgConfig() + " cmake -S " + pkg.string() + " -B " + (pkg / "build").string() +
                    " -DCMAKE_BUILD_TYPE=Release '-DCMAKE_C_FLAGS=-Wall -Wextra -Werror' && "
                    "cmake --build " +
                    (pkg / "build").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return pkg / "build" / "runner";
}

// The same flags with one compiler call (faster than a CMake configure).
fs::path BuildWithCc(const fs::path& pkg) {
  std::string custom = fs::exists(pkg / "custom_op") ? (pkg / "custom_op").string() + "/*.c" : "";
  auto r =
      RunShell("cc -std=c99 -O2 -Wall -Wextra -Werror -I" + pkg.string() + " " + pkg.string() +
               "/*.c " + custom + " $(" + PkgConfig() +
               " pkg-config --cflags --libs porttool-runtime) -lm -o " + (pkg / "runner").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return pkg / "runner";
}

runtime::Tensor RandomInput(std::vector<int64_t> dims, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return runtime::RandomTensor({"x", 1, dims, true}, rng);
}

float MaxAbs(const runtime::Tensor& a, const runtime::Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float m = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

struct DemoSplit {
  TempDir dir;
  fs::path split = dir / "split";
  fs::path input = dir / "images.npy";
  fs::path reference = dir / "ref";
  DemoSplit() {
    auto r = RunPorttool("split " + testing::DemoArg() +
                         " --at Custom_GELU_0 --input-shape images:1x3x64x64 -o " + split.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    runtime::WriteNpy(input, RandomInput({1, 3, 64, 64}, 5));
    r = RunPorttool("run " + testing::DemoArg() +
                    " --input-shape images:1x3x64x64 --input images=" + input.string() +
                    " --output-dir " + reference.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  fs::path Emit(const std::string& name, const std::string& args, std::string* json = nullptr) {
    auto r = RunPorttool("emit-runner " + (split / "pipeline.json").string() + " -o " +
                         (dir / name).string() + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (json) *json = r.out;
    return dir / name;
  }
};

TEST(EmitRunner, DemoReferenceBackendReproducesTheUnsplitModel) {
  DemoSplit demo;
  fs::path pkg = demo.Emit("pkg", "");
  fs::path runner = BuildWithCMake(pkg);
  auto r = RunShell(runner.string() + " --input images=" + demo.input.string() + " --output-dir " +
                    demo.dir.path().string() + " --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("arena: 131072 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("segment 1 01_host.onnx"), std::string::npos) << r.out;
  EXPECT_LE(MaxAbs(runtime::ReadNpy(demo.dir / "score.npy"),
                   runtime::ReadNpy(demo.reference / "score.npy")),
            1e-5f);
}

TEST(EmitRunner, FakeNpuBridgesAreWithinHalfAStepOfTheirProducer) {
  DemoSplit demo;
  std::string out;
  fs::path pkg = demo.Emit(
      "npu", "--fake-npu int8,nc1hwc2=16,stride=8 --json --input images=" + demo.input.string(),
      &out);
  auto doc = nlohmann::json::parse(out);
  ASSERT_EQ(doc["int8"].size(), 4u) << out;  // stem.out, block2.out, gelu.out (into seg 2), score
  fs::path runner = BuildWithCc(pkg);
  fs::path dump = demo.dir / "dump";
  fs::create_directories(dump);
  auto r = RunShell(runner.string() + " --input images=" + demo.input.string() + " --output-dir " +
                    dump.string() + " --dump-bridges " + dump.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto run_segment = [&](const std::string& file, const std::string& inputs,
                         const std::string& out_dir) {
    auto rr = RunPorttool("run " + (demo.split / file).string() + " " + inputs + " --output-dir " +
                          (demo.dir / out_dir).string());
    EXPECT_EQ(rr.exit_code, 0) << rr.err;
  };
  auto half_step = [&](const std::string& name) {
    return doc["int8"][name]["scale"].get<float>() / 2;
  };
  // Segment 0 (accelerator) from the graph input: its outputs leave the NPU as int8 NC1HWC2.
  run_segment("00_accelerator.onnx", "--input images=" + demo.input.string(), "s0");
  for (const char* b : {"stem.out", "block2.out"}) {
    EXPECT_LE(MaxAbs(runtime::ReadNpy(dump / (std::string(b) + ".npy")),
                     runtime::ReadNpy(demo.dir / "s0" / (std::string(b) + ".npy"))),
              half_step(b) * 1.001f + 1e-6f)
        << b;
  }
  // Segment 1 (host) is float on the runner's dequantized block2.out.
  run_segment("01_host.onnx", "--input block2.out=" + (dump / "block2.out.npy").string(), "s1");
  EXPECT_LE(MaxAbs(runtime::ReadNpy(dump / "gelu.out.npy"),
                   runtime::ReadNpy(demo.dir / "s1" / "gelu.out.npy")),
            1e-5f);
  // Segment 2 reads gelu.out as int8: feed it the same fake-quantized values.
  runtime::Tensor gelu = runtime::ReadNpy(dump / "gelu.out.npy");
  float scale = doc["int8"]["gelu.out"]["scale"];
  int zp = doc["int8"]["gelu.out"]["zero_point"];
  runtime::Tensor gq(1, gelu.shape());
  for (int64_t i = 0; i < gelu.size(); ++i) {
    float q = std::clamp(std::nearbyint(gelu.data<float>()[i] / scale) + zp, -128.0f, 127.0f);
    gq.mutable_data<float>()[i] = (q - zp) * scale;
  }
  runtime::WriteNpy(demo.dir / "gq.npy", gq);
  run_segment("02_accelerator.onnx",
              "--input stem.out=" + (dump / "stem.out.npy").string() +
                  " --input gelu.out=" + (demo.dir / "gq.npy").string(),
              "s2");
  EXPECT_LE(
      MaxAbs(runtime::ReadNpy(dump / "score.npy"), runtime::ReadNpy(demo.dir / "s2" / "score.npy")),
      half_step("score") * 1.001f + 1e-5f);
}

TEST(EmitRunner, CustomOpKernelRunsTheHostSegment) {
  DemoSplit demo;
  fs::path op = demo.dir / "gelu_op";
  fs::create_directories(op);
  testing::WriteFile(op / "porttool_kernel.json",
                     R"({"op_type": "Gelu", "function": "demo_gelu", "header": "demo_gelu.h"})");
  testing::WriteFile(op / "demo_gelu.h",
                     "#include <porttool/runtime.h>\nint demo_gelu(const pt_tensor* in, size_t "
                     "n_in, pt_tensor* out, size_t n_out);\n");
  testing::WriteFile(op / "demo_gelu.c", R"(#include "demo_gelu.h"
#include <math.h>
int demo_gelu(const pt_tensor* in, size_t n_in, pt_tensor* out, size_t n_out) {
  size_t i, n = 1;
  if (n_in != 1 || n_out != 1 || in[0].dtype != PT_FLOAT) return 1;
  for (i = 0; i < in[0].rank; ++i) n *= (size_t)in[0].dims[i];
  for (i = 0; i < n; ++i) {
    double x = ((const float*)in[0].data)[i];
    ((float*)out[0].data)[i] = (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
  }
  return 0;
}
)");
  std::string out;
  fs::path pkg = demo.Emit("op", "--custom-op " + op.string() + " --json", &out);
  EXPECT_EQ(nlohmann::json::parse(out)["segments"][1]["custom_op"], "Gelu");
  fs::path runner = BuildWithCc(pkg);
  auto r = RunShell(runner.string() + " --input images=" + demo.input.string() + " --output-dir " +
                    demo.dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(MaxAbs(runtime::ReadNpy(demo.dir / "score.npy"),
                   runtime::ReadNpy(demo.reference / "score.npy")),
            1e-5f);
}

TEST(EmitRunner, RknnBackendCompilesAgainstTheDocumentedApi) {
  DemoSplit demo;
  fs::path pkg = demo.Emit("rknn", "--backend rknn");
  ASSERT_TRUE(fs::exists(pkg / "pl_backend_rknn.c"));
  auto r = RunShell("cd " + pkg.string() + " && cc -std=c99 -Wall -Wextra -Werror -c -I. -I" +
                    testing::TestData("rknn_stub").string() + " $(" + PkgConfig() +
                    " pkg-config --cflags porttool-runtime) *.c");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Without the SDK, CMake stops and says which variable to set.
  r = RunShell(PkgConfig() + " cmake -S " + pkg.string() + " -B " + (pkg / "build").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("RKNN_SDK_ROOT"), std::string::npos) << r.out << r.err;
}

TEST(EmitRunner, RunnerRejectsWrongInputsNamingTheFile) {
  DemoSplit demo;
  fs::path runner = BuildWithCc(demo.Emit("bad", ""));
  runtime::WriteNpy(demo.dir / "small.npy", RandomInput({1, 3, 32, 32}, 1));
  auto r = RunShell(runner.string() + " --input images=" + (demo.dir / "small.npy").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("small.npy: shape 1x3x32x32, input 'images' needs 1x3x64x64"),
            std::string::npos)
      << r.err;
  runtime::Tensor i64(7, {1, 3, 64, 64});
  runtime::WriteNpy(demo.dir / "int.npy", i64);
  r = RunShell(runner.string() + " --input images=" + (demo.dir / "int.npy").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("int.npy: dtype '<i8'"), std::string::npos) << r.err;
  r = RunShell(runner.string() + " --input images=" + demo.input.string() + " --segments " +
               demo.dir.path().string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("00_accelerator.onnx"), std::string::npos) << r.err;
  r = RunShell(runner.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("input 'images' missing"), std::string::npos) << r.err;
}

TEST(EmitRunner, CliExitCodes) {
  DemoSplit demo;
  std::string pipeline = (demo.split / "pipeline.json").string();
  auto r = RunPorttool("emit-runner " + pipeline + " -o " + (demo.dir / "a").string() +
                       " --fake-npu int8,nc1hwc2=12");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("8 or 16"), std::string::npos) << r.err;
  r = RunPorttool("emit-runner " + pipeline + " -o " + demo.split.string());
  EXPECT_EQ(r.exit_code, 2) << "the split directory itself must never be overwritten";
  fs::remove(demo.split / "02_accelerator.onnx");
  r = RunPorttool("emit-runner " + pipeline + " -o " + (demo.dir / "b").string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("02_accelerator.onnx"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(demo.dir / "b"));
}

TEST(EmitRunner, DetSplitAtTwoNodesReproducesTheUnsplitModel) {
  fs::path models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models absent: PP-OCRv4 det not available");
  TempDir dir;
  fs::path det = models / "ch_PP-OCRv4_det_infer.onnx";
  auto r = RunPorttool("split " + det.string() +
                       " --at p2o.Mul.28 --at p2o.Resize.3 --input-shape "
                       "x:1x3x320x320 -o " +
                       (dir / "split").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunPorttool("emit-runner " + (dir / "split" / "pipeline.json").string() + " -o " +
                  (dir / "pkg").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path runner = BuildWithCc(dir / "pkg");
  runtime::WriteNpy(dir / "x.npy", RandomInput({1, 3, 320, 320}, 2));
  r = RunShell(runner.string() + " --input x=" + (dir / "x.npy").string() + " --output-dir " +
               (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunPorttool("run " + det.string() + " --input-shape x:1x3x320x320 --input x=" +
                  (dir / "x.npy").string() + " --output-dir " + (dir / "ref").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : fs::directory_iterator(dir / "ref")) {
    EXPECT_LE(
        MaxAbs(runtime::ReadNpy(dir / "out" / f.path().filename()), runtime::ReadNpy(f.path())),
        1e-5f)
        << f.path().filename();
  }
}

}  // namespace
}  // namespace porttool
