// Node addressing: what a user types for a node ("#N", "#N (Op)", a name) finds that node, a
// position past the end is a usage error naming the range, and naming unnamed nodes never makes
// two nodes share a name.
#include "lib/ir/node_names.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "lib/io/model.h"
#include "lib/util/error.h"

namespace porttool::ir {
namespace {

// Three unnamed nodes, as the ONNX 1.12 text parser (and PyTorch 1.x) leaves them.
constexpr const char* kUnnamed = R"(<ir_version: 8, opset_import: ["" : 14]>
  g (float[2] x) => (float[2] z) {
    a = Relu(x)
    b = Neg(a)
    z = Relu(b)
  })";

Error UsageError(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e;
  }
  ADD_FAILURE() << "expected a usage error";
  return Error(ErrorKind::kInternal, "");
}

std::string Message(const std::function<void()>& f) { return UsageError(f).what(); }

TEST(NodeNames, UnnamedNodesShowTheirPositionAndOp) {
  io::Model m = io::ParseText(kUnnamed);
  GraphView view(m.proto.graph());
  EXPECT_EQ(NodeLabel(view, 1), "#1 (Neg)");
  m.proto.mutable_graph()->mutable_node(1)->set_name("neg");
  EXPECT_EQ(NodeLabel(m.proto.graph().node(1), 1), "neg");
}

TEST(NodeNames, PositionWithOrWithoutThePrintedOpFindsTheNode) {
  io::Model m = io::ParseText(kUnnamed);
  m.proto.mutable_graph()->mutable_node(2)->set_name("last");
  GraphView view(m.proto.graph());
  EXPECT_EQ(FindNodeRef(view, "#1"), 1);
  EXPECT_EQ(FindNodeRef(view, "#1 (Neg)"), 1);
  EXPECT_EQ(FindNodeRef(view, "#2"), 2) << "a named node is addressable by position too";
  EXPECT_EQ(FindNodeRef(view, "last"), 2);
  EXPECT_EQ(FindNodeRef(view, "last (Relu)"), 2);
  EXPECT_EQ(FindNodeRef(view, ""), -1) << "'' is every unnamed node's name, so none of them";
  EXPECT_EQ(FindNodeRef(view, "#x"), -1);
  EXPECT_EQ(FindNodeRef(view, "#-1"), -1);
  EXPECT_EQ(FindNodeRef(view, "nope"), -1);
}

TEST(NodeNames, AnExactNameWinsOverAPosition) {
  io::Model m = io::ParseText(kUnnamed);
  m.proto.mutable_graph()->mutable_node(2)->set_name("#0");
  EXPECT_EQ(FindNodeRef(GraphView(m.proto.graph()), "#0"), 2);
}

TEST(NodeNames, PositionBeyondTheGraphIsAUsageErrorWithTheRange) {
  io::Model m = io::ParseText(kUnnamed);
  GraphView view(m.proto.graph());
  Error e = UsageError([&] { FindNodeRef(view, "#3"); });
  EXPECT_NE(std::string(e.what()).find("node '#3' is out of range: the graph has 3 node(s), #0 "
                                       "to #2"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(e.node(), "#3");
  EXPECT_NE(Message([&] { FindNodeRef(view, "#99999999999999999999"); }).find("#0 to #2"),
            std::string::npos);
}

TEST(NodeNames, APrintedOpThatIsNotTheNodesIsAUsageError) {
  io::Model m = io::ParseText(kUnnamed);
  GraphView view(m.proto.graph());
  EXPECT_NE(Message([&] { FindNodeRef(view, "#1 (Relu)"); }).find("is a Neg, not a Relu"),
            std::string::npos);
}

TEST(NodeNames, ResolveExplainsEmptyAmbiguousAndUnknownReferences) {
  io::Model m = io::ParseText(kUnnamed);
  GraphView unnamed(m.proto.graph());
  EXPECT_EQ(ResolveNodeRef(unnamed, "#2 (Relu)", "cut node"), 2);
  std::string empty = Message([&] { ResolveNodeRef(unnamed, "", "cut node"); });
  EXPECT_NE(empty.find("3 node(s) have no name (#0 (Relu), #1 (Neg), #2 (Relu))"),
            std::string::npos)
      << empty;
  EXPECT_NE(empty.find("e.g. '#0'"), std::string::npos) << empty;
  m.proto.mutable_graph()->mutable_node(0)->set_name("r");
  m.proto.mutable_graph()->mutable_node(2)->set_name("r");
  GraphView twice(m.proto.graph());
  EXPECT_NE(Message([&] {
              ResolveNodeRef(twice, "r", "cut node");
            }).find("cut node 'r' is ambiguous: 2 nodes carry that name (#0 (Relu), #2 (Relu))"),
            std::string::npos);
  EXPECT_NE(
      Message([&] { ResolveNodeRef(twice, "#1 (Neg", "cut node"); }).find("closest: #1 (Neg)"),
      std::string::npos)
      << "the closest label is suggested";
}

// Named nodes keep their names; each unnamed one gets <op>_<position>, suffixed past every name
// already taken, including the suffixed forms and names inside subgraphs.
TEST(NodeNames, NamingNeverCollides) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
    g (float[2] x, bool c) => (float[2] z) {
      a = Relu(x)
      b = Relu(a)
      d = Relu(b)
      e = If (c) <
        then_branch = t () => (float[2] o1) { o1 = Neg(d) },
        else_branch = f () => (float[2] o2) { o2 = Abs(d) } >
      z = Relu(e)
    })");
  auto& g = *m.proto.mutable_graph();
  g.mutable_node(0)->set_name("Relu_1");    // what node 1 would be called
  g.mutable_node(2)->set_name("Relu_1_1");  // and its first suffix
  g.mutable_node(3)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_name("Relu_4");
  EXPECT_EQ(NameUnnamedNodes(g), 4);  // b, the If, z and the else branch's node
  EXPECT_EQ(g.node(0).name(), "Relu_1");
  EXPECT_EQ(g.node(1).name(), "Relu_1_2");
  EXPECT_EQ(g.node(2).name(), "Relu_1_1");
  EXPECT_EQ(g.node(3).name(), "If_3");
  EXPECT_EQ(g.node(4).name(), "Relu_4_1") << "a subgraph already holds Relu_4";
  for (const auto& node : g.node()) EXPECT_FALSE(node.name().empty());
  EXPECT_EQ(AllNodeNames(g).size(), 7u) << "7 nodes, 7 distinct names";
  EXPECT_EQ(NameUnnamedNodes(g), 0) << "a second run has nothing to name";
}

// Every node named like the name its neighbour would get: a chain of collisions.
TEST(NodeNames, NamingStaysUniqueWhenEveryCandidateIsTaken) {
  io::Model m = io::ParseText(kUnnamed);
  auto& g = *m.proto.mutable_graph();
  for (int i = 0; i < 40; ++i) {
    auto* node = g.add_node();
    node->set_op_type("Relu");
    node->add_input("z");
    node->add_output("r" + std::to_string(i));
    if (i % 2 == 0) node->set_name(i < 20 ? "Relu_0" : "Relu_0_" + std::to_string(i / 2));
  }
  EXPECT_EQ(NameUnnamedNodes(g), 23);
  std::map<std::string, int> seen;
  for (const auto& node : g.node()) ++seen[node.name()];
  int repeated = 0;
  for (const auto& [name, n] : seen) repeated += name != "Relu_0" && n > 1;
  EXPECT_EQ(repeated, 0) << "only the names the model already repeated repeat";
  EXPECT_EQ(seen["Relu_0"], 10) << "existing duplicates are left to check's lint, not renamed";
}

TEST(NodeNames, AddressedNodesGetRealNamesAndOnlyThey) {
  io::Model m = io::ParseText(kUnnamed);
  m.proto.mutable_graph()->mutable_node(2)->set_name("last");
  auto names = NameAddressedNodes(*m.proto.mutable_graph(), {"#1 (Neg)", "last", "#2"}, "node");
  EXPECT_EQ(names, (std::vector<std::string>{"Neg_1", "last", "last"}));
  EXPECT_EQ(m.proto.graph().node(0).name(), "");
  EXPECT_EQ(m.proto.graph().node(1).name(), "Neg_1");
  EXPECT_TRUE(NameAddressedNodes(*m.proto.mutable_graph(), {}, "node").empty());
  EXPECT_NE(Message([&] {
              NameAddressedNodes(*m.proto.mutable_graph(), {"#7"}, "node");
            }).find("#0 to #2"),
            std::string::npos);
}

}  // namespace
}  // namespace porttool::ir
