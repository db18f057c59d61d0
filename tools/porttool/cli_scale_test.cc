// Output stays bounded however large the model: one Concat reading 100,000 tensors that nothing
// defines has 100,000 findings, and every subcommand must still answer in a screenful, naming
// the first culprit and counting the rest (`check` groups by id, `--json` keeps a count and the
// first 100 of each id). Time and memory growth are measured by scripts/bench/bench_scale.sh,
// not here.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;

constexpr int kInputs = 100000;
constexpr size_t kMaxLines = 1000;  // the bound every subcommand's output must stay under

// The scale models of scripts/gen_scale_models.py at kInputs (needs Debian's python3-onnx).
bool GenerateScaleModels(const TempDir& dir) {
  auto r = testing::RunShell(std::string(testing::kSystemPython) + " " +
                             (testing::SourceDir() / "scripts" / "gen_scale_models.py").string() +
                             " " + dir.path().string() + " " + std::to_string(kInputs));
  return r.exit_code == 0;
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

struct Subcommand {
  const char* args;  // after the model; @ is the output directory
  int exit_code;     // on the model with undefined inputs
};

// check and simplify find errors (exit 1); the rest refuse the broken wiring (exit 3).
const Subcommand kSubcommands[] = {
    {"check", 1},
    {"infer-shapes -o @/i.onnx", 3},
    {"simplify -o @/s.onnx", 1},
    {"fold-constants -o @/f.onnx", 3},
    {"rewrite --rule eliminate-identity -o @/r.onnx", 3},
    {"split --at concat -o @/split", 3},
    {"emit-header -o @/h.h", 3},
    {"decide", 3},
    {"run --random-inputs", 3},
};

std::string Command(const Subcommand& s, const std::string& model, const fs::path& out) {
  std::string args = s.args;
  std::string verb = args.substr(0, args.find(' '));
  std::string rest = args.size() > verb.size() ? args.substr(verb.size()) : "";
  for (size_t at = rest.find('@'); at != std::string::npos; at = rest.find('@')) {
    rest.replace(at, 1, out.string());
  }
  return verb + " " + model + rest;
}

// Runs every subcommand of kSubcommands on `model`, each with a fresh output directory.
template <class Expect>
void ForEachSubcommand(const TempDir& dir, const std::string& model, Expect expect) {
  for (const auto& s : kSubcommands) {
    fs::create_directories(dir / "out");
    SCOPED_TRACE(s.args);
    expect(s, RunPorttool(Command(s, model, dir / "out")));
    fs::remove_all(dir / "out");
  }
}

TEST(CliScale, EverySubcommandAnswersAHundredThousandUndefinedInputsInAScreenful) {
  TempDir dir;
  if (!GenerateScaleModels(dir))
    PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  const std::string model = (dir / ("concat_undefined_" + std::to_string(kInputs) + ".onnx"));
  ForEachSubcommand(dir, model, [](const Subcommand& s, const testing::CommandResult& r) {
    EXPECT_EQ(r.exit_code, s.exit_code) << r.err.substr(0, 2000);
    EXPECT_LE(Lines(r.out) + Lines(r.err), kMaxLines);
    EXPECT_NE((r.out + r.err).find("'t0'"), std::string::npos) << "the first culprit is named";
  });
}

TEST(CliScale, CheckGroupsRepeatedFindingsAndCountsTheRest) {
  TempDir dir;
  if (!GenerateScaleModels(dir))
    PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  const std::string model = (dir / ("concat_undefined_" + std::to_string(kInputs) + ".onnx"));
  auto text = RunPorttool("check " + model);
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(testing::CountOf(text.out, "error[dangling-input] node 'concat' (Concat) reads"), 10u);
  EXPECT_NE(text.out.find("error[dangling-input] and 99,990 more like this"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("FAILED (100002 errors"), std::string::npos) << "the total stays exact";

  auto json = RunPorttool("check " + model + " --json");
  EXPECT_EQ(json.exit_code, 1);
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["errors"], kInputs + 2);
  EXPECT_EQ(doc["counts"]["dangling-input"], kInputs);
  EXPECT_EQ(doc["counts"]["onnx-checker"], 1);
  size_t dangling = 0;
  for (const auto& f : doc["findings"]) dangling += f["id"] == "dangling-input";
  EXPECT_EQ(dangling, 100u) << "the first 100 of the id";
  EXPECT_EQ(doc["findings"].size(), 102u) << "and every finding of the other ids";
  EXPECT_EQ(doc["omitted"], kInputs - 100);
  EXPECT_EQ(doc["findings"][2]["tensor"], "t0") << "in report order";
}

// The same Concat with its 100,000 inputs declared is a valid model: every subcommand succeeds,
// with output that does not grow with the inputs either.
TEST(CliScale, AHundredThousandValidInputsGiveBoundedOutput) {
  TempDir dir;
  if (!GenerateScaleModels(dir))
    PORTTOOL_SKIP_MISSING("needs /usr/bin/python3 with onnx (python3-onnx)");
  const std::string model = (dir / ("concat_inputs_" + std::to_string(kInputs) + ".onnx"));
  ForEachSubcommand(dir, model, [](const Subcommand&, const testing::CommandResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    EXPECT_LE(Lines(r.out) + Lines(r.err), kMaxLines);
  });
}

}  // namespace
}  // namespace porttool
