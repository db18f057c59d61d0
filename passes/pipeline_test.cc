#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"

namespace porttool::passes {
namespace {

TEST(PipelineParse, IdsAndOptions) {
  auto steps = ParsePipeline(" infer-shapes{input-shape=x:1x3x8x8 max-iterations=3} , topo-sort");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].id, "infer-shapes");
  EXPECT_EQ(steps[0].options.Get("input-shape"), "x:1x3x8x8");
  EXPECT_EQ(steps[0].options.GetInt("max-iterations", 0), 3);
  EXPECT_EQ(steps[1].id, "topo-sort");
  EXPECT_TRUE(steps[1].options.values().empty());
}

TEST(PipelineParse, QuotedValuesMayHoldCommasAndSpaces) {
  auto steps = ParsePipeline("infer-shapes{input-shape='x:1x3, y:2'}");
  EXPECT_EQ(steps[0].options.Get("input-shape"), "x:1x3, y:2");
}

TEST(PipelineParse, SemicolonsSeparateOptionsAndListValuesKeepTheirCommas) {
  auto steps = ParsePipeline("convert-fp16{keep=a,b; io=fp16},topo-sort");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].options.Get("keep"), "a,b");
  EXPECT_EQ(steps[0].options.Get("io"), "fp16");
  EXPECT_EQ(ParsePipeline("convert-fp16{keep=a;io=fp16}")[0].options.Get("keep"), "a");
  EXPECT_EQ(ParsePipeline("convert-fp16{keep='a;b'}")[0].options.Get("keep"), "a;b");
}

void ExpectUsageError(const std::string& text, const std::string& fragment) {
  try {
    ParsePipeline(text);
    FAIL() << "no error for: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(PipelineParse, MalformedStringsAreUsageErrorsWithColumn) {
  ExpectUsageError("", "empty");
  ExpectUsageError("check,", "column 7");
  ExpectUsageError("check{a=1", "missing '}'");
  ExpectUsageError("check{a}", "expected '='");
  ExpectUsageError("check{a=1 a=2}", "given twice");
  ExpectUsageError("check{a='1}", "unterminated quote");
  ExpectUsageError("check topo-sort", "expected ','");
}

TEST(PipelineRun, UnknownPassSuggestsClosestBeforeRunningAnything) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) { y = Relu(x) })");
  try {
    RunPipeline(model, ParsePipeline("topo-sort,topo-srot"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("topo-sort"), std::string::npos) << e.what();
  }
}

TEST(PipelineRun, UnknownOptionIsUsageError) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) { y = Relu(x) })");
  EXPECT_THROW(RunPipeline(model, ParsePipeline("topo-sort{depth=2}")), Error);
}

// Integer options are checked against their range before any pass runs: `max=2^40` used to be
// truncated to an int by convert-opset, `max-rounds=x` to fail only when its pass ran.
TEST(PipelineValidate, IntegerOptionsOutsideTheirRangeAreUsageErrors) {
  for (const char* bad :
       {"convert-opset{min=x max=13}", "convert-opset{min=1 max=1099511627776}",
        "convert-opset{to=0}", "fold-constants{max-rounds=-1}", "infer-shapes{max-iterations=2.5}",
        "fold-constants{max-tensor-bytes=99999999999999999999}"}) {
    try {
      ValidatePipeline(ParsePipeline(bad));
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
      EXPECT_NE(std::string(e.what()).find(": expected an integer from "), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(
      ValidatePipeline(ParsePipeline("convert-opset{min=12 max=19},fold-constants{max-rounds=3}")));
}

TEST(TopoSort, ReordersAndKeepsSortedGraphsUntouched) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) { z = Relu(y)
      y = Neg(x) })");
  ASSERT_FALSE(ir::GraphView(model.proto.graph()).IsTopologicallySorted());
  auto reports = RunPipeline(model, ParsePipeline("topo-sort"));
  EXPECT_EQ(reports[0].result.changes, 1);
  EXPECT_TRUE(ir::GraphView(model.proto.graph()).IsTopologicallySorted());
  EXPECT_EQ(model.proto.graph().node(0).op_type(), "Neg");
  std::string before = model.proto.SerializeAsString();
  EXPECT_EQ(RunPipeline(model, ParsePipeline("topo-sort"))[0].result.changes, 0);
  EXPECT_EQ(model.proto.SerializeAsString(), before);
}

TEST(EliminateIdentity, RemovesIdentityAndInferenceDropout) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) {
      a = Identity(x)
      b = Dropout(a)
      c = Identity(b)
      z = Relu(c) })");
  auto reports = RunPipeline(model, ParsePipeline("eliminate-identity"));
  EXPECT_EQ(reports[0].result.changes, 3);
  ASSERT_EQ(model.proto.graph().node_size(), 1);
  EXPECT_EQ(model.proto.graph().node(0).input(0), "x");
  EXPECT_EQ(model.proto.graph().output(0).name(), "z");
}

TEST(EliminateIdentity, KeepsGraphOutputsUsedMasksAndSubgraphCaptures) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, bool c) => (float[2] y, bool[2] m, float[2] w) {
      y = Identity(x)
      d, m = Dropout(x)
      k = Identity(x)
      w = If(c) <then_branch = t () => (float[2] o) { o = Relu(k) },
                 else_branch = e () => (float[2] o) { o = Neg(k) }> })");
  auto reports = RunPipeline(model, ParsePipeline("eliminate-identity"));
  EXPECT_EQ(reports[0].result.changes, 0);
  std::string notes;
  for (const auto& n : reports[0].result.notes) notes += n + "\n";
  EXPECT_NE(notes.find("is a graph output"), std::string::npos) << notes;
  EXPECT_NE(notes.find("mask output is used"), std::string::npos) << notes;
  EXPECT_NE(notes.find("inside a subgraph"), std::string::npos) << notes;
}

TEST(FixedPoint, StopsWhenARoundChangesNothing) {
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] z) { z = Relu(y)
      y = Identity(x) })");
  std::vector<StepReport> reports;
  bool hit_cap = true;
  int rounds =
      RunToFixedPoint(model, ParsePipeline("topo-sort,eliminate-identity"), 5, hit_cap, reports);
  EXPECT_EQ(rounds, 2);
  EXPECT_FALSE(hit_cap);
  EXPECT_EQ(model.proto.graph().node_size(), 1);
}

}  // namespace
}  // namespace porttool::passes
