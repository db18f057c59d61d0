// Hostile input end to end: models that claim absurd resources (scripts/gen_hostile_models.py)
// are refused with exit 3 by every subcommand that touches them, naming the tensor or node, and
// commands that write several outputs write all of them or none. The refusals' peak memory is
// checked here; their time is measured by scripts/bench/bench_caps.sh.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

// Generates the hostile models once per test (the generator needs Debian's python3-onnx).
fs::path HostileModels(const TempDir& dir) {
  auto r = testing::RunShell(std::string(testing::kSystemPython) + " " +
                             (testing::SourceDir() / "scripts" / "gen_hostile_models.py").string() +
                             " " + dir.path().string());
  if (r.exit_code != 0) return {};
  return dir.path();
}

struct Hostile {
  const char* model;
  const char* node;    // the node that would produce it (split --at; run names it)
  const char* tensor;  // the tensor claiming the size
  bool declared;       // in the file itself, not only found by shape inference
};

const Hostile kStatic[] = {
    {"huge_input.onnx", "relu", "'x'", true},
    {"huge_initializer.onnx", "relu", "'w'", true},
    {"reshape_overflow.onnx", "reshape", "'y'", false},
    {"expand_tb.onnx", "expand", "'y'", false},
    {"tile_tb.onnx", "tile", "'y'", false},
    {"constant_of_shape_tb.onnx", "fill", "'y'", false},
};

TEST(CliHardening, EverySubcommandRefusesModelsClaimingTerabytes) {
  TempDir dir;
  fs::path models = HostileModels(dir);
  if (models.empty()) PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  for (const auto& h : kStatic) {
    const std::string m = (models / h.model).string(), out = (dir / "out").string();
    // Static stages name the tensor; run may stop at the node first (Reshape checks its shape
    // input before any tensor exists). check, split, decide and fold-constants used to accept a
    // claim that only shape inference reveals (decide and fold-constants exited 0, noting
    // "shape inference failed"): every stage that infers shapes refuses it now.
    std::vector<std::pair<std::string, std::string>> commands = {
        {"infer-shapes " + m + " -o " + out + ".onnx", h.tensor},
        {"run " + m + " --random-inputs", h.declared ? h.tensor : h.node},
        {"emit-header " + m + " -o " + out + ".h", h.tensor},
        {"check " + m, h.tensor},
        {"split " + m + " --at " + h.node + " -o " + out + ".split", h.tensor},
        {"decide " + m, h.tensor},
        {"decide " + m + " --format json -o " + out + ".json", h.tensor},
        {"fold-constants " + m + " -o " + out + ".onnx", h.tensor},
        {"simplify " + m + " -o " + out + ".onnx", h.tensor},
    };
    // inspect infers no shapes (it reports what the file declares), so it refuses only the
    // claims the file itself makes.
    if (h.declared) commands.push_back({"inspect " + m, h.tensor});
    for (const auto& [cmd, culprit] : commands) {
      auto r = RunPorttool(cmd);
      EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
      // The bound for a refusal is 300 MB (and 1 s, which scripts/bench/bench_caps.sh
      // measures: wall time under a parallel ctest says little).
      const int64_t rss_kib = testing::PeakRssKb(dir, cmd, 3);
      EXPECT_GT(rss_kib, 0) << cmd;
      EXPECT_LT(rss_kib, 300 * 1024) << cmd;
      EXPECT_NE(r.err.find(culprit), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << cmd << "\n" << r.err;
    }
    EXPECT_FALSE(fs::exists(out + ".onnx") || fs::exists(out + ".split") ||
                 fs::exists(out + ".h") || fs::exists(out + ".json"))
        << h.model << ": a refused command left an output behind";
  }
}

// Recursion in the model: model-local functions calling each other in a cycle (which killed
// every subcommand with SIGSEGV: libonnx expands calls recursively), a chain of calls nested past
// the limit, and If nodes nested past it. Every subcommand refuses each at load with exit 3,
// naming the cycle or the depth, and leaves nothing behind (port: no staging directory).
TEST(CliHardening, EverySubcommandRefusesRecursionInTheModel) {
  TempDir dir;
  fs::path models = HostileModels(dir);
  if (models.empty()) PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  const std::pair<const char*, const char*> kCases[] = {
      {"function_self_call.onnx", "(local.f -> local.f)"},
      {"function_cycle.onnx", "(local.f -> local.g -> local.f)"},
      {"function_cycle_in_if.onnx", "(local.f -> local.g -> local.f)"},
      {"function_chain_deep.onnx", "nest 17 levels deep"},
      {"subgraph_deep.onnx", "subgraphs nest deeper than 16 levels"},
  };
  fs::create_directories(dir / "work");
  for (const auto& [model, culprit] : kCases) {
    const std::string m = (models / model).string(), out = (dir / "work" / "out").string();
    const std::vector<std::string> commands = testing::EveryModelCommand(m, "call_f", out);
    for (const auto& cmd : commands) {
      auto r = RunPorttool(cmd);
      EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find(culprit), std::string::npos) << cmd << "\n" << r.err;
    }
    EXPECT_TRUE(fs::is_empty(dir / "work")) << model << ": a refused command left something";
  }
}

// A Loop whose trip count is 2^62 is what PyTorch exports for a while loop, so static stages
// accept it; running one whose condition never turns false stops at the iteration limit, as bad
// input naming the node and the flag that raises the limit.
TEST(CliHardening, LoopWithEnormousTripCountIsNotRun) {
  TempDir dir;
  fs::path models = HostileModels(dir);
  if (models.empty()) PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  const std::string model = (models / "loop_trip_count.onnx").string();
  auto r = RunPorttool("run " + model + " --random-inputs");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("'loop'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 100000 iterations"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-loop-iterations"), std::string::npos) << r.err;
  r = RunPorttool("run " + model + " --random-inputs --max-loop-iterations 7");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("after 7 iterations"), std::string::npos) << r.err;
}

TEST(CliHardening, RunOutputDirThatCannotBeCreatedIsBadInput) {
  TempDir dir;
  const std::string model = testing::TestData("demo_detector.onnx").string();
  testing::WriteFile(dir / "a_file", "not a directory");
  for (const std::string& target :
       {(dir / "a_file").string(), (dir / "a_file" / "sub").string(), std::string("/proc/x")}) {
    auto r = RunPorttool("run " + model + " --input-shape images:1x3x8x8 --random-inputs " +
                         "--output-dir " + target);
    EXPECT_EQ(r.exit_code, 3) << target << "\n" << r.err;
    EXPECT_NE(r.err.find(target), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::ReadFile(dir / "a_file"), "not a directory");
}

TEST(CliHardening, EmitHeaderWritesAllOutputsOrNone) {
  TempDir dir;
  const std::string model = testing::TestData("demo_detector.onnx").string();
  fs::create_directory(dir / "folder.h");
  auto r = RunPorttool("emit-header " + model + " --input-shape images:1x3x8x8 -o " +
                       (dir / "folder.h").string() + " --weights " + (dir / "w.bin").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("folder.h"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "w.bin")) << "the weights were written although the header failed";
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

// kill -9 in the middle of writing a large model: the output is the previous file or absent,
// never a truncated one. The save goes to a temp file renamed into place, so the old content
// stays readable until the new one is complete.
TEST(CliHardening, KillDuringLargeSaveLeavesTheOldFile) {
  TempDir dir;
  auto gen = testing::RunShell(
      std::string(testing::kSystemPython) +
      " -c \"import numpy as np, onnx; from onnx import "
      "helper as h, numpy_helper as nh; w = nh.from_array(np.ones((64, 1024, 1024), np.float32), "
      "'w'); g = h.make_graph([h.make_node('Relu', ['w'], ['y'], name='r')], 'g', [], "
      "[h.make_tensor_value_info('y', 1, [64, 1024, 1024])], [w]); m = h.make_model(g, "
      "opset_imports=[h.make_opsetid('', 13)]); m.ir_version = 8; onnx.save(m, '" +
      (dir / "big.onnx").string() + "')\"");
  if (gen.exit_code != 0) PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx: " << gen.err);
  const fs::path out = dir / "out.onnx";
  const std::string old_content = "the previous output";
  int killed_mid_write = 0;
  for (int attempt = 0; attempt < 5 && killed_mid_write == 0; ++attempt) {
    testing::WriteFile(out, old_content);
    const std::string bin = testing::PorttoolBin(), in = (dir / "big.onnx").string();
    pid_t pid = ::fork();
    if (pid == 0) {
      int null_fd = ::open("/dev/null", O_WRONLY);
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
      ::execl(bin.c_str(), bin.c_str(), "infer-shapes", in.c_str(), "-o", out.c_str(), nullptr);
      ::_exit(127);
    }
    // Kill as soon as the temp file appears (the save is under way), whatever its size.
    bool temp_seen = false;
    for (int i = 0; i < 20000 && !temp_seen; ++i) {
      for (const auto& e : fs::directory_iterator(dir.path())) {
        temp_seen |= e.path().filename().string().rfind(".out.onnx.tmp-", 0) == 0;
      }
      if (!temp_seen) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string now = testing::ReadFile(out);
    if (temp_seen && now == old_content) ++killed_mid_write;
    EXPECT_TRUE(!fs::exists(out) || now == old_content || now.size() >= (uint64_t{256} << 20))
        << "a killed save left a truncated file of " << now.size() << " bytes";
  }
  EXPECT_GT(killed_mid_write, 0) << "the save was never caught in progress";
}

// Writes `model` with Debian's python3-onnx from `graph_code` (a python expression for a
// GraphProto, with onnx.helper as h and TensorProto as T) at ai.onnx opset `opset`.
bool WritePythonModel(const std::string& model, const std::string& graph_code, int opset) {
  return testing::RunShell(std::string(testing::kSystemPython) +
                           " -c \"import onnx; from onnx import helper as h, TensorProto as T; "
                           "m = h.make_model(" +
                           graph_code + ", opset_imports=[h.make_opsetid('', " +
                           std::to_string(opset) + ")]); m.ir_version = 8; onnx.save(m, '" + model +
                           "')\"")
             .exit_code == 0;
}

// Every subcommand that reads the model ends with exit 0-3, never a signal.
void ExpectEverySubcommandEndsCleanly(const std::string& model, const std::string& cut,
                                      const fs::path& dir) {
  const std::string out = (dir / "out").string();
  for (const std::string& args :
       {"check " + model, "inspect " + model, "infer-shapes " + model + " -o " + out + ".onnx",
        "simplify " + model + " -o " + out + ".onnx",
        "fold-constants " + model + " -o " + out + ".onnx",
        "split " + model + " --at " + cut + " -o " + out,
        "emit-header " + model + " -o " + out + ".h", "decide " + model,
        "run " + model + " --random-inputs"}) {
    auto r = RunPorttool(args);
    SCOPED_TRACE(args);
    EXPECT_GE(r.exit_code, 0);
    EXPECT_LE(r.exit_code, 3) << r.err;
  }
}

// A model whose problem only inference reveals: every subcommand ends cleanly and `check` names
// the node and the rule.
void ExpectGuardedEverywhere(const std::string& file, const std::string& graph_code, int opset,
                             const std::string& cut, const std::string& check_says) {
  TempDir dir;
  const std::string model = (dir / file).string();
  if (!WritePythonModel(model, graph_code, opset)) {
    PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx");
  }
  ExpectEverySubcommandEndsCleanly(model, cut, dir.path());
  auto check = RunPorttool("check " + model);
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find(check_says), std::string::npos) << check.out;
}

// A rank that only inference knows: STFT reads the rank-1 output of Shape. libonnx's STFT
// inference reads the signal's dims 1 and 2 unchecked and segfaulted in every subcommand that
// infers shapes (fuzz_passes, issue 27); the rank guard (lib/shape/rank_guards.cc) makes it an
// inference error naming the input before libonnx's function runs.
TEST(CliHardening, RankKnownOnlyFromInferenceIsCheckedBeforeLibonnxReadsIt) {
  ExpectGuardedEverywhere(
      "stft_of_shape.onnx",
      "h.make_graph([h.make_node('Shape', ['x'], ['s'], name='shape'), h.make_node('Cast', "
      "['s'], ['sf'], to=1, name='cast'), h.make_node('STFT', ['sf', 'step'], ['y'], "
      "name='stft')], 'g', [h.make_tensor_value_info('x', T.FLOAT, [1, 16, 1])], "
      "[h.make_tensor_value_info('y', T.FLOAT, None)], [h.make_tensor('step', T.INT64, [], "
      "[4])])",
      17, "cast",
      "node 'stft' (STFT): [ShapeInferenceError] input 0 has rank 1: the op reads rank 3");
}

// The same class for a length: the second ConstantOfShape reads a [2^32] tensor that only
// inference knows, and libonnx made one output dim per element (2^32 dims: out of memory in
// fuzz_check). The guard refuses the length before libonnx's function runs.
TEST(CliHardening, ShapeLengthKnownOnlyFromInferenceIsBoundedBeforeLibonnxUsesIt) {
  ExpectGuardedEverywhere(
      "cos_of_cos.onnx",
      "h.make_graph([h.make_node('ConstantOfShape', ['n'], ['a'], name='first', "
      "value=h.make_tensor('v', T.INT64, [1], [1])), h.make_node('ConstantOfShape', ['a'], "
      "['y'], name='second')], 'g', [], [h.make_tensor_value_info('y', T.FLOAT, None)], "
      "[h.make_tensor('n', T.INT64, [1], [1 << 32])])",
      13, "second",
      "node 'second' (ConstantOfShape): [ShapeInferenceError] input 0 has 4294967296 elements: "
      "that many output axes, over the 64");
}

}  // namespace
}  // namespace porttool
