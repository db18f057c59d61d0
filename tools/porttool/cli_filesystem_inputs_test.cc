// Filesystem objects and malformed graphs as inputs, through the CLI (issue 54, classes 5 and 6):
// a FIFO named like a sample or given as an input tensor, a symlink loop in a data folder, an
// image whose header claims more pixels than the cap, a tensor with two producers, a cycle, and
// out-of-range pass options. Each must end with its documented exit code and a message naming
// the culprit; a hang is caught by `timeout` (exit 124), not by a time limit on the test.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <random>

#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

testing::CommandResult RunBounded(const std::string& args) {
  return testing::RunShell("timeout 60 " + testing::PorttoolBin() + " " + args);
}

void WriteSample(const fs::path& path) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 32, 32});
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = 0.001f * (i % 997);
  runtime::WriteNpy(path, t);
}

TEST(CliFilesystemInputs, AFifoIsRefusedAndNeverWaitedOn) {
  TempDir dir;
  fs::create_directories(dir / "data");
  WriteSample(dir / "data" / "s0.images.npy");
  ASSERT_EQ(::mkfifo((dir / "data" / "s1.images.npy").c_str(), 0644), 0);
  ASSERT_EQ(::mkfifo((dir / "x.npy").c_str(), 0644), 0);
  std::string m = testing::DemoArg(), d = (dir / "data").string();
  for (std::string args :
       {"quantize-calibrate " + m + " --data " + d + " --no-eval",
        "kit " + m + " --all --input-shape images:1x3x32x32 --data " + d + " -o " +
            (dir / "kits").string(),
        "run " + m + " --input images=" + (dir / "x.npy").string(),
        "compare " + m + " " + m + " --input images=" + (dir / "x.npy").string()}) {
    auto r = RunBounded(args);
    EXPECT_EQ(r.exit_code, 3) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("FIFO"), std::string::npos) << args << "\n" << r.err;
  }
}

TEST(CliFilesystemInputs, AFifoOrASymlinkLoopAsTheModelIsRefusedByEverySubcommand) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo.onnx").c_str(), 0644), 0);
  fs::create_symlink("loop_b.onnx", dir / "loop_a.onnx");
  fs::create_symlink("loop_a.onnx", dir / "loop_b.onnx");
  for (const char* model : {"fifo.onnx", "loop_a.onnx"}) {
    for (const auto& cmd :
         testing::EveryModelCommand((dir / model).string(), "relu", (dir / "out").string())) {
      auto r = RunBounded(cmd);
      EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find(model), std::string::npos) << cmd << "\n" << r.err;
    }
  }
}

TEST(CliFilesystemInputs, KitWritesAllOrNothingAndNeverThroughASymlinkedFolder) {
  TempDir dir;
  std::string kit = "kit " + testing::DemoArg() + " --all --input-shape images:1x3x32x32 -o ";
  // The rename that would put the kits in place fails: no kits, no half folder, no staging left.
  auto failed = testing::RunShell("PORTTOOL_TEST_FAIL_COMMIT=1 timeout 60 " +
                                  testing::PorttoolBin() + " " + kit + (dir / "kits").string());
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  EXPECT_TRUE(fs::is_empty(dir.path())) << testing::RelativeFiles(dir.path()).size();
  // -o naming a symlink to an empty folder: the link is replaced, nothing is written through it.
  fs::create_directory(dir / "real");
  fs::create_directory_symlink("real", dir / "link");
  auto r = RunBounded(kit + (dir / "link").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_empty(dir / "real"));
  EXPECT_TRUE(fs::exists(dir / "link" / ".porttool-output"));
}

TEST(CliFilesystemInputs, ASymlinkLoopInADataFolderIsNamedNotAnInternalError) {
  TempDir dir;
  fs::create_directories(dir / "data");
  WriteSample(dir / "data" / "s0.images.npy");
  WriteSample(dir / "data" / "s1.images.npy");
  fs::create_symlink("b", dir / "data" / "a");  // a loop not named like a sample: ignored
  fs::create_symlink("a", dir / "data" / "b");
  std::string m = testing::DemoArg(), d = (dir / "data").string();
  auto ok = RunBounded("quantize-calibrate " + m + " --data " + d + " --no-eval");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  fs::create_symlink("s3.images.npy", dir / "data" / "s2.images.npy");  // named like one
  fs::create_symlink("s2.images.npy", dir / "data" / "s3.images.npy");
  for (std::string args : {"quantize-calibrate " + m + " --data " + d + " --no-eval",
                           "kit " + m + " --all --input-shape images:1x3x32x32 --data " + d +
                               " -o " + (dir / "kits").string()}) {
    auto r = RunBounded(args);
    EXPECT_EQ(r.exit_code, 3) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("s2.images.npy"), std::string::npos) << args << "\n" << r.err;
  }
}

// A PNG signature and IHDR chunk claiming width x height; no pixel data (the header is all
// stb reads before the cap is checked).
std::string PngHeader(uint32_t width, uint32_t height) {
  std::string png = "\x89PNG\r\n\x1a\n";
  auto be32 = [&png](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) png.push_back(static_cast<char>((v >> s) & 0xff));
  };
  be32(13);
  png += "IHDR";
  be32(width);
  be32(height);
  png += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB, deflate, no filter, no interlace
  be32(0);                                        // CRC (stb does not check it)
  return png;
}

TEST(CliFilesystemInputs, AnImageClaimingTooManyPixelsIsRefusedBeforeDecoding) {
  TempDir dir;
  fs::create_directories(dir / "data");
  testing::WriteFile(dir / "data" / "big.png", PngHeader(17000, 17000));
  std::string args = "quantize-calibrate " + testing::DemoArg() + " --data " +
                     (dir / "data").string() + " --resize 32x32 --no-eval";
  auto r = RunBounded(args);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("17000x17000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-image-pixels"), std::string::npos) << r.err;
  // Raised, the cap lets the header through and the missing pixels are what fails.
  auto raised = RunBounded(args + " --max-image-pixels 300000000");
  EXPECT_EQ(raised.exit_code, 3) << raised.err;
  EXPECT_EQ(raised.err.find("--max-image-pixels"), std::string::npos) << raised.err;
}

// x -> Relu -> y, with `mutate` applied to the graph.
fs::path OneReluModel(const fs::path& path, const std::function<void(onnx::GraphProto&)>& mutate) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto declare = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu");
  n->add_input("x");
  n->add_output("y");
  mutate(*g);
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

TEST(CliFilesystemInputs, GraphsWithoutSingleProducersOrWithCyclesAreRefusedEverywhere) {
  TempDir dir;
  auto two_producers = OneReluModel(dir / "two.onnx", [](onnx::GraphProto& g) {
    auto* n = g.add_node();
    n->set_op_type("Sigmoid");
    n->set_name("sig");
    n->add_input("x");
    n->add_output("y");
  });
  auto self_loop = OneReluModel(dir / "self.onnx",
                                [](onnx::GraphProto& g) { g.mutable_node(0)->set_input(0, "y"); });
  auto identity_cycle = OneReluModel(dir / "cycle.onnx", [](onnx::GraphProto& g) {
    g.mutable_node(0)->set_input(0, "z");
    auto* n = g.add_node();
    n->set_op_type("Identity");
    n->set_name("id");
    n->add_input("y");
    n->add_output("z");
  });
  for (const auto& [model, says] : std::vector<std::pair<fs::path, std::string>>{
           {two_producers, "produced by node"}, {self_loop, "cycle"}, {identity_cycle, "cycle"}}) {
    for (const auto& cmd :
         testing::EveryModelCommand(model.string(), "relu", (dir / "out").string())) {
      auto r = RunBounded(cmd);
      EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find(says), std::string::npos) << cmd << "\n" << r.err;
    }
    auto r = RunBounded("compare " + model.string() + " " + model.string());
    EXPECT_EQ(r.exit_code, 3) << r.err;
  }
}

TEST(CliFilesystemInputs, PassOptionsOutOfRangeAreUsageErrors) {
  TempDir dir;
  for (std::string p : {"convert-opset{to=99999}", "convert-opset{to=4294967309}",
                        "convert-opset{to=0}", "infer-shapes{max-iterations=-1}"}) {
    auto r = RunBounded("chain " + testing::DemoArg() + " -p '" + p + "' -o " +
                        (dir / "o.onnx").string());
    EXPECT_EQ(r.exit_code, 2) << p << "\n" << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.onnx")) << p;
  }
}

}  // namespace
}  // namespace porttool
