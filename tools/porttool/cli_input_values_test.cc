// `--input-value` and `--input-range` through the subcommands, on testdata/vad.onnx (a
// voice-activity detector shaped like Silero VAD, scripts/gen_vad_model.py): every malformed or
// misfitting value is exit 2 naming the input and writing nothing; a known sample rate lets
// simplify inline every If (the outer one on the value, the nested ones on shapes) into a graph
// that computes what the model computes at that rate; ranges keep the random inputs of run and
// split --verify on the branch the model is meant for; scaffold-op refuses a node with a subgraph.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::TempDir;
using testing::TestData;

std::string Vad() { return TestData("vad.onnx").string(); }

int CountOpIn(const io::Model& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.proto.graph().node()) n += node.op_type() == op;
  return n;
}

std::vector<std::string> InputNames(const io::Model& m) {
  std::vector<std::string> names;
  for (const auto& vi : m.proto.graph().input()) names.push_back(vi.name());
  return names;
}

TEST(CliInputValues, MalformedOrMisfittingValuesAreUsageErrorsAndWriteNothing) {
  TempDir dir;
  fs::path out = dir / "out.onnx";
  runtime::Tensor float_sr(onnx::TensorProto::FLOAT, {});
  float_sr.mutable_data<float>()[0] = 16000.0f;
  runtime::WriteNpy(dir / "sr.npy", float_sr);
  struct Case {
    std::string value, message;
  };
  const Case cases[] = {
      {"srate=16000",
       "input value: 'srate' is not a graph input; the inputs are: input float32 "
       "1x512, sr int64 scalar, h float32 1x1x32, c float32 1x1x32"},
      {"sr=16k", "--input-value 'sr=16k': '16k' is not a number"},
      {"sr=", "--input-value 'sr=': expected NAME=NUMBER"},
      {"sr=0.5", "input value: 'sr' is int64, which cannot hold 0.5"},
      {"sr=1,2", "input value: 'sr' is a scalar in the model; 2 value(s) were given"},
      {"h=1,2", "input value: 'h' is [1,1,32] in the model; 2 value(s) were given"},
      {"sr=" + (dir / "sr.npy").string(), "'sr' is int64 in the model; the file holds float32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto r = RunPorttool("simplify " + Vad() + " --input-value " + c.value + " -o " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  auto r = RunPorttool("simplify " + Vad() + " --input-value srate=1 -o " + out.string());
  EXPECT_NE(r.err.find("[--input-value NAME=VALUE]"), std::string::npos) << r.err;
  r = RunPorttool("simplify " + Vad() + " --input-value sr=1 --input-value sr=2 -o " +
                  out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'sr' is given more than once"), std::string::npos) << r.err;
  r = RunPorttool("run " + Vad() + " --random-inputs --input-range sr=9:x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected NAME=LO:HI with two numbers"), std::string::npos) << r.err;
  r = RunPorttool("run " + Vad() + " --random-inputs --input-range rate=1:2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("input range: 'rate' is not a graph input"), std::string::npos) << r.err;
}

// Feeds for the VAD's inputs (the sample rate only when the model still has it).
runtime::TensorMap VadFeeds(const io::Model& m, int64_t sr) {
  runtime::Session session(m);
  runtime::TensorMap feeds = runtime::RandomInputs(session, 3, {{"input", {-1, 1}}});
  if (feeds.count("sr")) feeds["sr"].mutable_data<int64_t>()[0] = sr;
  return feeds;
}

// simplify with a known rate: no If left, sr no longer an input, and the same outputs as the
// model with its Ifs at that rate (the 8 kHz path's value-dependent Reshape folds too).
TEST(CliInputValues, SimplifyInlinesEveryIfForAKnownSampleRate) {
  io::Model original = io::Load(Vad());
  for (int64_t rate : {16000, 8000}) {
    SCOPED_TRACE(rate);
    TempDir dir;
    fs::path out = dir / "vad.sim.onnx";
    auto r = RunPorttool("simplify " + Vad() + " --input-value sr=" + std::to_string(rate) +
                         " -o " + out.string() + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto doc = nlohmann::json::parse(r.out);
    EXPECT_GE(doc["rounds"].get<int>(), 2);  // the nested Ifs' conditions fold in a later round
    io::Model m = io::Load(out);
    EXPECT_EQ(CountOpIn(m, "If"), 0);
    EXPECT_EQ(InputNames(m), (std::vector<std::string>{"input", "h", "c"}));
    EXPECT_EQ(CountOpIn(m, "LSTM"), 1);
    runtime::TensorMap feeds = VadFeeds(original, rate);
    runtime::Session a(original), b(m);
    auto want = a.Run(feeds);
    feeds.erase("sr");
    auto got = b.Run(feeds);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i].value.shape(), got[i].value.shape()) << want[i].name;
      for (int64_t k = 0; k < want[i].value.size(); ++k) {
        EXPECT_EQ(want[i].value.data<float>()[k], got[i].value.data<float>()[k]) << want[i].name;
      }
    }
  }
}

TEST(CliInputValues, InferShapesAndFoldConstantsTakeTheValue) {
  TempDir dir;
  auto r = RunPorttool("infer-shapes " + Vad() + " --input-value sr=16000 --allow-partial -o " +
                       (dir / "a.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(InputNames(io::Load(dir / "a.onnx")), (std::vector<std::string>{"input", "h", "c"}));
  r = RunPorttool("fold-constants " + Vad() + " --input-value sr=16000 -o " +
                  (dir / "b.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  io::Model folded = io::Load(dir / "b.onnx");
  EXPECT_EQ(InputNames(folded), (std::vector<std::string>{"input", "h", "c"}));
  EXPECT_EQ(CountOpIn(folded, "Equal"), 0);  // sr == 16000 folded; the If is simplify's job
}

// Random sample rates in [0, 10) take the 8 kHz path with a zero frame length (the model's own
// Reshape fails); a range or a value keeps run and split --verify where the model is meant to be.
TEST(CliInputValues, RangesAndValuesKeepRandomInputsOnAValidBranch) {
  auto r = RunPorttool("run " + Vad() + " --random-inputs");
  EXPECT_NE(r.exit_code, 0);
  r = RunPorttool("run " + Vad() + " --random-inputs --input-range sr=8000:8000 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  TempDir dir;
  r = RunPorttool("split " + Vad() + " --at sr_if --verify --input-range sr=16000:16000 -o " +
                  (dir / "a").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verify: outputs identical"), std::string::npos) << r.out;
  r = RunPorttool("split " + Vad() + " --at sr_if --verify --input-value sr=16000 -o " +
                  (dir / "b").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // the loop below reads into it
  EXPECT_EQ(doc["verified"], true);
  for (const auto& seg : doc["segments"]) {
    for (const auto& in : InputNames(io::Load(dir / "b" / seg["file"].get<std::string>()))) {
      EXPECT_NE(in, "sr");  // a constant in the split, not an input of any segment
    }
  }
}

TEST(CliInputValues, ScaffoldOpRefusesANodeThatCarriesASubgraph) {
  TempDir dir;
  auto r = RunPorttool("scaffold-op " + Vad() + " --node sr_if -o " + (dir / "pkg").string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("node 'sr_if' (If) carries a subgraph"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a custom operator cannot hold one"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "pkg"));
}

}  // namespace
}  // namespace porttool
