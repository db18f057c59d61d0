// The custom-op path end to end on the demo model: scaffold-op Custom_GELU_0, build the package
// with cmake, and `compare` the model run with the built-in Gelu against the scaffolded kernel;
// a deliberately wrong kernel makes compare fail, so the loaded kernel is the one that ran.
// Bad input exits 3 with the culprit named: an unbuilt package, an ABI version mismatch, a library
// implementing another op, a model node that disagrees with op.json. check and infer-shapes take
// the schema from op.json, so shapes flow through an op libonnx has never seen. kit writes kits
// and kit --check judges outputs written by `porttool run`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

const std::string kShape = "--input-shape images:1x3x64x64";

// Builds the package's ABI library with the compiler directly (faster than cmake) into
// DIR/build, from possibly edited sources.
std::string BuildLibrary(const fs::path& pkg, const std::string& sym) {
  fs::create_directories(pkg / "build");
  std::string k = (pkg / "kernel").string();
  auto r =
      RunShell(fmt::format("gcc -std=c99 -O1 -shared -fPIC -I{0} {0}/{1}.c {0}/{1}_porttool.c "
                           "-o {2}/build/libporttool_{1}.so -lm",
                           k, sym, pkg.string()));
  return r.exit_code == 0 ? "" : r.err;
}

class CustomOpCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    auto r = RunPorttool(fmt::format("scaffold-op {} --node Custom_GELU_0 {} -o {}",
                                     testing::DemoArg(), kShape, (*dir_ / "gelu").string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path Package() { return *dir_ / "gelu"; }
  static fs::path CopyPackage(const std::string& name) {
    fs::copy(Package(), *dir_ / name, fs::copy_options::recursive);
    fs::remove_all(*dir_ / name / "build");
    return *dir_ / name;
  }
  static TempDir* dir_;
};
TempDir* CustomOpCliTest::dir_ = nullptr;

TEST_F(CustomOpCliTest, ClosedLoopOnTheDemoModel) {
  std::string pkg = Package().string();
  // The schema's own test (libonnx headers: slow to compile) runs in scaffold_op_test.cc.
  auto build = RunShell(
      fmt::format("cmake -S {0} -B {0}/build -DCMAKE_DISABLE_FIND_PACKAGE_ONNX=ON >/dev/null && "
                  "cmake --build {0}/build >/dev/null && ctest --test-dir {0}/build",
                  pkg));
  ASSERT_EQ(build.exit_code, 0) << build.out << build.err;
  EXPECT_NE(build.out.find("100% tests passed"), std::string::npos) << build.out;
  // Without ONNXRUNTIME_ROOT the package compiles its ONNX Runtime adapter against ort/stub
  // (-Wall -Wextra -Werror); the other SDK adapters are skipped.
  EXPECT_TRUE(fs::exists(Package() / "build/CMakeFiles/gelu_ort_stub_check.dir/ort/gelu_ort.cc.o"));
  EXPECT_FALSE(fs::exists(Package() / "build/librkcst_gelu.so"));

  auto compare = RunPorttool(
      fmt::format("compare {0} {0} --custom-op {1} {2} --json", testing::DemoArg(), pkg, kShape));
  ASSERT_EQ(compare.exit_code, 0) << compare.out << compare.err;
  auto doc = nlohmann::json::parse(compare.out);
  EXPECT_TRUE(doc["within_tolerance"].get<bool>());
  // SSE2 erf differs from libm's erff in the last bits: not identical, but close.
  EXPECT_GT(doc["outputs"][0]["max_abs"].get<double>(), 0.0);

  auto run = RunPorttool(
      fmt::format("run {} --custom-op {} {} --random-inputs", testing::DemoArg(), pkg, kShape));
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST_F(CustomOpCliTest, TargetSelectsAdaptersAndABadOneIsAUsageError) {
  TempDir dir;
  auto r =
      RunPorttool(fmt::format("scaffold-op {} --node Custom_GELU_0 {} --target ort,tflm -o {} "
                              "--json",
                              testing::DemoArg(), kShape, (dir / "pkg").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["targets"], (std::vector<std::string>{"ort", "tflm"}));
  EXPECT_TRUE(fs::exists(dir / "pkg/ort/README.md"));
  EXPECT_TRUE(fs::exists(dir / "pkg/tflm/README.md"));
  EXPECT_FALSE(fs::exists(dir / "pkg/rknn"));

  r = RunPorttool(fmt::format("scaffold-op {} --node Custom_GELU_0 {} --target ort,trt -o {}",
                              testing::DemoArg(), kShape, (dir / "bad").string()));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--target: unknown adapter target 'trt'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ort, rknn, tensorrt, tflm"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

TEST_F(CustomOpCliTest, AWrongKernelMakesCompareFail) {
  fs::path pkg = CopyPackage("wrong");
  std::string kernel = testing::ReadFile(pkg / "kernel/gelu.c");
  // Gelu -> x * 0.5: far from Gelu for most inputs.
  size_t at = kernel.find("static float gelu_scalar");
  ASSERT_NE(at, std::string::npos);
  size_t ret = kernel.find("return ", at);
  kernel.replace(ret, kernel.find(';', ret) - ret, "return 0.5f * x");
  testing::WriteFile(pkg / "kernel/gelu.c", "#define PT_NO_SIMD 1\n" + kernel);
  ASSERT_EQ(BuildLibrary(pkg, "gelu"), "");
  auto compare = RunPorttool(
      fmt::format("compare {0} {0} --custom-op {1} {2}", testing::DemoArg(), pkg.string(), kShape));
  EXPECT_EQ(compare.exit_code, 1) << compare.out << compare.err;
  EXPECT_NE(compare.out.find("OVER TOLERANCE"), std::string::npos) << compare.out;
}

TEST_F(CustomOpCliTest, BadPackagesAreExit3NamingTheCulprit) {
  fs::path unbuilt = CopyPackage("unbuilt");
  auto r = RunPorttool(fmt::format("run {} --custom-op {} {} --random-inputs", testing::DemoArg(),
                                   unbuilt.string(), kShape));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no built kernel library libporttool_gelu.so"), std::string::npos) << r.err;

  fs::path abi = CopyPackage("abi");
  std::string glue = testing::ReadFile(abi / "kernel/gelu_porttool.c");
  size_t at = glue.find("{PT_CUSTOM_OP_ABI_VERSION,");
  ASSERT_NE(at, std::string::npos);
  glue.replace(at, 26, "{2u,");
  testing::WriteFile(abi / "kernel/gelu_porttool.c", glue);
  ASSERT_EQ(BuildLibrary(abi, "gelu"), "");
  r = RunPorttool(fmt::format("run {} --custom-op {} {} --random-inputs", testing::DemoArg(),
                              abi.string(), kShape));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("ABI version 2"), std::string::npos) << r.err;

  fs::path other = CopyPackage("other");
  ASSERT_EQ(BuildLibrary(other, "gelu"), "");
  std::string spec = testing::ReadFile(other / "op.json");
  spec.replace(spec.find("\"op_type\": \"Gelu\""), 17, "\"op_type\": \"FastGelu\"");
  testing::WriteFile(other / "op.json", spec);
  r = RunPorttool(fmt::format("run {} --custom-op {} {} --random-inputs", testing::DemoArg(),
                              other.string(), kShape));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("implements com.microsoft::Gelu, op.json describes com.microsoft::FastGelu"),
            std::string::npos)
      << r.err;

  // A Gelu node with an attribute the package does not know.
  io::Model m = io::Load(testing::DemoModelPath());
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) {
    if (node.op_type() != "Gelu") continue;
    auto* a = node.add_attribute();
    a->set_name("approximate");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s("tanh");
  }
  io::Save(m, *dir_ / "attr.onnx");
  r = RunPorttool(
      fmt::format("check {} --custom-op {}", (*dir_ / "attr.onnx").string(), Package().string()));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("node 'Custom_GELU_0'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("attribute 'approximate' is not in op.json"), std::string::npos) << r.err;
}

TEST_F(CustomOpCliTest, InferShapesUsesTheSchemaOfAnOpLibonnxDoesNotKnow) {
  TempDir dir;
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14, "acme.vision" : 1]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) {
  t = acme.vision.Swish3(x)
  y = Relu(t)
})");
  m.proto.mutable_graph()->mutable_node(0)->set_name("swish");
  io::Save(m, dir / "m.onnx");
  std::string model = (dir / "m.onnx").string();
  auto scaffold =
      RunPorttool(fmt::format("scaffold-op {} --node swish -o {}", model, (dir / "pkg").string()));
  ASSERT_EQ(scaffold.exit_code, 0) << scaffold.err;
  auto without =
      RunPorttool(fmt::format("infer-shapes {} -o {} --json", model, (dir / "a.onnx").string()));
  auto with = RunPorttool(fmt::format("infer-shapes {} -o {} --json --custom-op {}", model,
                                      (dir / "b.onnx").string(), (dir / "pkg").string()));
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_TRUE(nlohmann::json::parse(with.out)["unresolved"].empty()) << with.out;
  if (without.exit_code == 0) {
    EXPECT_FALSE(nlohmann::json::parse(without.out)["unresolved"].empty()) << without.out;
  }
  // The skeleton kernel refuses to run rather than pass data through.
  ASSERT_EQ(BuildLibrary(dir / "pkg", "swish3"), "");
  auto run = RunPorttool(
      fmt::format("run {} --custom-op {} --random-inputs", model, (dir / "pkg").string()));
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("not implemented"), std::string::npos) << run.err;
}

// Without pinned shapes the package's kit would test nothing it could run (every test "bad
// argument"): scaffold-op asks for the shapes and writes nothing.
TEST_F(CustomOpCliTest, ScaffoldWithoutPinnedShapesAsksForThemAndWritesNothing) {
  TempDir dir;
  auto r = RunPorttool(fmt::format("scaffold-op {} --node Custom_GELU_0 -o {}",
                                   testing::DemoArg(), (dir / "pkg").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown dims: images[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--input-shape"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "pkg"));
}

TEST_F(CustomOpCliTest, KitAndKitCheckAgainstOutputsOfPorttoolRun) {
  TempDir dir;
  auto kit = RunPorttool(fmt::format("kit {} --node Custom_GELU_0 {} -o {}", testing::DemoArg(),
                                     kShape, (dir / "kits").string()));
  ASSERT_EQ(kit.exit_code, 0) << kit.err;
  fs::path k = dir / "kits/Gelu_Custom_GELU_0";
  ASSERT_TRUE(fs::exists(k / "kit.json")) << kit.out;
  auto run = RunPorttool(fmt::format(
      "run {}/model.onnx --input block2.out={}/test_data_set_0/input_0.pb --output-dir {} --pb",
      k.string(), k.string(), (dir / "board").string()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto check = RunPorttool(fmt::format("kit --check {} {}", k.string(), (dir / "board").string()));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("1 passed, 0 failed"), std::string::npos) << check.out;
  auto none = RunPorttool(fmt::format("kit --check {} {}", k.string(), dir.path().string()));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("0 passed, 1 failed"), std::string::npos) << none.out;
  auto usage = RunPorttool(
      fmt::format("kit {} --node x --all -o {}", testing::DemoArg(), dir.path().string()));
  EXPECT_EQ(usage.exit_code, 2);
}

}  // namespace
}  // namespace porttool
