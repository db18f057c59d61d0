#include "lib/io/functions.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io::functions_test {
namespace {

// A function local.NAME from x to y whose body is `body` (one node per entry, calling local.CALLEE
// or, for an empty callee, a Relu).
onnx::FunctionProto Function(const std::string& name, const std::vector<std::string>& callees) {
  onnx::FunctionProto f;
  f.set_domain("local");
  f.set_name(name);
  f.add_input("x");
  f.add_output("y");
  auto* opset = f.add_opset_import();
  opset->set_version(13);
  for (const auto& callee : callees) {
    auto* node = f.add_node();
    node->add_input("x");
    node->add_output("y");
    if (callee.empty()) {
      node->set_op_type("Relu");
    } else {
      node->set_domain("local");
      node->set_op_type(callee);
    }
  }
  return f;
}

// A model whose graph calls local.`first` once (node "call").
onnx::ModelProto WithFunctions(const std::vector<onnx::FunctionProto>& functions,
                               const std::string& first) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* node = m.mutable_graph()->add_node();
  node->set_name("call");
  node->set_domain("local");
  node->set_op_type(first);
  node->add_input("x");
  node->add_output("y");
  for (const auto& f : functions) *m.add_functions() = f;
  return m;
}

std::string Refusal(const onnx::ModelProto& m) {
  try {
    ValidateFunctions(m);
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
}

TEST(Functions, ACycleIsRefusedNamingIt) {
  EXPECT_EQ(Refusal(WithFunctions({Function("f", {""}), Function("g", {"f", ""})}, "g")), "");
  std::string self = Refusal(WithFunctions({Function("f", {"f"})}, "f"));
  EXPECT_NE(self.find("(local.f -> local.f)"), std::string::npos) << self;
  std::string pair = Refusal(WithFunctions({Function("f", {"g"}), Function("g", {"", "f"})}, "f"));
  EXPECT_NE(pair.find("(local.f -> local.g -> local.f)"), std::string::npos) << pair;
  // A cycle nobody calls is still refused: the checker and inference expand every function.
  std::string uncalled = Refusal(
      WithFunctions({Function("h", {""}), Function("a", {"b"}), Function("b", {"a"})}, "h"));
  EXPECT_NE(uncalled.find("local.a -> local.b -> local.a"), std::string::npos) << uncalled;
}

TEST(Functions, ACycleThroughAnIfBranchIsFound) {
  onnx::FunctionProto g = Function("g", {});
  auto* node = g.add_node();
  node->set_op_type("If");
  node->add_input("c");
  node->add_output("y");
  auto* attr = node->add_attribute();
  attr->set_name("then_branch");
  attr->set_type(onnx::AttributeProto::GRAPH);
  auto* inner = attr->mutable_g()->add_node();
  inner->set_domain("ai.onnx");  // a spelling of the default domain: not local.f
  inner->set_op_type("Relu");
  inner = attr->mutable_g()->add_node();
  inner->set_domain("local");
  inner->set_op_type("f");
  std::string why = Refusal(WithFunctions({Function("f", {"g"}), g}, "f"));
  EXPECT_NE(why.find("local.f -> local.g -> local.f"), std::string::npos) << why;
}

// An acyclic chain is expanded by the same recursion: it may nest kMaxSubgraphDepth levels, and
// the main graph's call adds one.
TEST(Functions, DepthIsBoundedWithoutRecursingOverTheChain) {
  // local.f0 -> local.f1 -> ... -> local.f<length-1>, which runs a Relu; the graph calls f0.
  auto chain = [](int length) {
    onnx::ModelProto m = WithFunctions({}, "f0");
    for (int i = 0; i < length; ++i) {
      *m.add_functions() = Function("f" + std::to_string(i),
                                    {i + 1 < length ? "f" + std::to_string(i + 1) : std::string()});
    }
    return m;
  };
  // f0 -> ... -> f15: the main graph's call is level 1, f15's body level 16.
  EXPECT_EQ(Refusal(chain(kMaxSubgraphDepth)), "");
  std::string why = Refusal(chain(kMaxSubgraphDepth + 1));
  EXPECT_NE(why.find("node 'call'"), std::string::npos) << why;
  EXPECT_NE(why.find("main graph -> local.f0 -> local.f1"), std::string::npos) << why;
  EXPECT_NE(why.find("limit of 16"), std::string::npos) << why;
  // A hundred thousand functions in one chain: refused, with no stack to overflow.
  why = Refusal(chain(100000));
  EXPECT_NE(why.find("nest 17 levels deep"), std::string::npos) << why;
}

TEST(Functions, LoadRefusesARecursiveModel) {
  porttool::testing::TempDir dir;
  porttool::testing::WriteFile(
      dir / "m.onnx",
      WithFunctions({Function("f", {"g"}), Function("g", {"f"})}, "f").SerializeAsString());
  try {
    Load(dir / "m.onnx");
    FAIL() << "a recursive model loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("local.f -> local.g -> local.f"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace porttool::io::functions_test
