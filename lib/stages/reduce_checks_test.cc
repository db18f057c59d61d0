#include "lib/stages/reduce_checks.h"

#include <gtest/gtest.h>

#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::stages {
namespace {

namespace fs = std::filesystem;

struct Candidate {
  testing::TempDir dir;
  fs::path file = dir / "c0001.onnx";
  Candidate() { testing::WriteFile(file, "candidate bytes"); }
};

CommandCheckOptions Command(const std::string& command) {
  CommandCheckOptions options;
  options.command = command;
  return options;
}

CheckVerdict CheckWith(CommandCheckOptions options, const Candidate& c) {
  CommandCheck check(std::move(options));
  return check.Check(io::Model{}, c.file, {});
}

ErrorKind KindOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;
}

TEST(CommandCheck, ANonZeroStatusFailsAndTheModelPathIsQuoted) {
  Candidate c;
  auto v = CheckWith(Command("grep -q candidate {model} && echo found it && exit 4"), c);
  EXPECT_TRUE(v.failing);
  EXPECT_EQ(v.exit_code, 4);
  EXPECT_EQ(v.detail, "exit 4: found it");
  EXPECT_FALSE(CheckWith(Command("test -f {model}"), c).failing);
  EXPECT_TRUE(fs::exists(c.file.string() + ".log"));
}

TEST(CommandCheck, FailCodesAndTheOutputPatternNarrowWhatCountsAsFailing) {
  Candidate c;
  auto only3 = Command("exit 2 # {model}");
  only3.fail_codes = {3};
  EXPECT_FALSE(CheckWith(only3, c).failing);
  only3.command = "exit 3 # {model}";
  EXPECT_TRUE(CheckWith(only3, c).failing);

  auto pattern = Command("echo 'Operator Resize not supported'; exit 1 # {model}");
  pattern.fail_output_regex = "Resize not supported";
  EXPECT_TRUE(CheckWith(pattern, c).failing);
  pattern.command = "echo 'Segmentation fault'; exit 1 # {model}";
  EXPECT_FALSE(CheckWith(pattern, c).failing);
  // Alone, the pattern decides whatever the status: a wrong-output check that exits 0.
  pattern.command = "echo 'Operator Resize not supported'; exit 0 # {model}";
  EXPECT_TRUE(CheckWith(pattern, c).failing);
}

TEST(CommandCheck, ATimeoutKillsTheCommandAndCountsAsTheUserSays) {
  Candidate c;
  auto hang = Command("sleep 30 # {model}");
  hang.timeout_seconds = 0.2;
  auto v = CheckWith(hang, c);
  EXPECT_TRUE(v.timed_out);
  EXPECT_TRUE(v.failing);
  hang.timeout_fails = false;
  EXPECT_FALSE(CheckWith(hang, c).failing);
}

TEST(CommandCheck, BadCommandsAreUsageErrors) {
  Candidate c;
  EXPECT_EQ(KindOf([] { CommandCheck check(Command("my-converter model.onnx")); }),
            ErrorKind::kUsage);
  EXPECT_EQ(KindOf([] {
              auto o = Command("conv {model}");
              o.fail_output_regex = "(unclosed";
              CommandCheck check(o);
            }),
            ErrorKind::kUsage);
  EXPECT_EQ(KindOf([] { CommandCheck check(Command("conv {model} --inputs {data}")); }),
            ErrorKind::kUsage);
  try {
    CheckWith(Command("no-such-converter-xyz {model}"), c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
}

TEST(CommandCheck, DataGivesTheCandidateItsInputsFromEverySample) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2] x) => (float[1,2] y) {
  a = Relu(x)
  y = Neg(a)
})");
  runtime::Tensor s0(onnx::TensorProto::FLOAT, {1, 2}), s1(onnx::TensorProto::FLOAT, {1, 2});
  s0.mutable_data<float>()[0] = -1;
  s1.mutable_data<float>()[0] = 7;
  BoundaryValues values(model, {"s0", "s1"}, {{{"x", s0}}, {{"x", s1}}});
  CandidateBuilder builder(model);
  io::Model tail = builder.Build({1});  // Neg alone: its input `a` comes from Relu's values
  Candidate c;
  auto o = Command("test -f {data}/s0.a.npy && test -f {data}/s1.a.npy && exit 1 # {model}");
  o.values = &values;
  CommandCheck check(o);
  EXPECT_TRUE(check.Check(tail, c.file, {1}).failing);
  auto a1 = runtime::ReadNpy(c.file.string() + ".data/s1.a.npy");
  EXPECT_EQ(a1.data<float>()[0], 7.0f);
  auto a0 = runtime::ReadNpy(c.file.string() + ".data/s0.a.npy");
  EXPECT_EQ(a0.data<float>()[0], 0.0f);  // Relu(-1)
}

}  // namespace
}  // namespace porttool::stages
