// `porttool reduce` end to end: a synthetic checker script (a stand-in for a converter that
// aborts on two nodes of the demo model), the exit codes of every bad input the issue lists,
// Ctrl-C, and the numeric check against a copy with one corrupted weight.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::ShellQuote;

// Fails (exit 1) when the candidate still holds both nodes, found by name in its bytes.
constexpr char kTwoNodeCheck[] =
    "--check 'grep -qa block1/Relu {model} && grep -qa up/Resize {model} && exit 1; exit 0'";

struct Work {
  testing::TempDir dir;
  fs::path model = dir / "m.onnx";
  fs::path out = dir / "small.onnx";
  Work() { fs::copy_file(testing::DemoModelPath(), model); }
  std::string Args(const std::string& rest) const {
    return "reduce " + ShellQuote(model) + " -o " + ShellQuote(out) + " --jobs 2 " + rest;
  }
  nlohmann::json Report() const {
    return nlohmann::json::parse(testing::ReadFile(out.string() + ".reduce/reduce.json"));
  }
};

TEST(CliReduce, ReducesTheDemoToTheTwoNodesTheCheckNamesAndLeavesTheInputAlone) {
  Work w;
  std::string before = testing::ReadFile(w.model);
  auto r = RunPorttool(w.Args(kTwoNodeCheck));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("reduced to 2 of 16 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1-minimal"), std::string::npos);
  auto report = w.Report();
  EXPECT_EQ(report["nodes"], nlohmann::json({"block1/Relu", "up/Resize"}));
  EXPECT_TRUE(report["minimal"].get<bool>());
  EXPECT_EQ(report["invocations"].get<int>(),
            static_cast<int>(report["steps"].size()) - report["cache_hits"].get<int>());
  EXPECT_EQ(testing::ReadFile(w.model), before);
  // The result is a model the ONNX checker and porttool accept, and it still fails the check.
  EXPECT_EQ(RunPorttool("check " + ShellQuote(w.out)).exit_code, 0);
  EXPECT_EQ(testing::RunShell("grep -qa block1/Relu " + ShellQuote(w.out)).exit_code, 0);
  EXPECT_EQ(testing::RunShell("grep -qa up/Resize " + ShellQuote(w.out)).exit_code, 0);
  // Passing candidates are not left behind: the work directory holds the best and the record.
  for (const auto& f : testing::RelativeFiles(w.out.string() + ".reduce")) {
    EXPECT_TRUE(f == "best.onnx" || f == "reduce.json" || f == "cache.json" ||
                f == ".porttool-output")
        << f;
  }
}

TEST(CliReduce, JsonPrintsOneDocument) {
  Work w;
  auto r = RunPorttool(w.Args(std::string(kTwoNodeCheck) + " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nodes_left"].get<int>(), 2);
  EXPECT_EQ(doc["output"].get<std::string>(), w.out.string());
}

TEST(CliReduce, ACheckWithoutTheModelPlaceholderIsAUsageError) {
  Work w;
  auto r = RunPorttool(w.Args("--check 'my-converter model.onnx'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("{model}"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(w.out));
}

TEST(CliReduce, ACommandThatIsNotFoundIsAUsageErrorShowingTheShellsMessage) {
  Work w;
  auto r = RunPorttool(w.Args("--check 'no-such-converter-q7 {model}'"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(w.out));
}

TEST(CliReduce, AModelThatPassesFromTheStartIsAFinding) {
  Work w;
  auto r = RunPorttool(w.Args("--check 'test -f {model}'"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("passes on the original"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(w.out));
}

TEST(CliReduce, AFlakyCheckIsDetectedByRunningTheOriginalTwice) {
  Work w;
  fs::path counter = w.dir / "count";
  // Fails on odd calls, passes on even ones: the two checks of the original disagree.
  std::string check = "--check 'n=$(cat " + counter.string() + " 2>/dev/null || echo 0); echo " +
                      "$((n+1)) > " + counter.string() + "; [ $((n % 2)) -eq 1 ] # {model}'";
  auto r = RunPorttool("reduce " + ShellQuote(w.model) + " -o " + ShellQuote(w.out) + " --jobs 1 " +
                       check);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flaky"), std::string::npos) << r.err;
}

TEST(CliReduce, ExitStatusAndOutputCriteriaNarrowFailing) {
  Work w;
  // Every candidate exits 3 (an unrelated error) unless it holds up/Resize, which exits 5.
  std::string check =
      "--check 'grep -qa up/Resize {model} && { echo \"E: Resize unsupported\"; exit 5; }; exit "
      "3' ";
  auto r = RunPorttool(w.Args(check + "--fail-on rc=5"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(w.Report()["nodes"], nlohmann::json({"up/Resize"}));
  auto by_output = RunPorttool(w.Args(check + "--fail-on-output 'Resize unsupported' --force"));
  ASSERT_EQ(by_output.exit_code, 0) << by_output.err;
  EXPECT_EQ(w.Report()["nodes"], nlohmann::json({"up/Resize"}));
  EXPECT_EQ(RunPorttool(w.Args(check + "--fail-on rc=x --force")).exit_code, 2);
}

TEST(CliReduce, AHangCountsAsTheUserSays) {
  Work w;
  std::string check = "--check 'grep -qa head/Sigmoid {model} && sleep 20; exit 0' --timeout 0.3";
  auto r = RunPorttool(w.Args(check + " --on-timeout fail"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(w.Report()["nodes"], nlohmann::json({"head/Sigmoid"}));
}

TEST(CliReduce, AnExistingOutputNeedsForceAndAForeignWorkDirectoryIsRefused) {
  Work w;
  testing::WriteFile(w.out, "mine");
  EXPECT_EQ(RunPorttool(w.Args(kTwoNodeCheck)).exit_code, 2);
  EXPECT_EQ(testing::ReadFile(w.out), "mine");
  fs::create_directories(w.dir / "notes");
  testing::WriteFile(w.dir / "notes" / "todo.txt", "keep");
  auto r = RunPorttool(
      w.Args(std::string(kTwoNodeCheck) + " --force --work-dir " + ShellQuote(w.dir / "notes")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did not write"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadFile(w.dir / "notes" / "todo.txt"), "keep");
  EXPECT_EQ(RunPorttool(w.Args(std::string(kTwoNodeCheck) + " --force")).exit_code, 0);
}

TEST(CliReduce, CtrlCKeepsTheBestModelSoFarAndAConsistentWorkDirectory) {
  Work w;
  fs::path work = w.out.string() + ".reduce";
  // A slow check, interrupted once the original has been checked (best.onnx exists).
  std::string script = testing::PorttoolBin() + " " +
                       w.Args("--check 'sleep 0.3; grep -qa up/Resize {model} && exit 1; exit 0'") +
                       " >/dev/null 2>&1 & pid=$!; while [ ! -f " + ShellQuote(work / "best.onnx") +
                       " ]; do sleep 0.05; done; kill -INT $pid; wait $pid; echo rc=$?";
  auto r = testing::RunShell(script);
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out << r.err;
  ASSERT_TRUE(fs::exists(w.out));
  EXPECT_EQ(RunPorttool("check " + ShellQuote(w.out)).exit_code, 0);
  auto report = w.Report();
  EXPECT_TRUE(report["interrupted"].get<bool>());
  EXPECT_FALSE(report["minimal"].get<bool>());
  for (const auto& f : testing::RelativeFiles(work)) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  }
}

TEST(CliReduce, NumericFindsTheConvWhoseWeightsWereCorrupted) {
  Work w;
  io::Model model = io::Load(w.model);
  for (auto& init : *model.proto.mutable_graph()->mutable_initializer()) {
    if (init.name() != "neck.conv.weight") continue;
    for (auto& v : *init.mutable_float_data()) v += 1e-2f;
    auto* raw = init.mutable_raw_data();
    for (size_t i = 0; i + 4 <= raw->size(); i += 4) {
      float v;
      std::memcpy(&v, raw->data() + i, 4);
      v += 1e-2f;
      std::memcpy(raw->data() + i, &v, 4);
    }
  }
  fs::path bad = w.dir / "bad.onnx";
  io::Save(model, bad);
  auto r = RunPorttool("reduce " + ShellQuote(bad) + " -o " + ShellQuote(w.out) +
                       " --numeric --against " + ShellQuote(w.model) +
                       " --input-shape images:1x3x32x32 --jobs 2");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(w.Report()["nodes"], nlohmann::json({"neck/Conv"}));
  EXPECT_EQ(
      RunPorttool("reduce " + ShellQuote(bad) + " --numeric -o " + ShellQuote(w.dir / "x.onnx"))
          .exit_code,
      2);  // --numeric without --against
}

TEST(CliReduce, AKnownGoodModelMustPassTheCheckFirst) {
  Work w;
  fs::path good = w.dir / "good.onnx";
  // A model without block1/Relu: the two-node check passes on it.
  auto extracted =
      RunPorttool("extract " + ShellQuote(w.model) +
                  " --inputs block2.out,stem.out --outputs score -o " + ShellQuote(good));
  ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
  auto r = RunPorttool(w.Args(std::string(kTwoNodeCheck) + " --check-pass-on " + ShellQuote(good)));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto bad = RunPorttool(
      w.Args(std::string(kTwoNodeCheck) + " --force --check-pass-on " + ShellQuote(w.model)));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("known-good"), std::string::npos) << bad.err;
}

TEST(CliReduce, NumericAgainstItsQdqTwinFindsTheFirstQuantizedNode) {
  Work w;
  fs::create_directories(w.dir / "data");
  for (int s = 0; s < 2; ++s) {
    runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, 32, 32});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = ((i * 7 + s) % 13) / 13.f;
    runtime::WriteNpy(w.dir / "data" / ("s" + std::to_string(s) + ".images.npy"), t);
  }
  fs::path table = w.dir / "t.json";
  auto q = RunPorttool("quantize-calibrate " + ShellQuote(w.model) + " --data " +
                       ShellQuote(w.dir / "data") + " --no-eval --table " + ShellQuote(table));
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto r =
      RunPorttool(w.Args("--numeric --against qdq --table " + ShellQuote(table) +
                         " --input-shape images:1x3x32x32 --data " + ShellQuote(w.dir / "data")));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(w.Report()["nodes"], nlohmann::json({"stem/Conv"}));
  EXPECT_EQ(RunPorttool(w.Args("--numeric --against qdq --force")).exit_code, 2);  // no --table
}

}  // namespace
}  // namespace porttool
