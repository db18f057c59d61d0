// The contract every registered pass keeps, checked over the whole registry so a new pass is
// covered the day it is added: on a model it has nothing to do with it changes nothing, and on a
// model with If bodies it either looks inside them or says which bodies it left alone — never a
// silent skip — and in both cases the executor gives the same outputs before and after.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "passes/pass.h"
#include "passes/pass_test_util.h"

namespace porttool::passes {
namespace {

using testing_util::MaxOutputDiff;
using testing_util::Notes;
using testing_util::RunOne;

// The pipeline text that runs `pass` with the options it requires.
std::string Invocation(const Pass& pass) {
  if (pass.id() == "convert-opset") return "convert-opset{to=14}";
  return pass.id();
}

// replace-with-custom-op needs node names and makes a node no executor can run, by design; its
// own tests cover it.
bool Executable(const Pass& pass) { return pass.id() != "replace-with-custom-op"; }

// Passes whose job changes any model: annotate it, relabel its opset, name the nodes the text
// parser leaves unnamed.
const std::set<std::string> kChangesEveryModel = {"infer-shapes", "check", "convert-opset",
                                                  "name-nodes", "convert-fp16"};

// The largest output difference a pass may make: none, but convert-fp16 rounds every tensor to
// float16 (these models' outputs are below 4, whose float16 spacing is 2^-9: a few roundings of
// that size, accumulated over two or three nodes, stay under 1e-2).
double AllowedDiff(const Pass& pass) { return pass.id() == "convert-fp16" ? 1e-2 : 0.0; }

TEST(PassContract, NothingToMatchChangesNothing) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      a = Relu(x)
      y = Sigmoid(a) })");
  for (const auto& pass : Registry()) {
    if (!Executable(*pass)) continue;
    SCOPED_TRACE(pass->id());
    io::Model m = model;
    auto result = RunOne(m, Invocation(*pass));
    EXPECT_FALSE(result.failed) << Notes(result);
    EXPECT_EQ(m.proto.graph().output(0).name(), "y");
    EXPECT_LE(MaxOutputDiff(model, m), AllowedDiff(*pass));
    if (kChangesEveryModel.count(pass->id())) continue;
    EXPECT_EQ(result.changes, 0) << Notes(result);
    m.proto.mutable_graph()->clear_value_info();  // shape annotations may be added
    EXPECT_EQ(m.proto.SerializeAsString(), model.proto.SerializeAsString());
  }
}

TEST(PassContract, IfBodiesAreVisitedOrNamedInANote) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, bool c) => (float[2,3] y) {
      y = If (c) <
        then_branch = then_g () => (float[2,3] t) {
          three = Constant <value = float {3.0}> ()
          t = Add(x, three) },
        else_branch = else_g () => (float[2,3] e) { e = Sigmoid(x) } > })");
  for (const auto& pass : Registry()) {
    if (!Executable(*pass)) continue;
    SCOPED_TRACE(pass->id());
    io::Model m = model;
    auto result = RunOne(m, Invocation(*pass));
    EXPECT_FALSE(result.failed) << Notes(result);
    EXPECT_EQ(m.proto.graph().output(0).name(), "y");
    EXPECT_LE(MaxOutputDiff(model, m), AllowedDiff(*pass));
    if (pass->visits_subgraph_bodies()) continue;
    EXPECT_NE(Notes(result).find("left the bodies of If"), std::string::npos) << Notes(result);
  }
}

}  // namespace
}  // namespace porttool::passes
