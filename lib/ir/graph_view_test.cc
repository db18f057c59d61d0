#include "lib/ir/graph_view.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/util/error.h"

namespace porttool::ir {
namespace {

constexpr const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 14]>
chain (float[2] x) => (float[2] z) <float[2] w = {1.0, 2.0}> {
  a = Relu(x)
  b = Add(a, w)
  z = Mul(a, b)
}
)";

TEST(GraphView, ProducersConsumersInitializersInputs) {
  auto m = io::ParseText(kChain);
  GraphView v(m.proto.graph());
  EXPECT_EQ(v.Producer("a"), 0);
  EXPECT_EQ(v.Producer("x"), -1);
  EXPECT_EQ(v.Consumers("a"), (std::vector<int>{1, 2}));
  EXPECT_TRUE(v.Consumers("z").empty());
  EXPECT_NE(v.Initializer("w"), nullptr);
  EXPECT_NE(v.GraphInput("x"), nullptr);
  EXPECT_TRUE(v.IsGraphOutput("z"));
  ASSERT_EQ(v.RealInputs().size(), 1u);
  EXPECT_EQ(v.RealInputs()[0]->name(), "x");
  EXPECT_TRUE(v.IsTopologicallySorted());
  EXPECT_TRUE(v.DuplicateDefinitions().empty());
}

TEST(GraphView, IfSubgraphCapturesCountAsConsumers) {
  auto m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (bool c, float[2] x) => (float[2] y) {
  t = Relu(x)
  y = If(c) <then_branch = then_g () => (float[2] o1) { o1 = Neg(t) },
             else_branch = else_g () => (float[2] o2) { o2 = Abs(t) }>
}
)");
  GraphView v(m.proto.graph());
  EXPECT_EQ(v.Consumers("t"), std::vector<int>{1});
  EXPECT_EQ(GraphView::CapturedNames(m.proto.graph().node(1)), std::vector<std::string>{"t"});
  EXPECT_EQ(v.TopoOrder(), (std::vector<int>{0, 1}));
}

TEST(GraphView, TopoOrderSortsUnsortedNodesStably) {
  auto m = io::ParseText(kChain);
  auto* nodes = m.proto.mutable_graph()->mutable_node();
  nodes->SwapElements(0, 2);  // Mul first, Relu last
  GraphView v(m.proto.graph());
  EXPECT_FALSE(v.IsTopologicallySorted());
  std::vector<std::string> ops;
  for (int i : v.TopoOrder()) ops.push_back(v.node(i).op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Relu", "Add", "Mul"}));
}

TEST(GraphView, CycleIsReportedNamingANode) {
  auto m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
cyc (float[2] x) => (float[2] b) {
  a = Add(x, b)
  b = Relu(a)
}
)");
  m.proto.mutable_graph()->mutable_node(0)->set_name("loop_add");
  m.proto.mutable_graph()->mutable_node(1)->set_name("loop_relu");
  GraphView v(m.proto.graph());
  try {
    v.TopoOrder();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    std::string what = e.what();
    EXPECT_TRUE(what.find("loop_add") != std::string::npos ||
                what.find("loop_relu") != std::string::npos)
        << what;
  }
}

TEST(GraphView, DuplicateDefinitionsAndNodeNames) {
  auto m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 14]>
dup (float[2] x) => (float[2] a) {
  a = Relu(x)
  a = Neg(x)
}
)");
  m.proto.mutable_graph()->mutable_node(0)->set_name("same");
  m.proto.mutable_graph()->mutable_node(1)->set_name("same");
  GraphView v(m.proto.graph());
  EXPECT_EQ(v.DuplicateDefinitions(), std::vector<std::string>{"a"});
  EXPECT_EQ(v.NodesNamed("same"), (std::vector<int>{0, 1}));
  EXPECT_EQ(v.FindNode("same"), 0);
  EXPECT_EQ(v.FindNode("absent"), -1);
}

}  // namespace
}  // namespace porttool::ir
