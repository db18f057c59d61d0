#include "lib/stages/reduce.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>

#include <atomic>
#include <set>

#include "lib/stages/reduce_checks.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::stages {
namespace {

// Two branches joined by an Add, a Constant read by a Mul, and a tail: 11 nodes, 10 of them units.
constexpr char kBranches[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
  a = Relu(x)
  b = Neg(a)
  c = Abs(b)
  d = Sigmoid(x)
  e = Tanh(d)
  f = Add(c, e)
  k = Constant<value = float[1,4] {1.0, 2.0, 3.0, 4.0}>()
  m = Mul(f, k)
  h = Exp(m)
  i = Softsign(h)
  y = Identity(i)
})";

std::multiset<std::string> Ops(const io::Model& model) {
  std::multiset<std::string> ops;
  for (const auto& node : model.proto.graph().node()) ops.insert(node.op_type());
  return ops;
}

// Fails when the candidate holds every op in `needed`: the stand-in for a converter that aborts
// on a combination of nodes.
class OpsCheck : public CandidateCheck {
 public:
  explicit OpsCheck(std::set<std::string> needed) : needed_(std::move(needed)) {}
  bool needs_file() const override { return false; }
  bool deterministic() const override { return !flaky; }
  std::string signature() const override { return "ops"; }
  CheckVerdict Check(const io::Model& candidate, const std::filesystem::path&,
                     const std::vector<int>&) override {
    int call = ++calls;
    if (cancel_after > 0 && call >= cancel_after) cancel.store(true);
    auto ops = Ops(candidate);
    bool failing = std::all_of(needed_.begin(), needed_.end(),
                               [&ops](const std::string& op) { return ops.count(op) > 0; });
    if (flaky && call % 2 == 0) failing = !failing;
    return {failing, false, failing ? 1 : 0, failing ? "has them" : "lacks one"};
  }
  std::atomic<int> calls{0};
  bool flaky = false;
  int cancel_after = 0;
  std::atomic<bool> cancel{false};

 private:
  std::set<std::string> needed_;
};

struct Reduction {
  testing::TempDir dir;
  io::Model model = io::ParseText(kBranches);
  ReduceOptions options;
  Reduction() { options.work_dir = dir / "work"; }
};

TEST(Reduce, EndsOneMinimalOnTheNodesThatFailAndEveryCandidateIsAValidModel) {
  Reduction r;
  OpsCheck check({"Neg", "Tanh"});
  ReduceResult result = Reduce(r.model, check, r.options);
  EXPECT_EQ(Ops(result.model), (std::multiset<std::string>{"Neg", "Tanh"}));
  EXPECT_TRUE(result.minimal);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.units, 10u);
  EXPECT_EQ(result.invocations, check.calls.load());
  onnx::checker::check_model(result.model.proto);
  // 1-minimal, checked here rather than trusted: without any one node the check passes.
  CandidateBuilder builder(r.model);
  for (int drop : result.nodes) {
    std::vector<int> rest;
    for (int n : result.nodes) {
      if (n != drop) rest.push_back(n);
    }
    io::Model smaller = builder.Build(rest);
    onnx::checker::check_model(smaller.proto);
    EXPECT_FALSE(check.Check(smaller, {}, rest).failing) << "dropping node " << drop;
  }
  EXPECT_TRUE(std::filesystem::exists(r.options.work_dir / "best.onnx"));
  EXPECT_TRUE(std::filesystem::exists(r.options.work_dir / "reduce.json"));
}

TEST(Reduce, TheResultDoesNotDependOnTheNumberOfJobs) {
  std::vector<int> first;
  for (int jobs : {1, 2, 3, 5}) {
    Reduction r;
    r.options.jobs = jobs;
    OpsCheck check({"Abs", "Exp"});
    ReduceResult result = Reduce(r.model, check, r.options);
    if (first.empty()) first = result.nodes;
    EXPECT_EQ(result.nodes, first) << jobs << " jobs";
    EXPECT_TRUE(result.minimal);
  }
}

TEST(Reduce, PlainDeltaDebuggingReachesTheSameMinimalModel) {
  Reduction r;
  r.options.bisect = false;
  OpsCheck check({"Neg", "Tanh"});
  ReduceResult result = Reduce(r.model, check, r.options);
  EXPECT_EQ(Ops(result.model), (std::multiset<std::string>{"Neg", "Tanh"}));
  EXPECT_EQ(result.bisect_invocations, 0);
}

TEST(Reduce, AConstantNodeComesWithTheNodeReadingIt) {
  Reduction r;
  OpsCheck check({"Mul"});
  ReduceResult result = Reduce(r.model, check, r.options);
  ASSERT_EQ(result.nodes.size(), 1u);
  // The weight stays a weight, as an initializer of the same name, not a new graph input.
  EXPECT_EQ(Ops(result.model), (std::multiset<std::string>{"Mul"}));
  const auto& g = result.model.proto.graph();
  ASSERT_EQ(g.initializer_size(), 1);
  EXPECT_EQ(g.initializer(0).name(), "k");
  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).name(), "f");
  EXPECT_FALSE(result.constant_nodes_kept);
}

TEST(Reduce, AFailureAboutConstantNodesKeepsThemAsNodes) {
  Reduction r;
  OpsCheck check({"Constant", "Mul"});
  ReduceResult result = Reduce(r.model, check, r.options);
  EXPECT_TRUE(result.constant_nodes_kept);
  EXPECT_EQ(Ops(result.model), (std::multiset<std::string>{"Constant", "Mul"}));
  EXPECT_TRUE(result.minimal);
}

// The finding (kCheckFailed) Reduce stops with, as its message; empty when it did not stop.
std::string FindingOf(OpsCheck& check) {
  Reduction r;
  try {
    Reduce(r.model, check, r.options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCheckFailed);
    return e.what();
  }
  return "";
}

TEST(Reduce, AModelOnWhichTheCheckPassesIsAFindingNotAReduction) {
  OpsCheck check({"Conv"});
  EXPECT_NE(FindingOf(check).find("passes on the original"), std::string::npos);
}

TEST(Reduce, AFlakyCheckIsDetectedOnTheOriginal) {
  OpsCheck check({"Neg"});
  check.flaky = true;
  EXPECT_NE(FindingOf(check).find("flaky"), std::string::npos);
}

TEST(Reduce, CancellingKeepsTheBestFailingModelSoFar) {
  Reduction r;
  OpsCheck check({"Neg", "Tanh"});
  check.cancel_after = 4;
  r.options.cancel = &check.cancel;
  ReduceResult result = Reduce(r.model, check, r.options);
  EXPECT_TRUE(result.interrupted);
  EXPECT_FALSE(result.minimal);
  ASSERT_FALSE(result.nodes.empty());
  EXPECT_TRUE(check.Check(result.model, {}, result.nodes).failing);
  auto report = nlohmann::json::parse(testing::ReadFile(r.options.work_dir / "reduce.json"));
  EXPECT_TRUE(report["interrupted"].get<bool>());
}

TEST(Reduce, ASecondRunInTheSameWorkDirectoryTakesTheVerdictsFromTheCache) {
  Reduction r;
  OpsCheck first({"Neg", "Tanh"});
  ReduceResult a = Reduce(r.model, first, r.options);
  OpsCheck second({"Neg", "Tanh"});
  ReduceResult b = Reduce(r.model, second, r.options);
  EXPECT_EQ(a.nodes, b.nodes);
  // Only the original is checked again: its verdict never comes from the cache.
  EXPECT_EQ(b.invocations, 1);
  EXPECT_EQ(second.calls.load(), 1);
  EXPECT_GT(b.cache_hits, 0);
}

// ---- Numeric checks ----

constexpr char kWeighted[] = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[1,4] w1 = {0.5, 0.25, 2.0, 1.0}, float[1,4] w2 = {1.0, 1.0, 1.0, 1.0}> {
  a = Mul(x, w1)
  b = Relu(a)
  c = Add(b, w2)
  d = Sigmoid(c)
  y = Mul(d, w2)
})";

TEST(Reduce, NumericAgainstASecondModelFindsTheNodeWithTheChangedWeight) {
  testing::TempDir dir;
  io::Model bad = io::ParseText(kWeighted);
  std::string good_text = kWeighted;
  good_text.replace(good_text.find("w2 = {1.0"), 9, "w2 = {1.1");
  io::Model good = io::ParseText(good_text);
  // w2 is read by the Add and by the last Mul: both diverge locally, each alone suffices.
  BoundaryValues values(good, {"s0"},
                        {{{"x", runtime::RandomInputs(runtime::InputSpecsOf(good), 1)["x"]}}});
  NumericCheckOptions numeric;
  numeric.against = &good;
  NumericCheck check(numeric, values);
  ReduceOptions options;
  options.work_dir = dir / "work";
  ReduceResult result = Reduce(bad, check, options);
  ASSERT_EQ(result.nodes.size(), 1u);
  EXPECT_EQ(result.model.proto.graph().node(0).op_type(), "Add");
  EXPECT_NE(result.steps.back().detail.find("max |diff|"), std::string::npos);
}

TEST(Reduce, NumericAgainstFloat16FindsTheNodeThatOverflows) {
  testing::TempDir dir;
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[1] big = {100000.0}, float[1] small = {0.00001}> {
  a = Relu(x)
  b = Mul(a, big)
  c = Mul(b, small)
  y = Tanh(c)
})");
  runtime::Tensor x(onnx::TensorProto::FLOAT, {1, 4});
  for (int i = 0; i < 4; ++i) x.mutable_data<float>()[i] = 0.5f + i;
  BoundaryValues values(model, {"s0"}, {{{"x", x}}});
  NumericCheckOptions numeric;
  numeric.float16 = true;
  NumericCheck check(numeric, values);
  ReduceOptions options;
  options.work_dir = dir / "work";
  ReduceResult result = Reduce(model, check, options);
  ASSERT_EQ(result.nodes.size(), 1u);
  const auto& node = result.model.proto.graph().node(0);
  EXPECT_EQ(node.op_type(), "Mul");
  EXPECT_EQ(node.input(1), "big");
}

TEST(Reduce, ANodeHoldingSubgraphsIsKeptOrRemovedWhole) {
  testing::TempDir dir;
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, bool c) => (float[1,4] y) {
  a = Relu(x)
  b = If(c) <then_branch = t () => (float[1,4] o) { o = Neg(a) },
             else_branch = e () => (float[1,4] o) { o = Abs(a) }>
  y = Tanh(b)
})");
  OpsCheck check({"If", "Tanh"});
  ReduceOptions options;
  options.work_dir = dir / "work";
  ReduceResult result = Reduce(model, check, options);
  EXPECT_EQ(result.subgraph_nodes, 1);
  EXPECT_EQ(Ops(result.model), (std::multiset<std::string>{"If", "Tanh"}));
  // The branches read `a` from the outer scope: it became a graph input of the candidate.
  ASSERT_EQ(result.model.proto.graph().input_size(), 2);
  onnx::checker::check_model(result.model.proto);
}

}  // namespace
}  // namespace porttool::stages
