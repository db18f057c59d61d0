// Target-profile lowerings (issue 48 item 4): the converter's documented rewrites place ops the
// accelerator does not list under their own name (Gemm as a Convolution) on the accelerator when
// their conditions hold, the scan names the lowering, a model the accelerator can run whole stays
// one accelerator segment, and malformed lowerings are refused with file and JSON pointer.
#include <gtest/gtest.h>

#include "lib/decide/partition.h"
#include "lib/decide/report.h"
#include "lib/decide/scan.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::decide::lowering_test {
namespace {

// A profile whose accelerator lists Conv and pooling but not Gemm, MatMul or ReduceMean, with the
// three lowerings the issue names. CPU fallback for everything else.
constexpr const char* kLoweringProfile = R"({"schema": "porttool.target/1", "name": "lowering-test",
  "title": "t", "sources": [{"document": "d", "toolkit": "k", "location": "l"}],
  "hardware": {"class": "soc-npu", "ram_bytes": 1000000000, "flash_bytes": 1000000000,
               "weights_in_ram": true, "has_host_cpu": true},
  "dtypes": {"supported": ["int8"], "weights": "int8", "activations": "int8"},
  "opset": {"min": 7, "max": 19},
  "dynamic_shapes": {"support": "none", "text": "t"},
  "cpu_fallback": "yes",
  "accelerator_ops": ["Conv", "GlobalAveragePool", "Relu", "Flatten", "Softmax"],
  "lowerings": [
    {"id": "t.gemm", "op": "Gemm", "becomes": ["Conv"], "text": "Gemm as conv", "source": "s",
     "conditions": [{"kind": "input_constant", "input": 1}]},
    {"id": "t.matmul", "op": "MatMul", "becomes": ["Conv"], "text": "MatMul as conv", "source": "s",
     "conditions": [{"kind": "input_constant", "input": 1},
                    {"kind": "input_rank", "input": 1, "min": 2, "max": 2}]},
    {"id": "t.mean", "op": "ReduceMean", "becomes": ["GlobalAveragePool"], "text": "pool",
     "source": "s", "conditions": [{"kind": "input_rank", "input": 0, "min": 4, "max": 4},
                                   {"kind": "reduce_axes", "sets": [[-2, -1]]}]}
  ]})";

class Lowerings : public ::testing::Test {
 protected:
  TargetProfile Profile(const std::string& text = kLoweringProfile) {
    testing::WriteFile(dir_ / "lowering-test.json", text);
    return LoadTargetFile(dir_ / "lowering-test.json");
  }
  std::string LoadError(const std::string& text) {
    try {
      Profile(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      return e.what();
    }
    return "no error";
  }
  testing::TempDir dir_;
};

struct Scanned {
  std::unique_ptr<AnalyzedModel> model;
  TargetScan scan;
  const NodeScan& Node(const std::string& name) const {
    for (const auto& n : scan.nodes) {
      if (n.name == name) return n;
    }
    throw std::runtime_error("no node " + name);
  }
};

// The ONNX text parser of libonnx 1.12 names no nodes: each is named after its first output.
Scanned Scan(const std::string& text, const TargetProfile& target) {
  Scanned s;
  io::Model model = io::ParseText(text);
  for (auto& node : *model.proto.mutable_graph()->mutable_node()) node.set_name(node.output(0));
  s.model = std::make_unique<AnalyzedModel>(model, shape::InputShapes{});
  s.scan = ScanTarget(*s.model, target);
  return s;
}

std::string LoweringOf(const NodeScan& n) { return n.lowering ? n.lowering->id : "(none)"; }

TEST_F(Lowerings, GemmAndMatMulWithConstantBRunAsConv) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,16] x, float[16,8] b) => (float[1,8] gemm, float[1,8] matmul_const,
                                     float[1,8] matmul_input) {
  ws = Constant <value = int64[2] {8, 16}> ()
  w = ConstantOfShape <value = float[1] {1.0}> (ws)
  wt = Transpose (w)
  gemm = Gemm <transB = 1> (x, w)
  matmul_const = MatMul (x, wt)
  matmul_input = MatMul (x, b)
})",
                Profile());
  EXPECT_EQ(s.Node("gemm").placement, Placement::kAccelerator) << s.Node("gemm").reason;
  EXPECT_EQ(LoweringOf(s.Node("gemm")), "t.gemm");
  ASSERT_TRUE(s.Node("gemm").lowering);
  EXPECT_EQ(s.Node("gemm").lowering->becomes, std::vector<std::string>{"Conv"});
  EXPECT_EQ(s.Node("matmul_const").placement, Placement::kAccelerator);
  EXPECT_EQ(LoweringOf(s.Node("matmul_const")), "t.matmul");
  // B computed at run time: no lowering, and the reason says which condition failed.
  const NodeScan& runtime_b = s.Node("matmul_input");
  EXPECT_EQ(runtime_b.placement, Placement::kCpuFallback);
  EXPECT_FALSE(runtime_b.lowering);
  EXPECT_NE(runtime_b.reason.find("lowering t.matmul to Conv does not apply: input 1 ('b') is "
                                  "computed at run time"),
            std::string::npos)
      << runtime_b.reason;
  EXPECT_EQ(s.scan.lowered, 2);
  // Named in the JSON, the text table and the decision report's scan step.
  nlohmann::json j = ScanToJson(s.scan);
  EXPECT_EQ(j["counts"]["lowered"], 2);
  bool json_names_it = false;
  for (const auto& n : j["nodes"]) {
    if (n["name"] == "gemm") json_names_it = n["lowering"]["id"] == "t.gemm";
  }
  EXPECT_TRUE(json_names_it) << j.dump(1);
  TargetCheck check{s.scan, {}, true};
  std::string text = TargetCheckToText(check);
  EXPECT_NE(text.find("2 on accelerator (2 through the converter's lowerings)"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("lowered      1 Gemm node(s) as Conv via t.gemm: gemm\n      Gemm as conv [s]"),
      std::string::npos)
      << text;
}

TEST_F(Lowerings, ReduceMeanOverSpatialAxesRunsAsPoolingButNotOverChannels) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,6,6] x) => (float[1,8,1,1] spatial, float[1,8,1,1] spatial_negative,
                          float[1,1,6,6] channels, float[1,8,6,1] width_only) {
  spatial = ReduceMean <axes = [2, 3]> (x)
  spatial_negative = ReduceMean <axes = [-1, -2]> (x)
  channels = ReduceMean <axes = [1]> (x)
  width_only = ReduceMean <axes = [3]> (x)
})",
                Profile());
  EXPECT_EQ(LoweringOf(s.Node("spatial")), "t.mean");
  EXPECT_EQ(s.Node("spatial").placement, Placement::kAccelerator);
  EXPECT_EQ(LoweringOf(s.Node("spatial_negative")), "t.mean");
  for (const char* name : {"channels", "width_only"}) {
    EXPECT_EQ(s.Node(name).placement, Placement::kCpuFallback) << name;
    EXPECT_FALSE(s.Node(name).lowering) << name;
  }
  EXPECT_NE(s.Node("channels").reason.find("reduces axes [1] of a rank-4 input"), std::string::npos)
      << s.Node("channels").reason;
}

TEST_F(Lowerings, Opset18ReduceMeanReadsItsAxesInput) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 18]>
g (float[1,8,6,6] x) => (float[1,8,1,1] spatial) {
  axes = Constant <value = int64[2] {2, 3}> ()
  spatial = ReduceMean (x, axes)
})",
                Profile());
  EXPECT_EQ(LoweringOf(s.Node("spatial")), "t.mean");
}

TEST_F(Lowerings, BadLoweringsAreRefusedWithTheirJsonPointer) {
  auto with = [](const std::string& lowering) {
    std::string text = kLoweringProfile;
    auto at = text.find("\"lowerings\": [");
    return text.substr(0, at) + "\"lowerings\": [" + lowering + "]}";
  };
  std::string e = LoadError(with(
      R"({"id": "x", "op": "Gemm", "becomes": ["Conv"], "text": "t", "source": "s",
          "conditions": [{"kind": "input_constnat", "input": 1}]})"));
  EXPECT_NE(e.find("lowering-test.json:"), std::string::npos) << e;
  EXPECT_NE(e.find("at /lowerings/0/conditions/0/kind: unknown check kind \"input_constnat\""),
            std::string::npos)
      << e;
  e = LoadError(with(R"({"id": "x", "op": "ReduceMean", "becomes": ["Conv"], "text": "t",
          "source": "s", "conditions": [{"kind": "reduce_axes", "sets": []}]})"));
  EXPECT_NE(e.find("at /lowerings/0/conditions/0/sets: expected at least one set of axes"),
            std::string::npos)
      << e;
  e = LoadError(with(R"({"id": "x", "op": "Gemm", "becomes": ["Conv"], "text": "t", "source": "s",
          "conditions": [{"kind": "input_rank", "input": 1, "max": 2}]})"));
  EXPECT_NE(e.find("at /lowerings/0/conditions/0: check needs \"min\""), std::string::npos) << e;
  e = LoadError(with(R"({"id": "x", "op": "Gem", "becomes": ["Conv"], "text": "t", "source": "s",
          "conditions": []})"));
  EXPECT_NE(e.find("at /lowerings/0/op: unknown op name \"Gem\""), std::string::npos) << e;
  e = LoadError(with(R"({"id": "x", "op": "Gemm", "becomes": ["MatMul"], "text": "t",
          "source": "s", "conditions": []})"));
  EXPECT_NE(e.find("at /lowerings/0/becomes/0: \"MatMul\" is not an accelerator op of target "
                   "lowering-test"),
            std::string::npos)
      << e;
  e = LoadError(with(R"({"id": "x", "op": "Gemm", "becomes": ["Conv"], "text": "t", "source": "s",
          "conditions": [], "when": {}})"));
  EXPECT_NE(e.find("at /lowerings/0/when: unknown field \"when\""), std::string::npos) << e;
  e = LoadError(with(R"({"id": "x", "op": "Gemm", "becomes": ["Conv"], "text": "t", "source": "s",
          "conditions": []}, {"id": "x", "op": "MatMul", "becomes": ["Conv"], "text": "t",
          "source": "s", "conditions": []})"));
  EXPECT_NE(e.find("at /lowerings/1/id: duplicate lowering id \"x\""), std::string::npos) << e;
}

// rknn-rv1106 has no exNorm on its NPU: a child profile that inherited rknn-rk3588's layer-norm
// lowerings would claim an accelerator op it lacks, so loading names the parent's entry.
TEST_F(Lowerings, AChildCannotInheritALoweringIntoAnOpItLacks) {
  testing::WriteFile(
      dir_ / "parent.json",
      std::string(kLoweringProfile)
          .replace(std::string(kLoweringProfile).find("\"lowering-test\""), 15, "\"parent\""));
  testing::WriteFile(dir_ / "child.json", R"({"schema": "porttool.target/1", "name": "child",
    "extends": "parent", "accelerator_ops": ["Relu"]})");
  try {
    LoadTargetFile(dir_ / "child.json");
    FAIL() << "loaded";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("parent.json:"), std::string::npos) << what;
    EXPECT_NE(what.find("at /lowerings/0/becomes/0: \"Conv\" is not an accelerator op of target "
                        "child (which inherits these lowerings"),
              std::string::npos)
        << what;
  }
}

// Issue 48's interface: a Flatten/Gemm/Relu/Gemm/Softmax classifier head is one accelerator
// segment on rknn-rk3588 (every node runs there after the documented lowerings), and decide names
// the lowering it relies on.
constexpr const char* kClassifierHead = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,2,2] x) => (float[1,3] softmax) {
  flatten = Flatten (x)
  w1s = Constant <value = int64[2] {8, 16}> ()
  w1 = ConstantOfShape <value = float[1] {0.25}> (w1s)
  b1 = Constant <value = float[8] {0, 0, 0, 0, 0, 0, 0, 0}> ()
  fc1 = Gemm <transB = 1> (flatten, w1, b1)
  relu = Relu (fc1)
  w2s = Constant <value = int64[2] {3, 8}> ()
  w2 = ConstantOfShape <value = float[1] {0.5}> (w2s)
  fc2 = Gemm <transB = 1> (relu, w2)
  softmax = Softmax (fc2)
})";

TEST(LoweringsOnRk3588, ClassifierHeadIsOneAcceleratorSegment) {
  TargetProfile rk3588 = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  auto s = Scan(kClassifierHead, rk3588);
  EXPECT_EQ(s.scan.cpu_fallback + s.scan.unsupported, 0) << ScanToJson(s.scan).dump(1);
  EXPECT_EQ(LoweringOf(s.Node("fc1")), "rknn.lower.gemm-conv");
  EXPECT_EQ(LoweringOf(s.Node("fc2")), "rknn.lower.gemm-conv");
  Partition p = PlanPartition(*s.model, HostNodes(*s.model, s.scan), rk3588, {});
  ASSERT_EQ(p.chosen.segments.size(), 1u);
  EXPECT_FALSE(p.chosen.segments[0].host);
}

// Without the lowering the same head was "host only": Gemm is not in the PDF's NPU list.
TEST(LoweringsOnRk3588, GemmWithAComputedWeightStaysOnTheCpu) {
  TargetProfile rk3588 = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x, float[4,8] w) => (float[1,4] fc) {
  fc = Gemm <transB = 1> (x, w)
})",
                rk3588);
  EXPECT_EQ(s.Node("fc").placement, Placement::kCpuFallback);
  EXPECT_NE(s.Node("fc").reason.find("rknn.lower.gemm-conv to Conv does not apply"),
            std::string::npos)
      << s.Node("fc").reason;
}

// A layer norm as torch exported it before opset 17 (hey_jarvis has two): rknn-toolkit2 fuses it
// into its norm op, so its ReduceMeans and Sqrt run on the NPU; a lone ReduceMean does not.
TEST(LoweringsOnRk3588, LayerNormDecompositionRunsOnTheNpu) {
  TargetProfile rk3588 = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,16] x) => (float[1,16] div, float[1,1] lone_mean) {
  mean = ReduceMean <axes = [-1]> (x)
  sub = Sub (x, mean)
  two = Constant <value = float {2.0}> ()
  pow = Pow (sub, two)
  var = ReduceMean <axes = [-1]> (pow)
  eps = Constant <value = float {0.00001}> ()
  add = Add (var, eps)
  sqrt = Sqrt (add)
  div = Div (sub, sqrt)
  lone_mean = ReduceMean <axes = [-1]> (div)
})",
                rk3588);
  for (const char* name : {"mean", "var", "sqrt"}) {
    EXPECT_EQ(s.Node(name).placement, Placement::kAccelerator) << name << s.Node(name).reason;
  }
  EXPECT_EQ(LoweringOf(s.Node("mean")), "rknn.lower.layernorm-reducemean");
  EXPECT_EQ(LoweringOf(s.Node("sqrt")), "rknn.lower.layernorm-sqrt");
  for (const char* name : {"sub", "pow", "add", "div"}) {
    EXPECT_EQ(s.Node(name).placement, Placement::kAccelerator) << name;
    EXPECT_EQ(LoweringOf(s.Node(name)), "(none)") << name;  // NPU ops under their own name
  }
  EXPECT_EQ(s.Node("lone_mean").placement, Placement::kCpuFallback);
  EXPECT_NE(s.Node("lone_mean").reason.find("not part of a ReduceMean/Sub/Pow"), std::string::npos)
      << s.Node("lone_mean").reason;
}

// hey_jarvis (openWakeWord): three Gemms and two layer norms before a Sigmoid, then an If on the
// score. Before lowerings every Gemm and ReduceMean went to the CPU and the plan was host only.
TEST(LoweringsOnRk3588, HeyJarvisRunsItsGemmsAndLayerNormsOnTheNpu) {
  auto models = testing::SharedModelsDir();
  if (models.empty()) PORTTOOL_SKIP_MISSING("../shared/models not present");
  TargetProfile rk3588 = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  Scanned s;
  s.model = std::make_unique<AnalyzedModel>(io::Load(models / "hey_jarvis_v0.1.onnx"),
                                            shape::InputShapes{});
  s.scan = ScanTarget(*s.model, rk3588);
  for (const char* gemm : {"Gemm_1", "Gemm_14", "Gemm_27"}) {
    EXPECT_EQ(LoweringOf(s.Node(gemm)), "rknn.lower.gemm-conv") << gemm;
  }
  for (const char* mean : {"ReduceMean_2", "ReduceMean_6", "ReduceMean_15", "ReduceMean_19"}) {
    EXPECT_EQ(LoweringOf(s.Node(mean)), "rknn.lower.layernorm-reducemean") << mean;
  }
  for (const char* sqrt : {"Sqrt_9", "Sqrt_22"}) {
    EXPECT_EQ(LoweringOf(s.Node(sqrt)), "rknn.lower.layernorm-sqrt") << sqrt;
  }
  Partition p = PlanPartition(*s.model, HostNodes(*s.model, s.scan), rk3588, {});
  int accelerator_nodes = 0;
  for (const auto& seg : p.chosen.segments) accelerator_nodes += seg.host ? 0 : seg.nodes;
  EXPECT_GE(accelerator_nodes, 28) << PartitionToText(p);  // Flatten .. Sigmoid_28
  for (const char* name : {"Gemm_1", "ReduceMean_2", "Sigmoid_28"}) {
    EXPECT_FALSE(p.chosen.host[s.Node(name).index]) << name;
  }
}

}  // namespace
}  // namespace porttool::decide::lowering_test
