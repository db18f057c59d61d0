#include "lib/analysis/cut_advice.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/shape/infer.h"

namespace porttool::analysis {
namespace {

// Parses ONNX text, names every node "n_<first output>" and splits it at `at` as the CLI does.
ir::SplitResult Split(io::Model& m, const std::vector<std::string>& at) {
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) node.set_name("n_" + node.output(0));
  ir::SplitOptions options;
  options.infer_types = shape::TypeInference();
  return ir::SplitAtNodes(m, at, options);
}

TEST(CutAdvice, LargeBridgeGetsSmallerCutCandidates) {
  // Expanding a reduced tensor just before the cut: cutting before the Expand bridges 4 bytes
  // instead of 256.
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,64] x) => (float[1,64] y) <int64[2] shape = {1, 64}> {
  a = Relu(x)
  r = ReduceSum<keepdims = 1>(a)
  e = Expand(r, shape)
  c = Neg(e)
  y = Abs(c)
}
)");
  ir::SplitResult r = Split(m, {"n_c"});
  std::vector<ir::CutAdvice> all = AdviseCuts(m, r, {.bridge_warn_bytes = 100});
  // Both cuts carry 256 bytes; only the one before the host node has a smaller neighbour.
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[1].candidates.empty());
  EXPECT_NE(all[1].message.find("no smaller cut"), std::string::npos);
  const ir::CutAdvice& advice = all[0];
  EXPECT_EQ(advice.boundary, 1);
  EXPECT_EQ(advice.bytes, 256u);
  ASSERT_FALSE(advice.candidates.empty());
  EXPECT_EQ(advice.candidates[0].before_node, "n_e");
  EXPECT_EQ(advice.candidates[0].bytes, 4u);
  EXPECT_EQ(advice.candidates[0].tensors, (std::vector<std::string>{"r"}));
  EXPECT_NE(advice.message.find("before 'n_e'"), std::string::npos) << advice.message;
  // Under the default threshold there is nothing to warn about.
  EXPECT_TRUE(AdviseCuts(m, r).empty());
  // The split itself leaves advice to its caller.
  EXPECT_TRUE(r.advice.empty());
}

}  // namespace
}  // namespace porttool::analysis
