// "A command that writes several files writes all of them or none", end to end: every command
// with a multi-file output is run with its 1st, 2nd, ... output rename failing (the test hook
// PORTTOOL_TEST_FAIL_COMMIT=N, lib/io/atomic_file.h) until a run gets through. Each failed run
// must be exit 3 and leave the output directory exactly as it was, with no temp file, both when
// the outputs are new and when previous versions are there to be replaced.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const char* const kDemoShape = "--input-shape images:1x3x64x64";

// Every file under `dir`, hidden ones (temp, staging, kept) included, with its bytes; directories
// as "name/".
std::map<std::string, std::string> TreeSnapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string name = fs::relative(e.path(), dir).string();
    out[e.is_directory() ? name + "/" : name] = e.is_directory() ? "" : testing::ReadFile(e.path());
  }
  return out;
}

// Runs `porttool args` with rename 1, 2, ... failing until a run succeeds; every failed run must
// leave `dir` as it was. Returns the listing `dir` has after the successful run.
std::map<std::string, std::string> ExpectAllOrNone(const std::string& args, const fs::path& dir) {
  const auto before = TreeSnapshot(dir);
  for (int nth = 1; nth <= 100; ++nth) {
    SCOPED_TRACE(fmt::format("rename {} fails", nth));
    auto r = testing::RunShell(
        fmt::format("PORTTOOL_TEST_FAIL_COMMIT={} {} {}", nth, testing::PorttoolBin(), args));
    if (r.exit_code == 0) {
      EXPECT_GE(nth, 3) << "expected at least two renames before the run got through";
      return TreeSnapshot(dir);
    }
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("Input/output error"), std::string::npos) << r.err;
    EXPECT_EQ(TreeSnapshot(dir), before);
    if (::testing::Test::HasFailure()) break;
  }
  ADD_FAILURE() << "no run got through";
  return {};
}

TEST(CliAllOrNone, EmitHeaderWithWeights) {
  TempDir dir;
  fs::create_directory(dir / "out");
  std::string args =
      fmt::format("emit-header {} {} -o {} --weights {}", testing::DemoArg(), kDemoShape,
                  (dir / "out" / "d.h").string(), (dir / "out" / "d.bin").string());
  auto written = ExpectAllOrNone(args, dir / "out");
  EXPECT_EQ(written.size(), 2u);
  EXPECT_TRUE(written.count("d.h") && written.count("d.bin"));
  // Previous versions are put back byte for byte.
  testing::WriteFile(dir / "out" / "d.h", "old header");
  testing::WriteFile(dir / "out" / "d.bin", "old weights");
  EXPECT_EQ(ExpectAllOrNone(args, dir / "out"), written);
}

TEST(CliAllOrNone, QuantizeCalibrateTableCacheAndModel) {
  TempDir dir;
  fs::create_directories(dir / "data");
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int s = 0; s < 2; ++s) {
    runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 64, 64});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng);
    runtime::WriteNpy(dir / "data" / fmt::format("s{}.images.npy", s), t);
  }
  fs::create_directory(dir / "out");
  fs::path out = dir / "out";
  std::string args =
      fmt::format("quantize-calibrate {} --data {} --no-eval --table {} --trt-cache {} --qdq {}",
                  testing::DemoArg(), (dir / "data").string(), (out / "t.json").string(),
                  (out / "t.cache").string(), (out / "q.onnx").string());
  auto written = ExpectAllOrNone(args, out);
  EXPECT_EQ(written.size(), 3u);
  EXPECT_TRUE(written.count("t.json") && written.count("t.cache") && written.count("q.onnx"));
  testing::WriteFile(out / "t.json", "old table");
  testing::WriteFile(out / "q.onnx", "old model");  // the cache is new this time
  fs::remove(out / "t.cache");
  EXPECT_EQ(ExpectAllOrNone(args, out), written);
}

TEST(CliAllOrNone, SplitDirectory) {
  TempDir dir;
  fs::create_directory(dir / "out");
  std::string args = fmt::format("split {} --at Custom_GELU_0 --force -o {}", testing::DemoArg(),
                                 (dir / "out" / "demo.split").string());
  auto written = ExpectAllOrNone(args, dir / "out");
  EXPECT_TRUE(written.count("demo.split/pipeline.json"));
  EXPECT_TRUE(written.count("demo.split/01_host.onnx"));
  // A previous split is replaced whole, or kept whole.
  fs::remove_all(dir / "out" / "demo.split");
  fs::create_directory(dir / "out" / "demo.split");
  testing::WriteFile(dir / "out" / "demo.split" / ".porttool-output",
                     written.at("demo.split/.porttool-output"));
  testing::WriteFile(dir / "out" / "demo.split" / "pipeline.json", "old manifest");
  testing::WriteFile(dir / "out" / "demo.split" / "00_old.onnx", "old segment");
  EXPECT_EQ(ExpectAllOrNone(args, dir / "out"), written);
}

TEST(CliAllOrNone, ScaffoldOpPackage) {
  TempDir dir;
  fs::create_directory(dir / "out");
  std::string args =
      fmt::format("scaffold-op {} --node Custom_GELU_0 {} --target ort --force -o {}",
                  testing::DemoArg(), kDemoShape, (dir / "out" / "gelu").string());
  auto written = ExpectAllOrNone(args, dir / "out");
  EXPECT_TRUE(written.count("gelu/op.json"));
  EXPECT_TRUE(written.count("gelu/kernel/gelu.c"));
  EXPECT_TRUE(written.count("gelu/test/kit/model.onnx"));
  fs::remove_all(dir / "out" / "gelu");
  fs::create_directory(dir / "out" / "gelu");
  testing::WriteFile(dir / "out" / "gelu" / ".porttool-output",
                     written.at("gelu/.porttool-output"));
  testing::WriteFile(dir / "out" / "gelu" / "op.json", "old op.json");
  testing::WriteFile(dir / "out" / "gelu" / "notes.txt", "old notes");
  EXPECT_EQ(ExpectAllOrNone(args, dir / "out"), written);
}

// A directory scaffold-op did not write is not replaced, even with --force (that would delete
// whatever is in it).
TEST(CliAllOrNone, ScaffoldOpRefusesToReplaceADirectoryThatIsNotAPackage) {
  TempDir dir;
  fs::create_directory(dir / "mine");
  testing::WriteFile(dir / "mine" / "notes.txt", "mine");
  auto r =
      testing::RunPorttool(fmt::format("scaffold-op {} --node Custom_GELU_0 {} --force -o {}",
                                       testing::DemoArg(), kDemoShape, (dir / "mine").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("porttool did not write it"), std::string::npos) << r.err;
  EXPECT_EQ(TreeSnapshot(dir.path()),
            (std::map<std::string, std::string>{{"mine/", ""}, {"mine/notes.txt", "mine"}}));
}

}  // namespace
}  // namespace porttool
