#include "lib/ir/split.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>

#include <algorithm>
#include <set>

#include "lib/ir/dtype.h"
#include "lib/shape/infer.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::ir {
namespace {

// Split as the CLI calls it: with shape inference handed in (lib/ir cannot include lib/shape; the
// test, like the CLI, supplies it).
SplitResult SplitAt(const io::Model& m, const std::vector<std::string>& names,
                    SplitOptions options = {}) {
  options.infer_types = shape::TypeInference();
  return SplitAtNodes(m, names, options);
}

SplitResult SplitHost(const io::Model& m, const std::vector<bool>& host) {
  SplitOptions options;
  options.infer_types = shape::TypeInference();
  return SplitModel(m, host, options);
}

std::vector<std::string> Names(const std::vector<BoundaryTensor>& tensors) {
  std::vector<std::string> out;
  for (const auto& t : tensors) out.push_back(t.name);
  return out;
}

std::vector<std::string> NodeNames(const Segment& segment) {
  std::vector<std::string> out;
  for (const auto& node : segment.model.proto.graph().node()) out.push_back(node.name());
  return out;
}

std::vector<std::string> Roles(const SplitResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.segments) out.push_back(RoleName(s.role));
  return out;
}

const Bridge* FindBridge(const SplitResult& r, const std::string& tensor) {
  for (const auto& b : r.bridges) {
    if (b.tensor == tensor) return &b;
  }
  return nullptr;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The structural contract of a split: each original output produced by exactly one segment,
// every segment input a graph input or a bridge from an earlier segment, every bridge an output
// of its producer and an input of each consumer, every segment a valid model.
void ExpectChained(const io::Model& source, const SplitResult& r) {
  GraphView view(source.proto.graph());
  for (const auto& out : source.proto.graph().output()) {
    int producers = 0;
    for (const auto& s : r.segments) producers += Contains(Names(s.outputs), out.name());
    EXPECT_EQ(producers, 1) << out.name();
  }
  for (size_t s = 0; s < r.segments.size(); ++s) {
    for (const auto& in : r.segments[s].inputs) {
      const Bridge* b = FindBridge(r, in.name);
      bool graph_input = view.GraphInput(in.name) != nullptr;
      EXPECT_TRUE(graph_input || b) << in.name << " in segment " << s;
      if (b) {
        EXPECT_LT(b->producer, static_cast<int>(s));
        EXPECT_TRUE(std::count(b->consumers.begin(), b->consumers.end(), static_cast<int>(s)));
      }
    }
    EXPECT_NO_THROW(onnx::checker::check_model(r.segments[s].model.proto)) << "segment " << s;
    EXPECT_EQ(r.segments[s].model.proto.ir_version(), source.proto.ir_version());
    EXPECT_EQ(r.segments[s].model.proto.opset_import_size(), source.proto.opset_import_size());
  }
  for (const auto& b : r.bridges) {
    EXPECT_TRUE(Contains(Names(r.segments[b.producer].outputs), b.tensor)) << b.tensor;
    for (int c : b.consumers) EXPECT_TRUE(Contains(Names(r.segments[c].inputs), b.tensor));
  }
  // Every node that is not a (cloned) Constant lands in exactly one segment.
  std::multiset<std::string> placed;
  for (const auto& s : r.segments) {
    for (const auto& node : s.model.proto.graph().node()) {
      if (node.op_type() != "Constant") placed.insert(node.name());
    }
  }
  for (const auto& node : source.proto.graph().node()) {
    if (node.op_type() == "Constant") continue;
    EXPECT_EQ(placed.count(node.name()), 1u) << node.name();
  }
}

const char* kSplitChain = R"(
<ir_version: 8, opset_import: ["" : 17], producer_name: "test">
chain (float[1,4] x) => (float[1,4] y) {
  a = Relu(x)
  b = Neg(a)
  c = Abs(b)
  d = Sigmoid(c)
  y = Tanh(d)
}
)";

TEST(Split, LinearChain) {
  io::Model m = testing::ParseNamed(kSplitChain);
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  EXPECT_EQ(Roles(r), (std::vector<std::string>{"accelerator", "host", "accelerator"}));
  EXPECT_EQ(NodeNames(r.segments[0]), (std::vector<std::string>{"n_a"}));
  EXPECT_EQ(NodeNames(r.segments[1]), (std::vector<std::string>{"n_b"}));
  EXPECT_EQ(NodeNames(r.segments[2]), (std::vector<std::string>{"n_c", "n_d", "n_y"}));
  ASSERT_EQ(r.bridges.size(), 2u);
  EXPECT_EQ(r.bridges[0].tensor, "a");
  EXPECT_EQ(r.bridges[0].bytes, 16u);
  EXPECT_EQ(r.bridges[1].tensor, "b");
  EXPECT_EQ(r.segments[1].model.proto.producer_name(), "test");
  EXPECT_EQ(r.segments[2].file, "02_accelerator.onnx");
  EXPECT_EQ(r.graph_outputs.at("y"), 2);
}

TEST(Split, TwoCutsAndAdjacentCutsShareOneHostSegment) {
  io::Model m = testing::ParseNamed(kSplitChain);
  SplitResult two = SplitAt(m, {"n_b", "n_d"});
  ExpectChained(m, two);
  EXPECT_EQ(Roles(two), (std::vector<std::string>{"accelerator", "host", "accelerator", "host",
                                                  "accelerator"}));
  SplitResult adjacent = SplitAt(m, {"n_b", "n_c"});
  ExpectChained(m, adjacent);
  ASSERT_EQ(adjacent.segments.size(), 3u);
  EXPECT_EQ(NodeNames(adjacent.segments[1]), (std::vector<std::string>{"n_b", "n_c"}));
}

TEST(Split, CutAtFirstOrLastNodeEmitsNoEmptySegment) {
  io::Model m = testing::ParseNamed(kSplitChain);
  SplitResult first = SplitAt(m, {"n_a"});
  ExpectChained(m, first);
  EXPECT_EQ(Roles(first), (std::vector<std::string>{"host", "accelerator"}));
  EXPECT_EQ(Names(first.segments[0].inputs), (std::vector<std::string>{"x"}));
  SplitResult last = SplitAt(m, {"n_y"});
  ExpectChained(m, last);
  EXPECT_EQ(Roles(last), (std::vector<std::string>{"accelerator", "host"}));
  EXPECT_EQ(Names(last.segments[1].outputs), (std::vector<std::string>{"y"}));
}

TEST(Split, SkipConnectionAcrossTheCutIsBridgedToEveryConsumer) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,3] y) {
  a = Relu(x)
  b = Neg(a)
  c = Abs(b)
  y = Add(c, a)
}
)");
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  const Bridge* skip = FindBridge(r, "a");
  ASSERT_NE(skip, nullptr);
  EXPECT_EQ(skip->producer, 0);
  EXPECT_EQ(skip->consumers, (std::vector<int>{1, 2}));
  EXPECT_EQ(Names(r.segments[2].inputs), (std::vector<std::string>{"a", "b"}));
}

TEST(Split, GraphOutputProducedBeforeTheCut) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] early, float[4] y) {
  early = Relu(x)
  b = Neg(early)
  y = Abs(b)
}
)");
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  EXPECT_EQ(r.graph_outputs.at("early"), 0);
  EXPECT_EQ(Names(r.segments[0].outputs), (std::vector<std::string>{"early"}));
  ASSERT_NE(FindBridge(r, "early"), nullptr);  // also read by the host segment
  // A graph input read only by a later segment is that segment's input.
  io::Model late = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x, float[4] z) => (float[4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Add(b, z)
}
)");
  SplitResult r2 = SplitAt(late, {"n_b"});
  ExpectChained(late, r2);
  EXPECT_EQ(Names(r2.segments[2].inputs), (std::vector<std::string>{"z", "b"}));
}

TEST(Split, CutNodeWithTwoInputsAndTwoOutputs) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x, int64[1] k) => (float[1,3] y) {
  a = Relu(x)
  v, i = TopK(a, k)
  f = Cast<to = 1>(i)
  y = Add(v, f)
}
)");
  SplitResult r = SplitAt(m, {"n_v"});
  ExpectChained(m, r);
  EXPECT_EQ(Names(r.segments[1].inputs), (std::vector<std::string>{"k", "a"}));
  EXPECT_EQ(Names(r.segments[1].outputs), (std::vector<std::string>{"v", "i"}));
  EXPECT_EQ(Names(r.segments[2].inputs), (std::vector<std::string>{"v", "i"}));
}

TEST(Split, SharedInitializerIsCarriedByEverySegmentThatReadsIt) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y)
<float[4] w = {1.0, 2.0, 3.0, 4.0}, float[4] unused = {0.0, 0.0, 0.0, 0.0}>
{
  a = Add(x, w)
  b = Neg(a)
  y = Mul(b, w)
}
)");
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  ASSERT_EQ(r.segments[0].model.proto.graph().initializer_size(), 1);
  EXPECT_EQ(r.segments[0].model.proto.graph().initializer(0).name(), "w");
  EXPECT_EQ(r.segments[1].model.proto.graph().initializer_size(), 0);
  ASSERT_EQ(r.segments[2].model.proto.graph().initializer_size(), 1);
  EXPECT_TRUE(r.bridges.size() == 2u && !FindBridge(r, "w"));
}

const char* kWithIf = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, bool c) => (float[1,4] y) {
  a = Relu(x)
  b = If(c) <then_branch = thn () => (float[1,4] t) { t = Neg(a) },
             else_branch = els () => (float[1,4] e) { e = Abs(a) }>
  y = Add(b, a)
}
)";

TEST(Split, IfNodeAsTheCutMovesWholeWithItsCaptures) {
  io::Model m = testing::ParseNamed(kWithIf);
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  ASSERT_EQ(r.segments.size(), 3u);
  const auto& host = r.segments[1].model.proto.graph();
  ASSERT_EQ(host.node_size(), 1);
  EXPECT_EQ(host.node(0).attribute_size(), 2);  // both branches kept
  // The branches capture `a`: it is an input of the host segment.
  EXPECT_EQ(Names(r.segments[1].inputs), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(FindBridge(r, "a")->consumers, (std::vector<int>{1, 2}));
}

TEST(Split, NodeInsideASubgraphCannotBeCut) {
  io::Model m = testing::ParseNamed(kWithIf);
  try {
    SplitAt(m, {"n_t"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("inside a subgraph of node 'n_b'"), std::string::npos)
        << e.what();
  }
}

std::string UsageMessage(const io::Model& m, const std::vector<std::string>& at) {
  try {
    SplitAt(m, at);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

TEST(Split, BadNamesAreUsageErrorsThatSayWhatToDo) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  a = Add(x, w)
  b = Neg(a)
  y = Abs(b)
}
)");
  EXPECT_NE(UsageMessage(m, {"n_bb"}).find("closest node names: n_b"), std::string::npos);
  EXPECT_NE(UsageMessage(m, {"x"}).find("graph input"), std::string::npos);
  EXPECT_NE(UsageMessage(m, {"w"}).find("initializer"), std::string::npos);
  EXPECT_NE(UsageMessage(m, {"a"}).find("produced by node 'n_a'"), std::string::npos);
  m.proto.mutable_graph()->mutable_node(2)->set_name("n_b");
  EXPECT_NE(UsageMessage(m, {"n_b"}).find("ambiguous"), std::string::npos);
  EXPECT_NE(UsageMessage(m, {}).find("no cut node given"), std::string::npos);
}

Error SplitError(const io::Model& m, const std::vector<std::string>& at) {
  try {
    SplitAt(m, at);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error";
  return Error(ErrorKind::kInternal, "");
}

// fuzz_split crash-13205638: graph output 'y' while the only node writes 'Y'. It used to reach
// BuildSubModel's internal check (exit 4); a malformed model is bad input naming the tensor.
TEST(Split, GraphOutputThatNothingDefinesIsBadInputNamingIt) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Relu(x)
  Y = Neg(a)
}
)");
  Error e = SplitError(m, {"n_Y"});
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.tensor(), "y");
  EXPECT_NE(std::string(e.what()).find("graph output 'y' is not produced by any node"),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("Y"), std::string::npos) << e.what();
}

// Graph outputs that are a graph input or an initializer are valid: the last segment passes them.
TEST(Split, GraphOutputsThatAreAnInputOrAnInitializerArePassedThrough) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y, float[4] x, float[4] w) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  EXPECT_EQ(Names(r.segments.back().outputs), (std::vector<std::string>{"y", "x", "w"}));
}

TEST(Split, TensorDefinedTwiceIsBadInput) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  m.proto.mutable_graph()->mutable_node(0)->set_output(0, "b");
  Error e = SplitError(m, {"n_b"});
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.tensor(), "b");
  EXPECT_NE(std::string(e.what()).find("defined more than once"), std::string::npos) << e.what();
}

// pipeline.json must name boundary tensors as the segment files do: a name that is not UTF-8
// could only be written altered, so it is refused rather than silently mismatched.
TEST(Split, BoundaryTensorNameThatIsNotUtf8IsBadInput) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  for (auto& node : *m.proto.mutable_graph()->mutable_node()) {
    for (auto& in : *node.mutable_input()) in = in == "a" ? "a\xCF" : in;
    for (auto& out : *node.mutable_output()) out = out == "a" ? "a\xCF" : out;
  }
  Error e = SplitError(m, {"n_b"});
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.tensor(), "a\xCF");
  EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
}

TEST(Split, ConstantsAreClonedIntoTheirReadersNotBridged) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  k = Constant<value = float[1] {2.0}>()
  a = Mul(x, k)
  b = Neg(a)
  y = Mul(b, k)
}
)");
  SplitResult r = SplitAt(m, {"n_b"});
  ExpectChained(m, r);
  EXPECT_EQ(FindBridge(r, "k"), nullptr);
  EXPECT_EQ(NodeNames(r.segments[0]), (std::vector<std::string>{"n_k", "n_a"}));
  EXPECT_EQ(NodeNames(r.segments[2]), (std::vector<std::string>{"n_k", "n_y"}));
}

TEST(Split, TypesComeFromInferenceAndPinnedInputShapes) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  SplitResult dynamic = SplitAt(m, {"n_b"});
  ExpectChained(m, dynamic);
  EXPECT_EQ(ShapeToString(dynamic.segments[1].inputs[0].type), "[N, 4]");
  EXPECT_FALSE(dynamic.bridges[0].bytes.has_value());
  io::Model pinned_model = m;
  shape::ApplyInputShapes(pinned_model, {{"x", {2, 4}}});
  SplitResult pinned = SplitAt(pinned_model, {"n_b"});
  ExpectChained(pinned_model, pinned);
  EXPECT_EQ(pinned.bridges[0].bytes, 32u);
  EXPECT_EQ(ShapeToString(pinned.segments[0].inputs[0].type), "2x4");
}

TEST(Split, WithoutAnInferenceFunctionOnlyRecordedTypesAreUsed) {
  io::Model m = testing::ParseNamed(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) {
  a = Relu(x)
  b = Neg(a)
  y = Abs(b)
}
)");
  SplitResult bare = SplitAtNodes(m, {"n_b"});
  ASSERT_EQ(bare.bridges.size(), 2u);
  EXPECT_FALSE(bare.bridges[0].bytes.has_value());  // 'a' has no value_info in the model
  ASSERT_FALSE(bare.notes.empty());
  EXPECT_NE(bare.notes[0].find("input shape"), std::string::npos) << bare.notes[0];
  EXPECT_EQ(bare.notes[0].find("--"), std::string::npos) << "the library names no flags";
  SplitResult inferred = SplitAt(m, {"n_b"});
  EXPECT_EQ(inferred.bridges[0].bytes, 32u);
  EXPECT_TRUE(inferred.notes.empty());
}

TEST(Split, HostFlagsEntryPointMergesRunsInTopologicalOrder) {
  io::Model m = testing::ParseNamed(kSplitChain);
  SplitResult r = SplitHost(m, {false, true, true, false, true});
  ExpectChained(m, r);
  EXPECT_EQ(Roles(r), (std::vector<std::string>{"accelerator", "host", "accelerator", "host"}));
  EXPECT_THROW(SplitHost(m, {true}), Error);
}

}  // namespace
}  // namespace porttool::ir
