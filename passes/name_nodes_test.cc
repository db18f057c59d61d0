// name-nodes: every unnamed node gets <op>_<position>, never a name another node has, and
// simplify runs it first so everything after it (notes, reports, segments) shows names.
#include "passes/name_nodes.h"

#include <gtest/gtest.h>

#include <set>

#include "passes/pass_test_util.h"
#include "passes/transform.h"

namespace porttool::passes {
namespace {

using testing_util::MaxOutputDiff;
using testing_util::RunOne;

constexpr const char* kUnnamed = R"(<ir_version: 8, opset_import: ["" : 14]>
  g (float[2] x) => (float[2] z) {
    a = Relu(x)
    b = Relu(a)
    z = Neg(b)
  })";

TEST(NameNodes, UnnamedNodesGetOpAndPositionSuffixedPastTakenNames) {
  io::Model m = io::ParseText(kUnnamed);
  m.proto.mutable_graph()->mutable_node(0)->set_name("Relu_1");  // the name #1 would get
  io::Model before = m;
  PassResult r = RunOne(m, "name-nodes");
  EXPECT_EQ(r.changes, 2);
  EXPECT_EQ(m.proto.graph().node(0).name(), "Relu_1");
  EXPECT_EQ(m.proto.graph().node(1).name(), "Relu_1_1");
  EXPECT_EQ(m.proto.graph().node(2).name(), "Neg_2");
  EXPECT_EQ(MaxOutputDiff(before, m), 0.0);
  EXPECT_EQ(RunOne(m, "name-nodes").changes, 0);
}

TEST(NameNodes, SimplifyNamesNodesBeforeAnythingElse) {
  io::Model m = io::ParseText(kUnnamed);
  PassContext context;
  TransformReport r = Simplify(m, "", context);
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.steps.front().id, "name-nodes");
  EXPECT_EQ(r.steps.front().result.changes, 3);
  std::set<std::string> names;
  for (const auto& node : m.proto.graph().node()) names.insert(node.name());
  EXPECT_EQ(names, (std::set<std::string>{"Relu_0", "Relu_1", "Neg_2"}));
}

}  // namespace
}  // namespace porttool::passes
