#include "lib/io/node_attributes.h"

#include <gtest/gtest.h>

#include <fstream>

#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

namespace fs = std::filesystem;

// The message ValidateNodeAttributes gives for `text`, or "" when it accepts the model.
std::string Refusal(const std::string& text) {
  Model m = ParseText(text);
  try {
    ValidateNodeAttributes(m.proto);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "";
}

std::string ConvWith(const std::string& attrs) {
  return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8,8] x, float[4,2,3,3] w) => (float y) {
  y = Conv <)" +
         attrs + R"(> (x, w)
})";
}

TEST(NodeAttributes, WindowGeometry) {
  EXPECT_EQ(Refusal(ConvWith("strides = [1, 1], group = 2")), "");
  EXPECT_EQ(Refusal(ConvWith("strides = [0, 1], group = 2")),
            "node '#0' (Conv): attribute 'strides' = [0, 1]: every stride must be >= 1 (index 0 "
            "is 0)");
  EXPECT_NE(Refusal(ConvWith("dilations = [1, -1], group = 2")).find("'dilations'"),
            std::string::npos);
  EXPECT_NE(Refusal(ConvWith("pads = [0, 0, -1, 0], group = 2")).find("every pad must be >= 0"),
            std::string::npos);
  // Counts follow the spatial rank (2, from the weight): one stride, three pads are wrong.
  EXPECT_NE(Refusal(ConvWith("strides = [1], group = 2")).find("has 1 values"), std::string::npos);
  EXPECT_NE(Refusal(ConvWith("pads = [0, 0, 0], group = 2")).find("an even count"),
            std::string::npos);
  EXPECT_NE(Refusal(ConvWith("kernel_shape = [3, 3, 3], strides = [1, 1], group = 2"))
                .find("from 'kernel_shape'"),
            std::string::npos);
}

TEST(NodeAttributes, GroupDividesChannels) {
  EXPECT_NE(Refusal(ConvWith("group = 0")).find("'group' = 0: must be >= 1"), std::string::npos);
  // 4 weight output channels, 4 input channels: group 3 divides neither.
  EXPECT_NE(Refusal(ConvWith("group = 3")).find("must divide the weight's 4 output channels"),
            std::string::npos);
}

TEST(NodeAttributes, BlocksizePermAxesSplit) {
  auto d2s = [](const std::string& b) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,2,2] x) => (float y) { y = DepthToSpace <blocksize = )" +
           b + R"(> (x) })";
  };
  EXPECT_EQ(Refusal(d2s("2")), "");
  EXPECT_NE(Refusal(d2s("4294967296")).find("must be between 1 and 4096"), std::string::npos);
  EXPECT_NE(Refusal(d2s("0")).find("'blocksize' = 0"), std::string::npos);
  EXPECT_NE(Refusal(d2s("4")).find("its square must divide the input's 8 channels"),
            std::string::npos);

  auto op = [](const std::string& body) {
    return R"(<ir_version: 8, opset_import: ["" : 11]>
g (float[2,3,4] x) => (float y) { )" +
           body + " }";
  };
  EXPECT_EQ(Refusal(op("y = Transpose <perm = [2, 0, 1]> (x)")), "");
  EXPECT_NE(Refusal(op("y = Transpose <perm = [0, 0, 1]> (x)")).find("a permutation of 0..2"),
            std::string::npos);
  EXPECT_NE(Refusal(op("y = Transpose <perm = [1, 0]> (x)")).find("for an input of rank 3"),
            std::string::npos);
  EXPECT_EQ(Refusal(op("y = Softmax <axis = -3> (x)")), "");
  EXPECT_NE(Refusal(op("y = Softmax <axis = 3> (x)")).find("out of range for rank 3"),
            std::string::npos);
  EXPECT_EQ(Refusal(op("y = Flatten <axis = 3> (x)")), "");  // Flatten's range includes r
  EXPECT_NE(Refusal(op("y = ReduceSum <axes = [1, -2]> (x)")).find("names axis 1 twice"),
            std::string::npos);
  EXPECT_NE(Refusal(op("y = Unsqueeze <axes = [4294967296]> (x)")).find("out of any"),
            std::string::npos);
  EXPECT_EQ(Refusal(op("a, b = Split <axis = 2, split = [1, 3]> (x)\n y = Identity(a)")), "");
  EXPECT_NE(Refusal(op("a, b = Split <axis = 2, split = [1, 2]> (x)\n y = Identity(a)"))
                .find("sums to 3, the axis has 4"),
            std::string::npos);
  EXPECT_NE(Refusal(op("a, b = Split <axis = 2, split = [-1, 5]> (x)\n y = Identity(a)"))
                .find("every size must be >= 0"),
            std::string::npos);
}

TEST(NodeAttributes, ScalesAndScalars) {
  std::string resize = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,1,2,2] x) => (float y) <float[4] s = {1.0, 1.0, SCALE, 2.0}> {
  y = Resize (x, , s)
})";
  auto with = [&](const std::string& v) {
    std::string t = resize;
    t.replace(t.find("SCALE"), 5, v);
    return t;
  };
  EXPECT_EQ(Refusal(with("2.0")), "");
  EXPECT_NE(Refusal(with("0.0")).find("'scales (input)' has 0 at index 2"), std::string::npos);
  EXPECT_NE(Refusal(with("-2.0")).find("finite and > 0"), std::string::npos);
  std::string lrn = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,2,2] x) => (float y) { y = LRN <size = 0> (x) })";
  EXPECT_NE(Refusal(lrn).find("'size'"), std::string::npos);
}

TEST(NodeAttributes, SubgraphsAndCustomDomains) {
  std::string inside_if = R"(<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[1,8,2,2] x) => (float y) {
  y = If (c) <then_branch = t () => (float a) { a = DepthToSpace <blocksize = 0> (x) },
              else_branch = e () => (float b) { b = Identity (x) }>
})";
  EXPECT_NE(Refusal(inside_if).find("'blocksize' = 0"), std::string::npos);
  // A custom domain's "strides" means whatever its author says.
  std::string custom = R"(<ir_version: 8, opset_import: ["" : 13, "my.ops" : 1]>
g (float[2] x) => (float y) { y = my.ops.Thing <strides = [0]> (x) })";
  EXPECT_EQ(Refusal(custom), "");
}

// Inputs the schema requires: libonnx's inference read a missing weight's type through a null
// pointer (fuzz_passes, fuzz_infer_shapes, fuzz_emit_header).
TEST(NodeAttributes, ArityAgainstTheSchema) {
  auto conv = [](const std::string& inputs) {
    return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8,8] x, float[4,4,3,3] w) => (float y) { y = Conv ()" +
           inputs + R"() })";
  };
  EXPECT_EQ(Refusal(conv("x, w")), "");
  EXPECT_EQ(Refusal(conv("x")), "node '#0' (Conv, opset 13): has 1 inputs; the op takes 2 to 3");
  EXPECT_NE(Refusal(conv("x, , w")).find("required input 1 ('W') is empty"), std::string::npos);
  EXPECT_NE(Refusal(conv("x, w, w, w")).find("has 4 inputs"), std::string::npos);
  // Input and weight ranks side by side (libonnx indexed one by the other's rank).
  EXPECT_NE(Refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x, float[4,4,3,3] w) => (float y) { y = Conv (x, w) })")
                .find("input 1 ('w') has rank 4 for an input of rank 3"),
            std::string::npos);
  EXPECT_NE(Refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4] x) => (float y) { y = MaxPool <kernel_shape = [1]> (x) })")
                .find("input 0 ('x') has rank 2"),
            std::string::npos);
  // An omitted optional input is fine: Resize's roi.
  EXPECT_EQ(Refusal(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,1,2,2] x) => (float y) <float[4] s = {1.0, 1.0, 2.0, 2.0}> { y = Resize (x, , s) })"),
            "");
}

// No false refusals: every ONNX backend node test model and every real model passes.
TEST(NodeAttributes, AcceptsEveryNodeTestAndRealModel) {
  std::vector<fs::path> models;
  const fs::path node_tests = "/usr/share/libonnx-testdata/data/node";
  if (fs::is_directory(node_tests)) {
    for (const auto& e : fs::directory_iterator(node_tests))
      models.push_back(e.path() / "model.onnx");
  }
  fs::path shared = testing::SharedModelsDir();
  if (!shared.empty()) {
    for (const auto& e : fs::directory_iterator(shared)) {
      if (e.path().extension() == ".onnx") models.push_back(e.path());
    }
  }
  if (models.empty())
    PORTTOOL_SKIP_MISSING("neither libonnx-testdata nor ../shared/models is present");
  for (const auto& path : models) {
    onnx::ModelProto m;
    std::ifstream in(path, std::ios::binary);
    if (!m.ParseFromIstream(&in)) continue;
    EXPECT_NO_THROW(ValidateNodeAttributes(m)) << path;
  }
}

}  // namespace
}  // namespace porttool::io
