#include "lib/analysis/graph_match.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "lib/analysis/renamed_copy_test_util.h"
#include "lib/io/model.h"

namespace porttool::analysis {
namespace {

constexpr const char* kNet = R"(
<ir_version: 8, opset_import: ["" : 14]>
net (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}, float[4] v = {0.5, 0.5, 0.5, 0.5}> {
  a = Relu(x)
  b = Add(a, w)
  c = Mul(b, v)
  d = Sigmoid(a)
  e = Concat<axis = 0>(c, d)
  y = ReduceSum<keepdims = 1>(e)
}
)";

io::Model Named(const char* text) {
  io::Model m = io::ParseText(text);
  auto* g = m.proto.mutable_graph();
  for (int i = 0; i < g->node_size(); ++i) {
    g->mutable_node(i)->set_name(g->node(i).op_type() + "_" + std::to_string(i));
  }
  return m;
}

GraphMatch Match(const io::Model& a, const io::Model& b) {
  MatchSide sa(a), sb(b);
  return MatchGraphs(sa, sb);
}

TEST(GraphMatch, ByNameWhenNamesAgree) {
  io::Model a = Named(kNet);
  GraphMatch m = Match(a, a);
  EXPECT_EQ(m.matched(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(m.a_to_b[i], i);
    EXPECT_EQ(m.how[i], MatchedBy::kName);
  }
}

TEST(GraphMatch, RenamedGraphMatchesCompletelyByStructure) {
  io::Model a = Named(kNet);
  io::Model b = RenamedCopy(a);
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.matched(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(m.a_to_b[i], i) << i;
    EXPECT_EQ(m.how[i], MatchedBy::kStructure);
  }
  EXPECT_EQ(m.inputs_a_to_b, std::vector<int>{0});
  EXPECT_EQ(m.outputs_a_to_b, std::vector<int>{0});
  MatchSide sa(a), sb(b);
  auto names = MatchedTensors(m, sa, sb);
  EXPECT_EQ(names.at("c"), "renamed/c/x");
  EXPECT_EQ(names.at("x"), "renamed/x/x");
}

TEST(GraphMatch, ReorderedUnnamedNodesMatch) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  auto* nodes = b.proto.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());  // not topological any more: matching sorts
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.matched(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(m.a_to_b[i], 5 - i) << i;
}

TEST(GraphMatch, SameStructureSiblingsPairOnce) {
  io::Model a = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y, float[2] z) {
  y = Relu(x)
  z = Relu(x)
}
)");
  GraphMatch m = Match(a, RenamedCopy(a));
  EXPECT_EQ(m.matched(), 2u);
  EXPECT_NE(m.a_to_b[0], m.a_to_b[1]);
}

TEST(GraphMatch, ChangedAttributeStillMatchesThroughItsInputs) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  b.proto.mutable_graph()->mutable_node(4)->mutable_attribute(0)->set_i(1);  // Concat axis
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.matched(), 6u);
  EXPECT_EQ(m.a_to_b[4], 4);
  EXPECT_EQ(m.how[4], MatchedBy::kNeighbours);
  EXPECT_EQ(m.a_to_b[5], 5);
}

TEST(GraphMatch, ChangedWeightMatchesOnTheFirstInput) {
  io::Model a = io::ParseText(kNet);
  io::Model b = RenamedCopy(a);
  b.proto.mutable_graph()->mutable_initializer(0)->set_float_data(2, 3.5f);
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.matched(), 6u);
  EXPECT_EQ(m.how[1], MatchedBy::kNeighbours);  // Add(a, w): w's value differs
  MatchSide sa(a), sb(b);
  auto wa = sa.SourceOf("w"), wb = sb.SourceOf("renamed/w/x");
  EXPECT_EQ(wa.kind, TensorSource::Kind::kValue);
  EXPECT_FALSE(SameSource(m, wa, wb));
  EXPECT_TRUE(SameSource(m, sa.SourceOf("a"), sb.SourceOf("renamed/a/x")));
}

TEST(GraphMatch, RemovedAndAddedNodesStayUnmatched) {
  io::Model a = io::ParseText(kNet);
  io::Model b = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
net (float[1,4] x) => (float[1,4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}, float[4] v = {0.5, 0.5, 0.5, 0.5}> {
  a = Relu(x)
  b = Add(a, w)
  d = Tanh(a)
  e = Concat<axis = 0>(b, d)
  y = ReduceSum<keepdims = 1>(e)
}
)");
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.a_to_b[0], 0);
  EXPECT_EQ(m.a_to_b[1], 1);
  EXPECT_EQ(m.a_to_b[2], -1);  // Mul removed
  EXPECT_EQ(m.a_to_b[3], -1);  // Sigmoid removed
  EXPECT_EQ(m.b_to_a[2], -1);  // Tanh added
  EXPECT_EQ(m.a_to_b[4], 3);   // Concat: same first input (b), its second changed
  EXPECT_EQ(m.a_to_b[5], 4);
}

TEST(GraphMatch, ConstantNodeAndInitializerOfOneValueAreTheSameSource) {
  io::Model a = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y) {
  k = Constant<value = float[2] {1.0, 2.0}>()
  y = Add(x, k)
}
)");
  io::Model b = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y) <float[2] folded = {1.0, 2.0}> {
  y = Add(x, folded)
}
)");
  GraphMatch m = Match(a, b);
  EXPECT_EQ(m.a_to_b[0], -1);  // the Constant is gone
  EXPECT_EQ(m.a_to_b[1], 0);
  EXPECT_EQ(m.how[1], MatchedBy::kStructure);
}

}  // namespace
}  // namespace porttool::analysis
