// Zero-size tensors end to end (issue 54): a 0 dim pinned with --input-shape, a graph input
// declared with a 0 dim and a calibration sample of 0 elements, replayed through every
// subcommand (testdata/zero_size, made by its gen_zero_size_models.py). They used to kill run,
// compare, split, emit-header, decide, port, kit, scaffold-op and quantize-calibrate with SIGFPE
// (the executor's broadcast plan divided by the 0 dim). Every command now ends with an exit code
// of 0-3: never 4 (internal error) or a signal.
#include <gtest/gtest.h>

#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

fs::path ZeroSize(const std::string& name) { return testing::TestData("zero_size/" + name); }

// Runs `cmd` and expects a clean end: exit 0-3, no internal error, no signal (128 + n). The
// replays below expect more, exit 0: every input here is valid.
testing::CommandResult ExpectCleanExit(const std::string& cmd) {
  auto r = RunPorttool(cmd);
  EXPECT_GE(r.exit_code, 0) << cmd;
  EXPECT_LE(r.exit_code, 3) << cmd << "\n" << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << cmd << "\n" << r.err;
  return r;
}

// Every subcommand that reads a model, plus compare, on M with `pin` (--input-shape or nothing)
// after the model; the ones that take no --input-shape get the model alone.
std::vector<std::string> Commands(const std::string& m, const std::string& node,
                                  const std::string& pin, const fs::path& out) {
  std::vector<std::string> commands = testing::EveryModelCommand(m, node, out.string());
  for (auto& cmd : commands) {
    const bool takes_pin = cmd.rfind("inspect ", 0) != 0 && cmd.rfind("fold-constants ", 0) != 0 &&
                           cmd.rfind("rewrite ", 0) != 0 && cmd.rfind("chain ", 0) != 0 &&
                           cmd.rfind("diff ", 0) != 0;
    if (takes_pin && !pin.empty()) cmd.insert(cmd.find(m) + m.size(), " " + pin);
  }
  commands.push_back("compare " + m + " " + m + " " + pin);
  return commands;
}

TEST(CliZeroSize, EverySubcommandTakesAZeroBatchPinnedByInputShape) {
  TempDir dir;
  const std::string m = ZeroSize("conv_net.onnx").string();
  for (const auto& cmd : Commands(m, "conv", "--input-shape x:0x3x48x192", dir / "out")) {
    auto r = ExpectCleanExit(cmd);
    // A 0 batch is a valid input: every command takes it, and run gives empty outputs.
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    if (cmd.rfind("run ", 0) == 0) {
      EXPECT_NE(r.out.find("float32[0x2]"), std::string::npos) << r.out;
    }
    fs::remove_all(dir.path());
    fs::create_directories(dir.path());
  }
}

TEST(CliZeroSize, EverySubcommandTakesAZeroDimAgainstABroadcastOne) {
  TempDir dir;
  const std::string m = ZeroSize("mul_broadcast.onnx").string();
  for (const auto& cmd : Commands(m, "mul", "", dir / "out")) {
    auto r = ExpectCleanExit(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    fs::remove_all(dir.path());
    fs::create_directories(dir.path());
  }
}

// A sample of 0 elements has nothing to calibrate: refused naming the file, not a table that
// silently lacks every activation.
TEST(CliZeroSize, CalibrationRefusesAnEmptySampleNamingIt) {
  TempDir dir;
  auto r = RunPorttool("quantize-calibrate " + ZeroSize("conv_net.onnx").string() + " --data " +
                       ZeroSize("calib").string() + " --table " + (dir / "t.json").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("s0.x.npy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no values"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "t.json"));
}

// The model of the report, PP-OCR's direction classifier, when the shared models are present.
TEST(CliZeroSize, PpOcrClassifierRunsAZeroBatch) {
  const char* shared = std::getenv("PORTTOOL_SHARED");
  const fs::path cls =
      fs::path(shared ? shared : "") / "models" / "ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!shared || !fs::exists(cls))
    PORTTOOL_SKIP_MISSING("needs the shared models ($PORTTOOL_SHARED)");
  TempDir dir;
  for (const auto& cmd :
       Commands(cls.string(), "p2o.MaxPool.0", "--input-shape x:0x3x48x192", dir / "out")) {
    auto r = ExpectCleanExit(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    fs::remove_all(dir.path());
    fs::create_directories(dir.path());
  }
}

}  // namespace
}  // namespace porttool
