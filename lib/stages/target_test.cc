#include "lib/stages/target.h"

#include <gtest/gtest.h>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::stages {
namespace {

namespace fs = std::filesystem;

// A profile extending the shipped rknn-rk3588 with `fields`, in a temp rules directory.
struct Profile {
  testing::TempDir dir;
  fs::path file = dir / "targets" / "child.json";
  explicit Profile(const std::string& fields) {
    fs::create_directories(dir / "targets");
    fs::copy(testing::SourceDir() / "rules" / "targets" / "rknn-rk3588.json", dir / "targets");
    testing::WriteFile(file, R"({"schema": "porttool.target/1", "name": "child",
  "extends": "rknn-rk3588", )" + fields +
                                 "}");
  }
};

std::string LoadError(const Profile& p) {
  try {
    LoadTargetProfile(p.dir.path(), p.file.string());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "";
}

TEST(TargetPortFields, RewritesAreCheckedAgainstThePassRegistry) {
  EXPECT_NE(LoadError(Profile(R"("rewrites": "decompose-gelu,fold-constant")"))
                .find("child.json:2: at /rewrites: unknown pass 'fold-constant'"),
            std::string::npos);
  EXPECT_NE(LoadError(Profile(R"("rewrites": "convert-opset{to=")")).find("at /rewrites"),
            std::string::npos);
  EXPECT_NE(LoadError(Profile(R"("rewrites": "convert-opset{upto=3}")")).find("no option 'upto'"),
            std::string::npos);
  // Issue 54: a non-integer option failed only at port's rewrite step, naming no file.
  EXPECT_NE(LoadError(Profile(R"("rewrites": "convert-opset{min=x max=13}")"))
                .find("child.json:2: at /rewrites: pass 'convert-opset' option min=x: expected an "
                      "integer from 1 to 1000"),
            std::string::npos);
  EXPECT_NE(
      LoadError(Profile(R"("default_input_shape": "x:1,3,64")")).find("at /default_input_shape"),
      std::string::npos);
  EXPECT_NE(LoadError(Profile(R"("rewrites": 3)")).find("/rewrites"), std::string::npos);
  // The parent's rewrites are inherited and valid.
  Profile ok(R"("default_input_shape": "*:1x3x64x64")");
  auto target = LoadTargetProfile(ok.dir.path(), ok.file.string());
  EXPECT_EQ(TargetRewrites(target).size(), 3u);
}

TEST(TargetPortFields, DefaultInputShapeMatchesByNameOrByRank) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3,H,W] img, float[N,16] emb, float[1,4] bias) => (float[N,3,H,W] y) {
      y = Identity(img) })");
  decide::TargetProfile t;
  t.default_input_shape = "*:1x3x96x96,emb:2x16";
  shape::InputShapes pins = DefaultInputShapes(t, model);
  EXPECT_EQ(pins.at("img"), (std::vector<int64_t>{1, 3, 96, 96}));
  EXPECT_EQ(pins.at("emb"), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(pins.count("bias"), 0u);      // rank 2, and its static dims disagree with the wildcard
  t.default_input_shape = "*:1x4x96x96";  // channel 4 contradicts img's static 3
  EXPECT_TRUE(DefaultInputShapes(t, model).empty());
}

TEST(TargetPortFields, RemedyPassesMustBeRegistered) {
  testing::TempDir dir;
  fs::path file = dir / "remedies.json";
  testing::WriteFile(file, R"({"schema": "porttool.remedies/1", "description": "x",
  "remedies": [{"id": "r", "op": "Relu", "fixes": [], "requires": [], "pass": "no-such-pass",
                "text": "t"}]})");
  try {
    ValidateRuleFile(testing::SourceDir() / "rules", file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/remedies/0/pass"), std::string::npos) << e.what();
  }
  for (const auto& shipped : {"decision/remedies.json", "targets/rknn-rk3588.json"}) {
    EXPECT_NO_THROW(
        ValidateRuleFile(testing::SourceDir() / "rules", testing::SourceDir() / "rules" / shipped));
  }
}

}  // namespace
}  // namespace porttool::stages
