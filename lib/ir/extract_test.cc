#include "lib/ir/extract.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>

#include "lib/shape/infer.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::ir {
namespace {

const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, float[1,4] z) => (float[1,4] y)
<float[4] w = {1.0, 2.0, 3.0, 4.0}, float[4] v = {1.0, 1.0, 1.0, 1.0}>
{
  a = Add(x, w)
  b = Neg(a)
  c = Mul(b, v)
  d = Abs(a)
  y = Add(c, z)
}
)";

// Extract as the CLI calls it: with shape inference handed in for boundary types the model does
// not record (lib/ir cannot include lib/shape; the test, like the CLI, supplies it).
io::Model Extract(const io::Model& m, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs) {
  return ExtractSubgraph(m, inputs, outputs, nullptr, shape::TypeInference());
}

std::vector<std::string> NodeNames(const io::Model& m) {
  std::vector<std::string> out;
  for (const auto& node : m.proto.graph().node()) out.push_back(node.name());
  return out;
}

TEST(Extract, KeepsOnlyTheNodesAndInitializersBetweenInputsAndOutputs) {
  io::Model m = testing::ParseNamed(kModel);
  io::Model part = Extract(m, {"a"}, {"c"});
  EXPECT_EQ(NodeNames(part), (std::vector<std::string>{"n_b", "n_c"}));
  ASSERT_EQ(part.proto.graph().initializer_size(), 1);
  EXPECT_EQ(part.proto.graph().initializer(0).name(), "v");
  ASSERT_EQ(part.proto.graph().input_size(), 1);
  EXPECT_EQ(part.proto.graph().input(0).type().tensor_type().shape().dim_size(), 2);
  EXPECT_EQ(part.proto.graph().output(0).name(), "c");
  EXPECT_NO_THROW(onnx::checker::check_model(part.proto));
}

TEST(Extract, OutputNotReachableFromTheInputsNamesTheMissingTensor) {
  io::Model m = testing::ParseNamed(kModel);
  try {
    Extract(m, {"a"}, {"y"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(e.tensor(), "z");
    EXPECT_NE(std::string(e.what()).find("output 'y'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Extract(m, {"a", "z"}, {"y"}));
}

TEST(Extract, UnknownTensorNamesSuggestTheClosest) {
  io::Model m = testing::ParseNamed(kModel);
  try {
    Extract(m, {"aa"}, {"c"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("closest tensor names: a"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Extract(m, {"a"}, {"nope"}), Error);
}

// python onnx's extract_model is the oracle for which nodes and initializers a part holds (run on
// the same model file porttool extracts from).
TEST(Extract, MatchesOnnxExtractModel) {
  testing::TempDir dir;
  io::Model m = testing::ParseNamed(kModel);
  io::Save(m, dir / "model.onnx");
  io::Model part = Extract(m, {"a", "z"}, {"y"});
  std::string script = R"(
import onnx, onnx.utils, sys
onnx.utils.extract_model(sys.argv[1], sys.argv[2], ["a", "z"], ["y"])
m = onnx.load(sys.argv[2])
print(",".join(n.name for n in m.graph.node))
print(",".join(sorted(t.name for t in m.graph.initializer)))
)";
  testing::WriteFile(dir / "oracle.py", script);
  auto r =
      testing::RunShell(std::string(testing::kSystemPython) + " " + (dir / "oracle.py").string() +
                        " " + (dir / "model.onnx").string() + " " + (dir / "oracle.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string nodes, inits;
  for (const auto& n : part.proto.graph().node()) nodes += (nodes.empty() ? "" : ",") + n.name();
  std::vector<std::string> names;
  for (const auto& t : part.proto.graph().initializer()) names.push_back(t.name());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) inits += (inits.empty() ? "" : ",") + n;
  EXPECT_EQ(r.out, nodes + "\n" + inits + "\n");
}

}  // namespace
}  // namespace porttool::ir
