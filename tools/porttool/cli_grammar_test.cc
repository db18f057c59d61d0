// The one CLI grammar end to end: refused in-place writes (model and external data), messages for
// the commonest slips, JSON error documents, exit-code consistency, run statistics and profile,
// --rules-dir / --target FILE, --version, and the generated completion and man page.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool::cli {
namespace {

using porttool::testing::CommandResult;
using porttool::testing::RunPorttool;
using porttool::testing::TempDir;
using porttool::testing::TestData;
namespace fs = std::filesystem;

std::string Q(const fs::path& p) { return "'" + p.string() + "'"; }

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A copy of the demo model whose weights live in `m.data` next to it.
fs::path ExternalDemo(const TempDir& dir) {
  auto r =
      RunPorttool("infer-shapes " + testing::DemoArg() + " --input-shape images:1x3x64x64 -q -o " +
                  Q(dir / "m.onnx") + " --external-data m.data --external-threshold 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "m.data"));
  return dir / "m.onnx";
}

TEST(CliInPlace, EveryWriterRefusesToOverwriteTheModel) {
  TempDir dir;
  fs::copy_file(TestData("demo_detector.onnx"), dir / "m.onnx");
  std::string m = Q(dir / "m.onnx");
  std::string before = util::Sha256File(dir / "m.onnx");
  // Model writers offer --in-place; a report or header never replaces the model.
  const std::pair<std::string, bool> commands[] = {
      {"infer-shapes " + m + " -o " + m, true},
      {"extract " + m + " --inputs images --outputs score -o " + m, true},
      {"chain " + m + " -p topo-sort -o " + m, true},
      {"emit-header " + m + " --input-shape images:1x3x64x64 -o " + m, false},
      {"emit-header " + m + " --input-shape images:1x3x64x64 -o " + Q(dir / "x.h") + " --weights " +
           m,
       false},
      {"decide " + m + " -o " + m, false},
  };
  for (const auto& [c, offers_in_place] : commands) {
    CommandResult r = RunPorttool(c);
    EXPECT_EQ(r.exit_code, 2) << c << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, "refusing to write")) << c << "\n" << r.err;
    EXPECT_EQ(Has(r.err, "--in-place"), offers_in_place) << c << "\n" << r.err;
    EXPECT_EQ(util::Sha256File(dir / "m.onnx"), before) << c;
  }
  EXPECT_FALSE(fs::exists(dir / "x.h"));
  // Through another path to the same file, too.
  auto r = RunPorttool("infer-shapes " + m + " -o " + Q(dir / "." / "m.onnx"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunPorttool("infer-shapes " + m + " --input-shape images:1x3x64x64 -o " + m +
                  " --in-place -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliInPlace, RefusesToOverwriteTheModelsExternalData) {
  TempDir dir;
  fs::path model = ExternalDemo(dir);
  std::string data_before = util::Sha256File(dir / "m.data");
  // -o elsewhere, but the data file named is the one the input reads its weights from.
  auto r = RunPorttool("infer-shapes " + Q(model) + " -o " + Q(dir / "out.onnx") +
                       " --external-data m.data");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "m.data")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.onnx"));
  // -o naming the data file itself.
  r = RunPorttool("extract " + Q(model) + " --inputs images --outputs score -o " +
                  Q(dir / "m.data"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "external data")) << r.err;
  EXPECT_EQ(util::Sha256File(dir / "m.data"), data_before);
  // Another data file is fine, and the input still loads afterwards.
  r = RunPorttool("infer-shapes " + Q(model) + " -o " + Q(dir / "out.onnx") +
                  " --external-data out.data -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(RunPorttool("inspect " + Q(model) + " -q").exit_code, 0);
}

TEST(CliMessages, UnknownSubcommandSuggestsTheCloseOne) {
  auto r = RunPorttool("chek " + testing::DemoArg());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "unknown subcommand 'chek'; did you mean 'check'?")) << r.err;
  EXPECT_TRUE(Has(r.err, "emit-header")) << r.err;  // lists the subcommands
  r = RunPorttool("frobnicate " + testing::DemoArg());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(Has(r.err, "did you mean")) << r.err;
}

TEST(CliMessages, CommaSeparatedDimsSayHowToWriteThem) {
  TempDir dir;
  auto r = RunPorttool("infer-shapes " + testing::DemoArg() + " -o " + Q(dir / "s.onnx") +
                       " --input-shape images:1,3,64,64");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "separated by 'x'")) << r.err;
  EXPECT_TRUE(Has(r.err, "images:1x3x64x64")) << r.err;
  EXPECT_TRUE(Has(r.err, "--input-shape")) << r.err;
}

TEST(CliMessages, NumericRangesInPlainNumbers) {
  TempDir dir;
  auto r = RunPorttool("infer-shapes " + testing::DemoArg() + " -o " + Q(dir / "s.onnx") +
                       " --max-iterations 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "from 1 to 1000")) << r.err;
  EXPECT_FALSE(Has(r.err, "179769")) << r.err;
  r = RunPorttool("run " + testing::DemoArg() + " --threads 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "from 1 to 1024")) << r.err;
}

TEST(CliMessages, SuggestionsOnlyForCloseNames) {
  auto r = RunPorttool("check " + testing::DemoArg() + " --target bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(Has(r.err, "did you mean")) << r.err;
  EXPECT_TRUE(Has(r.err, "rknn-rk3588")) << r.err;  // the list of shipped targets stays
  r = RunPorttool("check " + testing::DemoArg() + " --target rknn-rk3589");
  EXPECT_TRUE(Has(r.err, "did you mean 'rknn-rk3588'")) << r.err;
  r = RunPorttool("split " + testing::DemoArg() + " --at zzzzzzzzzzzz");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(Has(r.err, "closest")) << r.err;
}

TEST(CliMessages, SameMistakeSameExitCode) {
  TempDir dir;
  auto made = RunPorttool("run " + testing::DemoArg() +
                          " --random-inputs --input-shape images:1x3x8x8 -q " + "--output-dir " +
                          Q(dir / "o"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Unknown input name (run), unknown tensor (extract), unknown node (split): all usage, 2.
  auto r = RunPorttool("run " + testing::DemoArg() +
                       " --input-shape images:1x3x8x8 --random-inputs --input " +
                       "nope=" + Q(dir / "o" / "score.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "nope")) << r.err;
  r = RunPorttool("extract " + testing::DemoArg() + " --inputs nope --outputs score -o " +
                  Q(dir / "e.onnx"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunPorttool("split " + testing::DemoArg() + " --at nope -o " + Q(dir / "s"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunPorttool("infer-shapes " + testing::DemoArg() + " --input-shape nope:1 -o " +
                  Q(dir / "i.onnx"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// The library's messages name their subject in words; the CLI appends the flag that sets it.
TEST(CliMessages, LibraryErrorsGetTheFlagThatFixesThem) {
  TempDir dir;
  auto r = RunPorttool("split " + testing::DemoArg() + " --at stem.out -o " + Q(dir / "s"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "[--at NODE]")) << r.err;
  r = RunPorttool("run " + testing::DemoArg() + " --input-shape images:1x3x8x8");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "[--input NAME=FILE or --random-inputs]")) << r.err;
  r = RunPorttool("run " + testing::DemoArg() + " --random-inputs");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "[--input-shape NAME:DIMS]")) << r.err;
  std::string emit =
      "emit-header " + testing::DemoArg() + " --input-shape images:1x3x8x8 -o " + Q(dir / "d.h");
  r = RunPorttool(emit + " --align 3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Has(r.err, "[--align N]")) << r.err;
  r = RunPorttool(emit + " --prefix 1x");
  EXPECT_TRUE(Has(r.err, "[--prefix NAME]")) << r.err;
  r = RunPorttool(emit + " --weights w.txt");
  EXPECT_TRUE(Has(r.err, "[--weights FILE.bin|FILE.c]")) << r.err;
}

TEST(CliJsonErrors, ErrorsAreOneJsonDocumentOnStdout) {
  TempDir dir;
  // A library error (unknown input) ...
  auto r = RunPorttool("infer-shapes " + testing::DemoArg() + " --input-shape nope:1x3 -o " +
                       Q(dir / "s.onnx") + " --json");
  EXPECT_EQ(r.exit_code, 2);
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["error"]["kind"], "usage");
  EXPECT_EQ(doc["error"]["exit_code"], 2);
  EXPECT_EQ(doc["error"]["tensor"], "nope");
  EXPECT_TRUE(Has(doc["error"]["message"], "not a graph input")) << r.out;
  // ... a command-line parse error ...
  r = RunPorttool("run " + testing::DemoArg() + " --threads 0 --json");
  EXPECT_EQ(r.exit_code, 2);
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["error"]["kind"], "usage");
  EXPECT_TRUE(Has(doc["error"]["message"], "--threads")) << r.out;
  // ... and bad input (exit 3), decide's --format json included.
  porttool::testing::WriteFile(dir / "junk.onnx", "not a model");
  r = RunPorttool("decide " + Q(dir / "junk.onnx") + " --format json");
  EXPECT_EQ(r.exit_code, 3);
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["error"]["kind"], "bad_input");
  // Without --json stdout stays empty.
  r = RunPorttool("inspect " + Q(dir / "junk.onnx"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliRun, OutputStatisticsMatchNumpy) {
  TempDir dir;
  auto r =
      RunPorttool("run " + testing::DemoArg() + " --random-inputs --input-shape images:1x3x16x16 " +
                  "--output-dir " + Q(dir / "o") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = nlohmann::json::parse(r.out)["outputs"][0];
  auto py = porttool::testing::RunShell(
      std::string(porttool::testing::kSystemPython) +
      " -c \"import numpy as n,sys; a=n.load(sys.argv[1]).astype(n.float64); "
      "print(a.min(), a.max(), a.mean(), int(n.isnan(a).sum()))\" " +
      Q(dir / "o" / "score.npy"));
  ASSERT_EQ(py.exit_code, 0) << py.err;
  double mn = 0, mx = 0, mean = 0;
  int nan = -1;
  ASSERT_EQ(std::sscanf(py.out.c_str(), "%lf %lf %lf %d", &mn, &mx, &mean, &nan), 4) << py.out;
  EXPECT_DOUBLE_EQ(out["min"].get<double>(), mn);
  EXPECT_DOUBLE_EQ(out["max"].get<double>(), mx);
  EXPECT_NEAR(out["mean"].get<double>(), mean, 1e-9 * std::max(1.0, std::abs(mean)));
  EXPECT_EQ(out["nan_count"], nan);
  EXPECT_EQ(out["dtype"], "float32");
  EXPECT_EQ(out["shape"], (nlohmann::json{1, 1, 8, 8}));
  auto text =
      RunPorttool("run " + testing::DemoArg() + " --random-inputs --input-shape images:1x3x16x16");
  EXPECT_TRUE(Has(text.out, "min ") && Has(text.out, "mean ") && Has(text.out, "nan 0"))
      << text.out;
}

TEST(CliRun, ProfileCoversEveryNodeAndOpType) {
  auto r =
      RunPorttool("run " + testing::DemoArg() +
                  " --random-inputs --input-shape images:1x3x32x32 --repeat 2 --profile --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto profile = nlohmann::json::parse(r.out)["profile"];
  EXPECT_EQ(profile["runs"], 2);
  EXPECT_EQ(profile["nodes"].size(), 16u);  // the demo model's node count
  std::set<std::string> names;
  for (const auto& n : profile["nodes"]) {
    EXPECT_GE(n["ms"].get<double>(), 0.0);
    names.insert(n["node"].get<std::string>());
  }
  EXPECT_TRUE(names.count("Custom_GELU_0"));
  EXPECT_TRUE(profile["op_types"].contains("Conv"));
  EXPECT_TRUE(profile["op_types"].contains("Gelu"));
  auto text = RunPorttool("run " + testing::DemoArg() +
                          " --random-inputs --input-shape images:1x3x32x32 --profile --top 3");
  EXPECT_TRUE(Has(text.out, "top 3 nodes")) << text.out;
  EXPECT_TRUE(Has(text.out, "by op type")) << text.out;
  EXPECT_TRUE(Has(text.out, "... and 13 more node(s)")) << text.out;
  // Every op-type row is a share of the header's total: with all of them shown they add up to
  // 100 % (rounding aside), never more. Text latencies have significant figures, not "0.01".
  text = RunPorttool("run " + testing::DemoArg() +
                     " --random-inputs --input-shape images:1x3x32x32 --profile --top 100");
  std::istringstream lines(text.out.substr(text.out.find("by op type:")));
  std::string line;
  double percent = 0;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    size_t ms = line.find(" ms ");
    ASSERT_NE(ms, std::string::npos) << line;
    percent += std::stod(line.substr(ms + 4, line.find('%') - ms - 4));
  }
  EXPECT_GT(percent, 99.0) << text.out;
  EXPECT_LE(percent, 100.5) << text.out;
  EXPECT_FALSE(Has(text.out, " 0.00 ms")) << text.out;
}

TEST(CliRules, RulesDirAndTargetFileEverywhere) {
  auto rules = porttool::testing::SourceDir() / "rules";
  std::string by_name = RunPorttool("check " + testing::DemoArg() +
                                    " --target rknn-rk3588 --input-shape images:1x3x64x64 --json")
                            .out;
  auto by_file = RunPorttool("check " + testing::DemoArg() + " --target " +
                             Q(rules / "targets" / "rknn-rk3588.json") +
                             " --input-shape images:1x3x64x64 --json");
  EXPECT_EQ(by_file.exit_code, 1) << by_file.err;  // the custom op is unsupported there
  EXPECT_EQ(nlohmann::json::parse(by_file.out)["target"], nlohmann::json::parse(by_name)["target"]);
  TempDir dir;
  for (const std::string& c :
       {"check " + testing::DemoArg() + " --target rknn-rk3588",
        "decide " + testing::DemoArg() + " --target rknn-rk3588",
        "split " + testing::DemoArg() + " --auto --target rknn-rk3588 -o " + Q(dir / "s"),
        std::string("rules validate")}) {
    auto r = RunPorttool(c + " -q --rules-dir " + Q(dir / "nowhere"));
    EXPECT_EQ(r.exit_code, 3) << c << "\n" << r.err;  // the same for every reader
    EXPECT_TRUE(Has(r.err, "no rule files under")) << c << "\n" << r.err;
    EXPECT_TRUE(Has(r.err, "nowhere")) << c << "\n" << r.err;
  }
}

TEST(CliChain, WithoutOutputSaysNothingWasWritten) {
  auto r = RunPorttool("chain " + testing::DemoArg() + " -p topo-sort");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "nothing written")) << r.out;
  r = RunPorttool("chain " + testing::DemoArg() + " -p topo-sort --json");
  EXPECT_EQ(nlohmann::json::parse(r.out)["written"], false);
}

TEST(CliFoundation, VersionNamesOnnxAndProtobuf) {
  auto r = RunPorttool("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Has(r.out, "ONNX 1.")) << r.out;
  EXPECT_TRUE(Has(r.out, "protobuf 3.")) << r.out;
}

TEST(CliFoundation, VerboseGivesStageTimings) {
  auto r = RunPorttool("inspect " + testing::DemoArg() + " -v");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "load ") && Has(r.err, " ms")) << r.err;
  EXPECT_TRUE(Has(r.err, "16 nodes")) << r.err;
  r = RunPorttool("inspect " + testing::DemoArg());
  EXPECT_FALSE(Has(r.err, " ms")) << r.err;
}

TEST(CliDocs, CompletionAndManPageComeFromTheDefinitions) {
  auto bash = RunPorttool("--bash-completion");
  ASSERT_EQ(bash.exit_code, 0);
  EXPECT_TRUE(Has(bash.out, "complete -o filenames -F _porttool porttool")) << bash.out;
  EXPECT_TRUE(Has(bash.out, "emit-header) words=")) << bash.out;
  EXPECT_TRUE(Has(bash.out, "--input-shape")) << bash.out;
  EXPECT_TRUE(Has(bash.out, "--profile")) << bash.out;
  TempDir dir;
  porttool::testing::WriteFile(dir / "porttool.bash", bash.out);
  auto check = porttool::testing::RunShell("bash -n " + Q(dir / "porttool.bash"));
  EXPECT_EQ(check.exit_code, 0) << check.err;
  auto man = RunPorttool("--man");
  ASSERT_EQ(man.exit_code, 0);
  EXPECT_TRUE(Has(man.out, ".TH PORTTOOL 1")) << man.out;
  EXPECT_TRUE(Has(man.out, "\\-\\-rules\\-dir")) << man.out;
  EXPECT_TRUE(Has(man.out, ".SH EXIT STATUS")) << man.out;
}

}  // namespace
}  // namespace porttool::cli
