// The output guard (lib/io/run_inputs.h), from the CLI's own option table: every output option
// of every subcommand (the options typed OUT_FILE or OUT_DIR, so a new one is covered as soon as
// it is declared) is given the run's input — as itself, through ./, ../, a symlink and a hard
// link, and for a directory output the folder holding it — and must be refused with exit 2
// without the input's bytes or inode changing and without a staging file left behind. Then every
// other option that takes a value gets the hard link too: whatever it does with it, the input
// stays as it was and the exit code is a documented one. The hostile round found
// `quantize-calibrate M --data D --table M` overwriting the model with its table, exit 0.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// What a subcommand needs besides the option under test, with MODEL, DATA and OUT standing for
// the input, a sample folder and a fresh output folder; `outputs` are its required output
// options, given fresh paths unless they are the option under test.
struct Base {
  std::string args;
  std::map<std::string, std::string> outputs;
};

const std::map<std::string, Base>& Bases() {
  static const std::map<std::string, Base> bases = {
      {"port", {"port MODEL --target onnxruntime-cpu --input-shape images:1x3x32x32", {}}},
      {"check", {"check MODEL --fix", {}}},
      {"infer-shapes",
       {"infer-shapes MODEL --input-shape images:1x3x32x32", {{"--output", "OUT/m.onnx"}}}},
      {"chain", {"chain MODEL -p eliminate-identity", {}}},
      {"split", {"split MODEL --at Custom_GELU_0", {}}},
      {"extract", {"extract MODEL --inputs images --outputs score", {{"--output", "OUT/m.onnx"}}}},
      {"run", {"run MODEL --random-inputs --input-shape images:1x3x32x32", {}}},
      {"compare", {"compare MODEL MODEL --input-shape images:1x3x32x32", {}}},
      {"diff", {"diff MODEL MODEL", {}}},
      {"emit-header",
       {"emit-header MODEL --input-shape images:1x3x32x32", {{"--output", "OUT/m.h"}}}},
      {"emit-runner", {"emit-runner PIPELINE", {{"--output", "OUT/runner"}}}},
      {"decide", {"decide MODEL", {}}},
      {"quantize-calibrate", {"quantize-calibrate MODEL --data DATA --no-eval", {}}},
      {"fold-constants", {"fold-constants MODEL", {{"--output", "OUT/m.onnx"}}}},
      {"simplify", {"simplify MODEL", {{"--output", "OUT/m.onnx"}}}},
      {"rewrite", {"rewrite MODEL --rule decompose-gelu", {{"--output", "OUT/m.onnx"}}}},
      {"scaffold-op", {"scaffold-op MODEL --node Custom_GELU_0", {{"--output", "OUT/op"}}}},
      {"kit", {"kit MODEL --all", {}}},
      {"reduce", {"reduce MODEL --check 'exit 1 # {model}' --jobs 1", {}}},
  };
  return bases;
}

struct OptionRef {
  std::string command, name;  // name: the long name, "--output"
  bool output = false, directory = false;
};

// Every option of every subcommand that takes a value, from the same table Main parses with.
std::vector<OptionRef> ValueOptions() {
  CLI::App app;
  cli::RunFn run;
  cli::RegisterAll(app, run);
  std::vector<OptionRef> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_lnames().empty() || opt->get_type_size() == 0) continue;  // flags, positionals
      const std::string type = opt->get_type_name();
      bool file = type == cli::kOutputFileType, dir = type == cli::kOutputDirType;
      out.push_back({sub->get_name(), "--" + opt->get_lnames()[0], file || dir, dir});
    }
  }
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

struct FileState {
  ino_t inode = 0;
  std::string bytes;
  bool operator==(const FileState& o) const { return inode == o.inode && bytes == o.bytes; }
};

FileState StateOf(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return {st.st_ino, testing::ReadFile(p)};
}

// A work folder `w/` holding the model (and its names: a symlink and a hard link), a sample
// folder and a split of the model for emit-runner; commands run from inside it.
class OutputGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = dir_ / "w";
    fs::create_directories(work_ / "data");
    fs::copy_file(testing::DemoModelPath(), work_ / "m.onnx");
    fs::create_symlink("m.onnx", work_ / "link.onnx");
    fs::create_hard_link(work_ / "m.onnx", work_ / "hard.onnx");
    fs::create_directory_symlink(work_, dir_ / "wlink");
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (int s = 0; s < 2; ++s) {
      runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 32, 32});
      for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = u(rng);
      runtime::WriteNpy(work_ / "data" / fmt::format("s{}.images.npy", s), t);
    }
    auto split = RunHere("split m.onnx --at Custom_GELU_0 --input-shape images:1x3x32x32 -o split");
    ASSERT_EQ(split.exit_code, 0) << split.err;
    before_ = Snapshot();
  }

  testing::CommandResult RunHere(const std::string& args) {
    // timeout: a hang shows as exit 124 instead of stopping the suite.
    return testing::RunShell(fmt::format("cd {} && timeout 120 {} {}", testing::ShellQuote(work_),
                                         testing::PorttoolBin(), args));
  }

  // The input of `command` and every name it has, with their state.
  std::map<fs::path, FileState> Snapshot() {
    std::map<fs::path, FileState> s;
    for (const char* name :
         {"m.onnx", "hard.onnx", "link.onnx", "split/pipeline.json", "data/s0.images.npy"}) {
      s[name] = StateOf(work_ / name);
    }
    return s;
  }

  // Fails the test when an input changed or a staging file was left in the work folder.
  void ExpectInputsIntact(const std::string& what) {
    auto now = Snapshot();
    for (const auto& [name, state] : before_) {
      EXPECT_TRUE(now[name] == state) << what << ": " << name << " changed";
    }
    for (const auto& e : fs::directory_iterator(work_)) {
      std::string f = e.path().filename().string();
      EXPECT_EQ(f.find(".tmp-"), std::string::npos) << what << ": left " << f;
    }
  }

  std::string Command(const OptionRef& opt, const std::string& value) {
    const Base& base = Bases().at(opt.command);
    std::string model = opt.command == "emit-runner" ? "PIPELINE" : "MODEL";
    std::string args =
        Replace(base.args, model, opt.command == "emit-runner" ? "split/pipeline.json" : "m.onnx");
    args = Replace(Replace(args, "DATA", "data"), "OUT", (dir_ / "out").string());
    // --external-data names a file in the model output's folder: put that in the work folder.
    if (opt.name == "--external-data") args += " --output e.onnx";
    for (const auto& [name, path] : base.outputs) {
      if (name == opt.name || (opt.name == "--external-data" && name == "--output")) continue;
      args += " " + name + " " + Replace(path, "OUT", (dir_ / "out").string());
    }
    return args + " " + opt.name + " " + value;
  }

  TempDir dir_;
  fs::path work_;
  std::map<fs::path, FileState> before_;
};

TEST_F(OutputGuard, EveryOutputOptionHasABaseCommand) {
  std::set<std::string> missing;
  for (const auto& opt : ValueOptions()) {
    if (opt.output && !Bases().count(opt.command)) missing.insert(opt.command);
  }
  EXPECT_TRUE(missing.empty()) << "add a base command to Bases() for: "
                               << fmt::format("{}", fmt::join(missing, ", "));
}

TEST_F(OutputGuard, AnOptionNamedLikeAnOutputIsTypedAsOne) {
  for (const auto& opt : ValueOptions()) {
    bool looks = opt.name == "--output" || opt.name.find("output-dir") != std::string::npos ||
                 opt.name == "--save-outputs" || opt.name == "--weights" || opt.name == "--qdq" ||
                 opt.name == "--trt-cache";
    EXPECT_TRUE(!looks || opt.output)
        << opt.command << " " << opt.name << ": an output must be typed OUT_FILE or OUT_DIR";
  }
}

TEST_F(OutputGuard, EveryOutputOptionRefusesTheInputUnderEverySpelling) {
  fs::create_directories(dir_ / "out");
  int runs = 0, options = 0;
  for (const auto& opt : ValueOptions()) {
    if (!opt.output) continue;
    ++options;
    std::string input = opt.command == "emit-runner" ? "split/pipeline.json" : "m.onnx";
    std::vector<std::string> spellings = {input, "./" + input};
    if (opt.name != "--external-data") {  // a file name in -o's folder, not a path
      spellings.insert(spellings.end(), {"../w/" + input, (dir_ / "wlink" / input).string()});
    }
    if (opt.command != "emit-runner") {
      spellings.insert(spellings.end(), {"link.onnx", "hard.onnx"});
    }
    if (opt.directory) {
      std::string folder = opt.command == "emit-runner" ? "split" : ".";
      spellings.insert(spellings.end(), {folder, "../w/" + folder, (dir_ / "wlink").string()});
    }
    if (opt.command == "quantize-calibrate") spellings.push_back("data/s0.images.npy");
    for (const auto& spelling : spellings) {
      std::string args = Command(opt, spelling);
      auto r = RunHere(args);
      ++runs;
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
      EXPECT_NE(r.err.find("input"), std::string::npos)
          << args << ": the message must name the input\n"
          << r.err;
      ExpectInputsIntact(args);
    }
  }
  EXPECT_GT(runs, 100);
  std::printf("%d refused runs over %d output options\n", runs, options);
}

TEST_F(OutputGuard, AnyOtherOptionGivenTheInputLeavesItIntact) {
  fs::create_directories(dir_ / "out");
  int runs = 0;
  for (const auto& opt : ValueOptions()) {
    if (opt.output || !Bases().count(opt.command)) continue;
    ++runs;
    std::string args = Command(opt, "hard.onnx");
    auto r = RunHere(args);
    EXPECT_LE(r.exit_code, 3) << args << ": exit " << r.exit_code << "\n" << r.err;
    ExpectInputsIntact(args);
  }
  std::printf("%d other options given the input's hard link\n", runs);
}

}  // namespace
}  // namespace porttool
