// Nothing lost, first use smooth (issue 48, item 6): the one rule for replacing an output
// directory, in every subcommand that writes one; a crashed run's staging directory cleared by
// the next run; models of other frameworks named with their exporter; a file given where sample
// data (a directory) is wanted; the shipped target names in --help, the completion and the man
// page; decide without pinned shapes saying what it could not decide.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "lib/util/testing.h"

namespace porttool::cli_safety_test {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::ShellQuote;
using testing::TempDir;

const char* const kPin = "--input-shape images:1x3x64x64";

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every file under `dir` with its bytes (directories as "name/").
std::map<std::string, std::string> Tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string name = fs::relative(e.path(), dir).string();
    out[e.is_directory() ? name + "/" : name] = e.is_directory() ? "" : testing::ReadFile(e.path());
  }
  return out;
}

// A user's project folder: the model and a file of their own.
fs::path MakeProject(const TempDir& tmp) {
  fs::path proj = tmp / "proj";
  fs::create_directories(proj);
  fs::copy_file(testing::DemoModelPath(), proj / "model.onnx");
  testing::WriteFile(proj / "notes.txt", "my notes");
  return proj;
}

// `porttool port proj/model.onnx ... -o proj --force`, as a new user tried it: the folder holding
// the model is never replaced; nor is any folder porttool did not write, with or without --force.
TEST(CliSafety, PortNeverReplacesTheFolderHoldingItsInput) {
  TempDir tmp;
  fs::path proj = MakeProject(tmp);
  const auto before = Tree(tmp.path());
  const std::string port =
      "port " + ShellQuote(proj / "model.onnx") + " --target onnxruntime-cpu " + kPin + " -o ";
  auto r = RunPorttool(port + ShellQuote(proj) + " --force");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, (proj / "model.onnx").string()) && Has(r.err, "an input of this run"))
      << r.err;
  // Its parent (a checkout's root, say) neither.
  r = RunPorttool(port + ShellQuote(tmp.path()) + " --force");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, (proj / "model.onnx").string())) << r.err;
  // A folder of the user's that holds no input is not porttool's to replace either.
  fs::create_directories(tmp / "docs");
  testing::WriteFile(tmp / "docs" / "a.md", "mine");
  r = RunPorttool(port + ShellQuote(tmp / "docs") + " --force");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "porttool did not write it")) << r.err;
  EXPECT_TRUE(Has(r.err, "[-o DIR]")) << r.err;
  EXPECT_EQ(testing::ReadFile(tmp / "docs" / "a.md"), "mine");
  fs::remove_all(tmp / "docs");
  EXPECT_EQ(Tree(tmp.path()), before);
}

// The bundle carries the marker; replacing it takes --force; a bundle folder the user has since
// put an input into (the model, the calibration samples) stays.
TEST(CliSafety, PortReplacesItsOwnBundleOnlyWithForceAndNoInputInside) {
  TempDir tmp;
  fs::path proj = MakeProject(tmp);
  fs::path bundle = proj / "model.port";
  const std::string port = "port " + ShellQuote(proj / "model.onnx") +
                           " --target onnxruntime-cpu " + kPin + " -o " + ShellQuote(bundle);
  auto r = RunPorttool(port);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::ReadFile(bundle / ".porttool-output"),
            "porttool-output 1\nformat: port-bundle\n");
  r = RunPorttool(port);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "--force")) << r.err;
  r = RunPorttool(port + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Calibration samples kept inside the bundle folder: an input, so the folder stays.
  fs::create_directories(bundle / "samples");
  testing::WriteFile(bundle / "samples" / "0.images.npy", "a sample");
  r = RunPorttool(port + " --force --data " + ShellQuote(bundle / "samples"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, (bundle / "samples").string())) << r.err;
  EXPECT_TRUE(fs::exists(bundle / "samples" / "0.images.npy"));
  // The model itself moved into the bundle folder.
  fs::copy_file(proj / "model.onnx", bundle / "model.onnx");
  r = RunPorttool("port " + ShellQuote(bundle / "model.onnx") + " --target onnxruntime-cpu " +
                  kPin + " -o " + ShellQuote(bundle) + " --force");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(fs::exists(bundle / "model.onnx"));
}

struct DirCommand {
  std::string name;
  std::string args;  // without -o
};

// The same rule in every subcommand that writes a directory: an existing folder porttool did
// not write is refused even with --force; its own earlier output is replaced only with --force;
// a folder holding the model never.
TEST(CliSafety, EverySubcommandWritingADirectoryFollowsTheSameRule) {
  TempDir tmp;
  fs::path proj = MakeProject(tmp);
  const std::string model = ShellQuote(proj / "model.onnx");
  auto split = RunPorttool("split " + model + " --at Custom_GELU_0 " + kPin + " -o " +
                           ShellQuote(tmp / "s"));
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const std::vector<DirCommand> commands = {
      {"port", "port " + model + " --target onnxruntime-cpu " + kPin},
      {"split", "split " + model + " --at Custom_GELU_0 " + kPin},
      {"scaffold-op", "scaffold-op " + model + " --node Custom_GELU_0 --target ort " + kPin},
      {"emit-runner", "emit-runner " + ShellQuote(tmp / "s" / "pipeline.json")},
      {"kit", "kit " + model + " --op Relu " + kPin},
  };
  for (const auto& c : commands) {
    SCOPED_TRACE(c.name);
    const fs::path out = tmp / ("out-" + c.name);
    auto r = RunPorttool(c.args + " -o " + ShellQuote(out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(out / ".porttool-output"));
    r = RunPorttool(c.args + " -o " + ShellQuote(out));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(Has(r.err, "--force")) << r.err;
    testing::WriteFile(out / "stale.txt", "from the first run");
    r = RunPorttool(c.args + " -o " + ShellQuote(out) + " --force");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(out / "stale.txt")) << "replaced whole";
    // Not porttool's: refused, with or without --force, and left as it was.
    fs::create_directories(tmp / "mine");
    testing::WriteFile(tmp / "mine" / "a.txt", "mine");
    for (const char* force : {"", " --force"}) {
      r = RunPorttool(c.args + " -o " + ShellQuote(tmp / "mine") + force);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_TRUE(Has(r.err, "porttool did not write it")) << r.err;
    }
    EXPECT_EQ(Tree(tmp / "mine"), (std::map<std::string, std::string>{{"a.txt", "mine"}}));
    // The folder holding the model (and the split, for emit-runner).
    r = RunPorttool(c.args + " -o " + ShellQuote(c.name == "emit-runner" ? tmp / "s" : proj) +
                    " --force");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(Has(r.err, "an input of this run")) << r.err;
  }
  EXPECT_EQ(testing::ReadFile(proj / "notes.txt"), "my notes");
  EXPECT_EQ(testing::ReadFile(proj / "model.onnx"), testing::ReadFile(testing::DemoModelPath()));
}

// Hidden staging directories beside `dir`'s name (".b.tmp-XXXXXX").
std::vector<fs::path> StagingBeside(const fs::path& parent, const std::string& name) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(parent)) {
    if (e.path().filename().string().rfind("." + name + ".tmp-", 0) == 0) out.push_back(e.path());
  }
  return out;
}

// kill -9 during a port leaves its staging directory; the next port writing there removes it.
TEST(CliSafety, ACrashedPortsStagingDirectoryIsClearedByTheNextRun) {
  TempDir tmp;
  const fs::path bundle = tmp / "b";
  const std::string bin = testing::PorttoolBin(), model = testing::DemoModelPath().string();
  bool left_behind = false;
  for (int attempt = 0; attempt < 5 && !left_behind; ++attempt) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int null_fd = ::open("/dev/null", O_WRONLY);
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
      ::execl(bin.c_str(), bin.c_str(), "port", model.c_str(), "--target", "rknn-rk3588",
              "--input-shape", "images:1x3x64x64", "-o", bundle.c_str(), nullptr);
      ::_exit(127);
    }
    // Killed once its staging directory holds a file besides the marker: mid-run.
    bool started = false;
    for (int i = 0; i < 20000 && !started; ++i) {
      for (const auto& staging : StagingBeside(tmp.path(), "b")) {
        for (const auto& e : fs::directory_iterator(staging)) {
          started |= e.path().filename() != ".porttool-output";
        }
      }
      if (!started) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    left_behind = !fs::exists(bundle) && !StagingBeside(tmp.path(), "b").empty();
    fs::remove_all(bundle);
  }
  ASSERT_TRUE(left_behind) << "no run was killed mid-way in 5 attempts";
  auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kPin + " -o " +
                       ShellQuote(bundle));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(StagingBeside(tmp.path(), "b").empty());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"b"});
}

// A minimal zip archive holding `names` (stored entries), as torch.save writes them.
std::string Zip(const std::vector<std::string>& names) {
  auto le = [](uint32_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
  };
  std::string local, central;
  for (const auto& name : names) {
    uint32_t offset = static_cast<uint32_t>(local.size());
    local += std::string("PK\x03\x04", 4) + le(20, 2) + std::string(8, '\0') + le(0, 4) + le(1, 4) +
             le(1, 4) + le(name.size(), 2) + le(0, 2) + name + "x";
    central += std::string("PK\x01\x02", 4) + le(20, 2) + le(20, 2) + std::string(8, '\0') +
               le(0, 4) + le(1, 4) + le(1, 4) + le(name.size(), 2) + std::string(8, '\0') +
               le(0, 4) + le(offset, 4) + name;
  }
  return local + central + std::string("PK\x05\x06", 4) + std::string(4, '\0') +
         le(names.size(), 2) + le(names.size(), 2) + le(central.size(), 4) + le(local.size(), 4) +
         le(0, 2);
}

// A PyTorch checkpoint renamed .onnx is named as such, with the exporter, by every subcommand
// that reads a model (exit 3).
TEST(CliFirstUse, APytorchFileIsNamedByEverySubcommand) {
  TempDir tmp;
  const std::string m = (tmp / "model.onnx").string(), out = (tmp / "out").string();
  testing::WriteFile(m, Zip({"archive/data.pkl", "archive/data/0", "archive/version"}));
  const std::vector<std::string> commands = testing::EveryModelCommand(m, "n", out);
  for (const auto& cmd : commands) {
    auto r = RunPorttool(cmd);
    EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, "a PyTorch checkpoint") && Has(r.err, "torch.onnx.export"))
        << cmd << "\n"
        << r.err;
  }
  EXPECT_EQ(Tree(tmp.path()).size(), 1u) << "a refused command wrote something";
  // A SavedModel directory given as the model.
  fs::create_directories(tmp / "saved");
  testing::WriteFile(tmp / "saved" / "saved_model.pb", "\x08\x01");
  auto r = RunPorttool("check " + ShellQuote(tmp / "saved"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "tf2onnx.convert --saved-model")) << r.err;
}

// --data takes a directory: a file there says so, not that "the directory does not exist".
TEST(CliFirstUse, DataGivenAFileSaysItWantsADirectory) {
  TempDir tmp;
  const std::vector<std::string> commands = {
      "port " + testing::DemoArg() + " --target rknn-rk3588 " + kPin + " -o " +
          ShellQuote(tmp / "b") + " --data ",
      "quantize-calibrate " + testing::DemoArg() + " --data "};
  for (const auto& cmd : commands) {
    auto r = RunPorttool(cmd + testing::DemoArg());
    EXPECT_EQ(r.exit_code, 3) << cmd << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, "is a file, not a sample directory")) << r.err;
    EXPECT_TRUE(Has(r.err, "[--data DIR and --eval-data DIR take a directory]")) << r.err;
    EXPECT_FALSE(Has(r.err, "does not exist")) << r.err;
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

// Every shipped profile name, from rules/targets/.
std::vector<std::string> TargetNames() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "rules" / "targets")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  return names;
}

TEST(CliFirstUse, TargetNamesAppearInHelpCompletionAndManPage) {
  const auto names = TargetNames();
  ASSERT_GE(names.size(), 5u);
  for (const char* sub : {"port", "decide", "check", "split", "emit-runner"}) {
    auto r = RunPorttool(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& n : names) EXPECT_TRUE(Has(r.out, n)) << sub << " --help lacks " << n;
  }
  auto man = RunPorttool("--man");
  EXPECT_TRUE(Has(man.out, ".SH TARGETS")) << man.out;
  for (const auto& n : names) {
    std::string roff;
    for (char c : n) roff += c == '-' ? std::string("\\-") : std::string(1, c);
    EXPECT_TRUE(Has(man.out, ".B " + roff + "\n")) << roff;
  }
  // The completion offers them after --target of a subcommand that takes a profile, and not
  // after scaffold-op's --target (SDK adapters).
  TempDir tmp;
  testing::WriteFile(tmp / "c.bash", RunPorttool("--bash-completion").out);
  // What the completion offers for the last of `words` (the word being completed).
  auto complete = [&](const std::string& words, const std::string& cur) {
    return testing::RunShell(
               "bash -c " +
               ShellQuote("source " + (tmp / "c.bash").string() + "; COMP_WORDS=(" + words + " \"" +
                          cur + "\"); COMP_CWORD=" +
                          std::to_string(std::count(words.begin(), words.end(), ' ') + 1) +
                          "; cd " + tmp.path().string() + "; _porttool; echo \"${COMPREPLY[*]}\""))
        .out;
  };
  std::string offered = complete("porttool port m.onnx --target", "");
  for (const auto& n : names) EXPECT_TRUE(Has(offered, n)) << offered;
  EXPECT_TRUE(Has(complete("porttool decide m.onnx --target", "rknn"), "rknn-rk3588 rknn-rv1106"));
  EXPECT_FALSE(Has(complete("porttool scaffold-op m.onnx --target", ""), "stm32f767"));
}

// Without pinned shapes, decide says what it could not decide; it does not send Conv and Relu
// to custom kernels. With the shape pinned the same target answers verify.
TEST(CliFirstUse, DecideWithoutPinnedShapesSaysWhatItCouldNotDecide) {
  auto r = RunPorttool("decide " + testing::DemoArg() + " --target stm32f767 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["verdict"], "custom-op") << j["verdict_reason"];
  // The one node with remedies is the com.microsoft Gelu, which no shape would place.
  ASSERT_EQ(j["remedies"].size(), 1u) << j["remedies"].dump();
  EXPECT_EQ(j["remedies"][0]["op"], "com.microsoft:Gelu");
  EXPECT_EQ(j["scan"]["counts"]["unsupported"], 1);
  EXPECT_EQ(j["scan"]["counts"]["undecided"], 15);
  bool said = false;
  for (const auto& f : j["scan"]["findings"]) {
    said |= Has(f.get<std::string>(), "Could not decide where") &&
            Has(f.get<std::string>(), "pin the input shape");
  }
  EXPECT_TRUE(said) << j["scan"]["findings"].dump();
  for (const auto& d : j["dimensions"]) {
    if (d["id"] == "hardware") {
      EXPECT_EQ(d["outcome"], "unknown") << d.dump();
    }
  }
  auto text = RunPorttool("decide " + testing::DemoArg() + " --target stm32f767");
  for (const char* op : {"Implement Conv", "Implement Relu", "Implement Add"}) {
    EXPECT_FALSE(Has(text.out, op)) << text.out;
  }
  EXPECT_TRUE(Has(text.out, "Could not decide where")) << text.out;
  auto pinned = RunPorttool("decide " + testing::DemoArg() + " --target stm32f767 " + kPin +
                            " --format json");
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  auto p = nlohmann::json::parse(pinned.out);
  EXPECT_EQ(p["verdict"], "verify");
  EXPECT_FALSE(p["scan"]["counts"].contains("undecided")) << p["scan"]["counts"].dump();
}

}  // namespace
}  // namespace porttool::cli_safety_test
