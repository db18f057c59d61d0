// inline-if: the taken branch replaces an If with a constant condition (then or else), outer
// references kept, every branch name renamed apart from the graph and from other inlined
// branches, nested Ifs inlined in the same run or (shape-derived conditions) in simplify's next
// round; an If on a run-time value is kept with the reason naming the input it depends on. Every
// result passes the ONNX checker and computes what the model with the If computes.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lib/analysis/check.h"
#include "lib/ir/graph_view.h"
#include "lib/shape/input_values.h"
#include "passes/pass_test_util.h"
#include "passes/transform.h"

namespace porttool::passes {
namespace {

using testing_util::CountOp;
using testing_util::MaxOutputDiff;
using testing_util::Notes;
using testing_util::RunOne;

std::string CheckerErrors(const io::Model& model) {
  analysis::CheckReport report;
  analysis::RunOnnxChecker(model, report);
  std::string text;
  for (const auto& f : report.findings) text += f.message + "\n";
  return text;
}

// Every tensor defined once in the main graph (SSA kept by the renaming).
void ExpectSingleDefinitions(const io::Model& model) {
  ir::GraphView view(model.proto.graph());
  EXPECT_TRUE(view.DuplicateDefinitions().empty());
  EXPECT_TRUE(view.UndefinedReads().empty());
}

io::Model TwoBranches(const std::string& cond) {
  return io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      c = Constant <value = bool {)" +
                       cond + R"(}> ()
      y = If (c) <
        then_branch = then_g () => (float[2,3] t) { t = Relu(x) },
        else_branch = else_g () => (float[2,3] e) { k = Constant <value = float {3.0}> ()
                                                     e = Add(x, k) } > })");
}

TEST(InlineIf, ConstantTrueTakesTheThenBranch) {
  const io::Model model = TwoBranches("1");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  EXPECT_EQ(r.changes, 1) << Notes(r);
  EXPECT_EQ(CountOp(m, "If"), 0);
  EXPECT_EQ(CountOp(m, "Relu"), 1);
  EXPECT_EQ(CountOp(m, "Add"), 0);
  // The branch output is produced under the If's own output name: the interface is unchanged.
  EXPECT_EQ(m.proto.graph().output(0).name(), "y");
  EXPECT_NE(Notes(r).find("inlined If 'If_y': its condition 'c' is constant true, then_branch"),
            std::string::npos)
      << Notes(r);
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

TEST(InlineIf, ConstantFalseTakesTheElseBranchWithItsConstants) {
  const io::Model model = TwoBranches("0");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  EXPECT_EQ(r.changes, 1) << Notes(r);
  EXPECT_EQ(CountOp(m, "If"), 0);
  EXPECT_EQ(CountOp(m, "Relu"), 0);
  EXPECT_EQ(CountOp(m, "Add"), 1);
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

// The branch reads an outer tensor, an outer initializer, and returns an outer tensor directly
// and one of its tensors twice: the outer names stay, the extra outputs go through Identity.
TEST(InlineIf, OuterReferencesKeptAndOutputsThatNeedAnIdentity) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y, float[2,3] z, float[2,3] w, float[2,3] v)
      <bool c = {1}, float[3] bias = {1.0, 2.0, 3.0}> {
      a = Neg(x)
      y, z, w, v = If (c) <
        then_branch = then_g () => (float[2,3] s, float[2,3] a, float[2,3] s2, float[2,3] s3) {
          s = Add(a, bias)
          s2 = Identity(s)
          s3 = Mul(s2, s) },
        else_branch = else_g () => (float[2,3] e1, float[2,3] e2, float[2,3] e3, float[2,3] e4) {
          e1 = Identity(x)
          e2 = Identity(x)
          e3 = Identity(x)
          e4 = Identity(x) } > })");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  ASSERT_EQ(r.changes, 1) << Notes(r);
  ExpectSingleDefinitions(m);
  // a is the outer Neg's output, still read under its own name; bias the outer initializer.
  bool reads_bias = false;
  for (const auto& n : m.proto.graph().node()) {
    if (n.op_type() == "Add") {
      EXPECT_EQ(n.input(0), "a");
      reads_bias = n.input(1) == "bias";
    }
  }
  EXPECT_TRUE(reads_bias);
  // z is the outer `a` wired through an Identity: the interface names stay.
  EXPECT_EQ(CountOp(m, "Identity"), 2) << m.proto.graph().DebugString();
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

// Two Ifs whose branches define the same names, next to an outer tensor already called what the
// renaming would pick first: every name stays single, and the numbers stay the If model's.
TEST(InlineIf, NamesFromSeveralBranchesNeverCollide) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y, float[2,3] z, float[2,3] q) <bool c = {1}> {
      pre = Relu(x)
      y = If (c) <
        then_branch = a () => (float[2,3] u) { t = Neg(x)
                                               u = Add(t, t) },
        else_branch = b () => (float[2,3] u) { u = Identity(x) } >
      z = If (c) <
        then_branch = a2 () => (float[2,3] u) { t = Sigmoid(x)
                                                u = Mul(t, t) },
        else_branch = b2 () => (float[2,3] u) { u = Identity(x) } >
      q = Add(pre, y) })");
  io::Model m = model;
  // Both Ifs named so their prefixes are predictable, and the outer tensor called what the first
  // If's `t` would become without the name generator ("first/t"; the text form cannot spell it).
  auto* graph = m.proto.mutable_graph();
  graph->mutable_node(0)->set_output(0, "first/t");
  graph->mutable_node(3)->set_input(0, "first/t");
  graph->mutable_node(1)->set_name("first");
  graph->mutable_node(2)->set_name("second");
  io::Model named = m;
  PassResult r = RunOne(m, "inline-if");
  ASSERT_EQ(r.changes, 2) << Notes(r);
  ExpectSingleDefinitions(m);
  std::set<std::string> outputs;
  for (const auto& n : m.proto.graph().node()) outputs.insert(n.output(0));
  EXPECT_TRUE(outputs.count("first/t"));    // the outer tensor kept its name
  EXPECT_TRUE(outputs.count("first/t_1"));  // the first If's t, renamed around it
  EXPECT_TRUE(outputs.count("second/t"));
  EXPECT_EQ(MaxOutputDiff(named, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

// A nested If with a constant condition is inlined in the same run, and its body's capture of a
// name the outer branch defines follows that name's renaming.
TEST(InlineIf, NestedIfsInlineInOneRunAndTheirCapturesFollowTheRenaming) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) <bool c = {1}, bool d = {0}> {
      y = If (c) <
        then_branch = outer_then () => (float[2,3] o) {
          t = Neg(x)
          o = If (d) <
            then_branch = in_then () => (float[2,3] p) { p = Relu(t) },
            else_branch = in_else () => (float[2,3] p) { p = Sigmoid(t) } > },
        else_branch = outer_else () => (float[2,3] o) { o = Identity(x) } > })");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  EXPECT_EQ(r.changes, 2) << Notes(r);
  EXPECT_EQ(CountOp(m, "If"), 0);
  EXPECT_EQ(CountOp(m, "Sigmoid"), 1);
  ExpectSingleDefinitions(m);
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

// The nested body captures the renamed `t2` while its If is still nested (its condition is not
// constant): the capture must follow the renaming or the model no longer runs.
TEST(InlineIf, KeptNestedIfStillReadsTheRenamedOuterTensor) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, bool d) => (float[2,3] y) <bool c = {1}> {
      t = Relu(x)
      y = If (c) <
        then_branch = outer_then () => (float[2,3] o) {
          t2 = Neg(x)
          o = If (d) <
            then_branch = in_then () => (float[2,3] p) { p = Add(t2, t) },
            else_branch = in_else () => (float[2,3] p) { t3 = Sigmoid(x)
                                                         p = Mul(t3, t) } > },
        else_branch = outer_else () => (float[2,3] o) { o = Identity(x) } > })");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  EXPECT_EQ(r.changes, 1) << Notes(r);
  ASSERT_EQ(CountOp(m, "If"), 1);
  // The nested If is unnamed: it is labelled by its output, now the outer If's `y`.
  EXPECT_NE(Notes(r).find("kept If 'If_y': its condition 'd' is computed at run time from the "
                          "value of graph input(s) d"),
            std::string::npos)
      << Notes(r);
  const onnx::NodeProto* kept = nullptr;
  for (const auto& n : m.proto.graph().node()) {
    if (n.op_type() == "If") kept = &n;
  }
  // then reads the renamed t2 (captured); the outer t and else's own t3 keep their names.
  EXPECT_EQ(kept->attribute(0).g().node(0).input(0), "If_y/t2");
  EXPECT_EQ(kept->attribute(0).g().node(0).input(1), "t");
  EXPECT_EQ(kept->attribute(1).g().node(1).input(0), "t3");
  ExpectSingleDefinitions(m);
  EXPECT_EQ(MaxOutputDiff(model, m), 0.0);
  EXPECT_EQ(CheckerErrors(m), "");
}

// A condition computed from a shape: Shape/Gather/Equal/Not fold once the dim is pinned, then the
// If goes, and the If nested in its branch (a Size/Equal chain) in the next round.
io::Model ShapeConditions() {
  return io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4] x) => (float[N,4] y) <int64 zero = {0}, int64 one = {1}, int64 four = {4}> {
      s = Shape(x)
      n = Gather(s, zero)
      single = Equal(n, one)
      batched = Not(single)
      y = If (batched) <
        then_branch = many () => (float[N,4] a) { a = Neg(x) },
        else_branch = one_row () => (float[N,4] b) {
          k = Size(x)
          is4 = Equal(k, four)
          b = If (is4) <
            then_branch = four_el () => (float[N,4] c) { c = Relu(x) },
            else_branch = other () => (float[N,4] c) { c = Sigmoid(x) } > } > })");
}

TEST(InlineIf, ShapeDerivedConditionsFoldAndNestedIfsFollowInSimplify) {
  io::Model m = ShapeConditions();
  PassContext context;
  TransformReport r = Simplify(m, "x:1x4", context);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(CountOp(m, "If"), 0) << m.proto.graph().DebugString();
  ASSERT_EQ(m.proto.graph().node_size(), 1);
  EXPECT_EQ(m.proto.graph().node(0).op_type(), "Relu");
  EXPECT_GE(r.rounds, 2);  // the nested If's condition folds only after its parent is inlined
  EXPECT_EQ(CheckerErrors(m), "");
  io::Model pinned = ShapeConditions();
  shape::ApplyInputShapes(pinned, {{"x", {1, 4}}});
  EXPECT_EQ(MaxOutputDiff(pinned, m), 0.0);
}

TEST(InlineIf, UnpinnedShapeConditionIsKeptNamingTheShape) {
  io::Model m = ShapeConditions();
  PassContext context;
  TransformReport r = Simplify(m, "", context);
  EXPECT_EQ(CountOp(m, "If"), 1);
  std::string notes;
  for (const auto& s : r.steps) {
    if (s.id == "inline-if") notes += Notes(s.result);
  }
  // simplify names the unnamed If first (name-nodes: <op>_<position>).
  EXPECT_NE(notes.find("kept If 'If_4': its condition 'batched' is computed at run time from the "
                       "shape of graph input(s) x"),
            std::string::npos)
      << notes;
}

// A given input value makes the sample-rate condition constant: simplify inlines it.
TEST(InlineIf, InputValueMakesTheConditionConstant) {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, int64 sr) => (float[2,3] y) <int64 rate = {16000}> {
      is16k = Equal(sr, rate)
      y = If (is16k) <
        then_branch = hi () => (float[2,3] a) { a = Relu(x) },
        else_branch = lo () => (float[2,3] b) { b = Neg(x) } > })";
  io::Model kept = io::ParseText(text);
  PassContext context;
  Simplify(kept, "", context);
  EXPECT_EQ(CountOp(kept, "If"), 1);
  io::Model m = io::ParseText(text);
  shape::InputValue v;
  v.numbers = {int64_t{16000}};
  shape::ApplyInputValues(m, {{"sr", v}});
  Simplify(m, "", context);
  EXPECT_EQ(CountOp(m, "If"), 0);
  ASSERT_EQ(m.proto.graph().node_size(), 1);
  EXPECT_EQ(m.proto.graph().node(0).op_type(), "Relu");
  ASSERT_EQ(m.proto.graph().input_size(), 1);
  EXPECT_EQ(m.proto.graph().input(0).name(), "x");
}

TEST(InlineIf, RunTimeConditionIsKeptWithTheInputItDependsOn) {
  const io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[1] gate) => (float[2,3] y) <float[1] half = {0.5}> {
      open = Greater(gate, half)
      y = If (open) <
        then_branch = a () => (float[2,3] t) { t = Relu(x) },
        else_branch = b () => (float[2,3] e) { e = Neg(x) } > })");
  io::Model m = model;
  PassResult r = RunOne(m, "inline-if");
  EXPECT_EQ(r.changes, 0);
  EXPECT_EQ(m.proto.SerializeAsString(), model.proto.SerializeAsString());
  EXPECT_NE(Notes(r).find("kept If 'If_y': its condition 'open' is computed at run time from the "
                          "value of graph input(s) gate (give the value to inline it)"),
            std::string::npos)
      << Notes(r);
}

}  // namespace
}  // namespace porttool::passes
