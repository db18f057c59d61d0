// Target scans on tiny models (ONNX text): placement per node with the failing constraint,
// remedies, host nodes for split --auto, memory fit, and malformed target profiles.
#include "lib/decide/scan.h"

#include <gtest/gtest.h>

#include "lib/decide/remedies.h"
#include "lib/decide/rules_dir.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::decide {
namespace {

struct Scanned {
  std::unique_ptr<AnalyzedModel> model;
  TargetProfile target;
  TargetScan scan;
  std::vector<NodeRemedies> remedies;
  std::vector<NodeRemedies> rewrites;
  const NodeScan& Node(const std::string& op) const {
    for (const auto& n : scan.nodes) {
      if (n.op == op) return n;
    }
    throw std::runtime_error("no node " + op);
  }
};

Scanned Scan(const std::string& text, const std::string& target) {
  Scanned s;
  s.model = std::make_unique<AnalyzedModel>(io::ParseText(text), shape::InputShapes{});
  s.target = LoadTarget(testing::SourceDir() / "rules", target);
  s.scan = ScanTarget(*s.model, s.target);
  auto rules =
      LoadRemedies(JsonFile::Load(testing::SourceDir() / "rules" / "decision" / "remedies.json"));
  s.remedies = ComputeRemedies(*s.model, s.target, s.scan, rules);
  s.rewrites = FallbackRewrites(*s.model, s.scan, rules);
  return s;
}

std::string ResizeModel(const std::string& attrs, const std::string& scale, int out) {
  return R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,3,)" +
         std::to_string(out) + "," + std::to_string(out) + R"(] y) {
  roi = Constant <value = float[0] {}> ()
  scales = Constant <value = float[4] {1.0, 1.0, )" +
         scale + ", " + scale + R"(}> ()
  r = Resize <)" +
         attrs + R"(> (x, roi, scales)
  w = Constant <value = float[3,3,1,1] {1,0,0,0,1,0,0,0,1}> ()
  y = Conv (r, w)
})";
}

TEST(TargetScan, ResizeWithNonIntegerScaleFallsBackToCpuOnRk3588) {
  auto s = Scan(ResizeModel("mode = \"nearest\"", "1.5", 12), "rknn-rk3588");
  const NodeScan& n = s.Node("Resize");
  EXPECT_EQ(n.placement, Placement::kCpuFallback);
  ASSERT_EQ(n.failures.size(), 1u);
  EXPECT_EQ(n.failures[0].id, "rknn.resize.scale");
  EXPECT_NE(n.failures[0].text.find("integer"), std::string::npos);
  EXPECT_NE(n.failures[0].detail.find("1.5 is not an integer"), std::string::npos)
      << n.failures[0].detail;
  EXPECT_EQ(s.Node("Conv").placement, Placement::kAccelerator);
  EXPECT_EQ(s.scan.constants_skipped, 3);
  std::vector<bool> host = HostNodes(*s.model, s.scan);
  EXPECT_EQ(host, (std::vector<bool>{false, false, true, false, false}));
}

// Issue 16 item 4: shape arithmetic on static shapes (Shape -> Cast -> Cast -> Reshape's shape)
// is folded by the converter; the scan never places it on the target, so no custom operator is
// proposed for it. Before, stm32f767 (no CPU fallback, no Shape kernel) listed Shape and Cast as
// unsupported backbone ops needing custom operators.
TEST(TargetScan, StaticShapeArithmeticIsFoldedNotScanned) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x) => (float[1,4,2] y) {
  s = Shape (x)
  f = Cast <to = 1> (s)
  i = Cast <to = 7> (f)
  r = Reshape (x, i)
  w = Constant <value = float[8,2] {1,0,0,1,1,0,0,1,1,0,0,1,1,0,0,1}> ()
  y = MatMul (r, w)
})",
                "stm32f767");
  EXPECT_EQ(s.scan.static_folded, 3);
  EXPECT_EQ(s.scan.unsupported, 0);
  for (const auto& n : s.scan.nodes) {
    EXPECT_NE(n.op, "Shape");
    EXPECT_NE(n.op, "Cast");
  }
  EXPECT_TRUE(s.remedies.empty());
  // Reshape's shape input counts as constant now (converters need it constant).
  EXPECT_TRUE(s.model->IsConstant("i"));
  // A Shape of a graph input with a dynamic dim is not static: it stays in the scan.
  auto dyn = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4,8] x) => (float[N,4,8] y) {
  s = Shape (x)
  y = Reshape (x, s)
})",
                  "stm32f767");
  EXPECT_EQ(dyn.scan.static_folded, 0);
  EXPECT_EQ(dyn.Node("Shape").placement, Placement::kUnsupported);
}

// Issue 16 item 7: nodes inside If/Loop/Scan bodies are scanned and reported with their parent's
// name; one the accelerator cannot run takes the parent to the host for split --auto.
TEST(TargetScan, SubgraphNodesAreScannedWithTheParentsName) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (bool cond, float[2] x) => (float[2] y) {
  a = Relu (x)
  y = If (cond) <then_branch = g1 () => (float[2] t) { t = Abs(a) },
                 else_branch = g2 () => (float[2] e) { e = Relu(a) }>
})");
  m.proto.mutable_graph()->mutable_node(1)->set_name("voice_if");
  m.proto.mutable_graph()
      ->mutable_node(1)
      ->mutable_attribute(0)
      ->mutable_g()
      ->mutable_node(0)
      ->set_name("abs_in_then");
  AnalyzedModel model(m, {});
  TargetProfile t = LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  TargetScan scan = ScanTarget(model, t);
  const NodeScan* abs = nullptr;
  for (const auto& n : scan.nodes) {
    if (n.op == "Abs") abs = &n;
  }
  ASSERT_NE(abs, nullptr) << "the then-branch's Abs was not scanned";
  EXPECT_EQ(abs->name, "voice_if/abs_in_then");
  EXPECT_EQ(abs->parent, "voice_if");
  EXPECT_EQ(abs->placement, Placement::kUnsupported);
  EXPECT_GE(scan.unsupported, 1);
  EXPECT_EQ(HostNodes(model, scan)[1], true);
  for (const auto& n : scan.nodes) {
    if (!n.parent.empty()) {
      EXPECT_EQ(n.name.rfind("voice_if/", 0), 0u) << n.name;
    }
  }
  EXPECT_NE(ScanToJson(scan).dump().find("\"parent\":\"voice_if\""), std::string::npos);
}

TEST(TargetScan, GlueForCheckAndSplitAuto) {
  io::Model m = io::ParseText(ResizeModel("mode = \"nearest\"", "1.5", 12));
  EXPECT_EQ(HostNodesForTarget(m, LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588")),
            (std::vector<bool>{false, false, true, false, false}));
  TargetCheck ok = CheckModelOnTarget(m, LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588"));
  EXPECT_TRUE(ok.ok);  // a CPU fallback is not a failure
  EXPECT_NE(TargetCheckToText(ok).find("cpu-fallback"), std::string::npos);
  io::Model nms = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,10,4] boxes, float[1,1,10] scores) => (int64[3,3] selected) {
  selected = NonMaxSuppression (boxes, scores)
})");
  TargetCheck bad =
      CheckModelOnTarget(nms, LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588"));
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(TargetCheckToJson(bad)["scan"]["counts"]["unsupported"], 1);
}

TEST(TargetScan, IntegerHalfPixelResizeRunsOnTheNpu) {
  auto s = Scan(
      ResizeModel("mode = \"nearest\", coordinate_transformation_mode = \"half_pixel\"", "2.0", 16),
      "rknn-rk3588");
  EXPECT_EQ(s.Node("Resize").placement, Placement::kAccelerator);
  EXPECT_EQ(s.scan.cpu_fallback + s.scan.unsupported, 0);
}

TEST(TargetScan, AsymmetricResizeIsUnsupportedOnRv1106WithRewriteRemedy) {
  std::string attrs =
      "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", "
      "nearest_mode = \"floor\"";
  auto s = Scan(ResizeModel(attrs, "2.0", 16), "rknn-rv1106");
  const NodeScan& n = s.Node("Resize");
  EXPECT_EQ(n.placement, Placement::kUnsupported);
  EXPECT_NE(n.reason.find("not in the target's CPU-fallback op list"), std::string::npos);
  ASSERT_EQ(s.remedies.size(), 1u);
  EXPECT_TRUE(s.remedies[0].in_backbone);
  EXPECT_EQ(s.remedies[0].remedies[0].kind, "rewrite");
  EXPECT_EQ(s.remedies[0].remedies[0].id, "rewrite.resize-nearest-half-pixel");
  EXPECT_TRUE(s.remedies[0].resolved_without_custom_op);
  // The same node on RK3588 has a CPU fallback, and the rewrite would move it to the NPU.
  auto rk = Scan(ResizeModel(attrs, "2.0", 16), "rknn-rk3588");
  EXPECT_EQ(rk.Node("Resize").placement, Placement::kCpuFallback);
  ASSERT_EQ(rk.rewrites.size(), 1u);
  EXPECT_EQ(rk.rewrites[0].remedies[0].id, "rewrite.resize-nearest-half-pixel");
}

TEST(TargetScan, NmsIsUnsupportedOnRk3588AndStrippedToHost) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,10,4] boxes, float[1,1,10] scores) => (int64[3,3] selected) {
  selected = NonMaxSuppression (boxes, scores)
})",
                "rknn-rk3588");
  const NodeScan& n = s.Node("NonMaxSuppression");
  EXPECT_EQ(n.placement, Placement::kUnsupported);
  EXPECT_NE(n.reason.find("Not Supported"), std::string::npos);
  ASSERT_EQ(s.remedies.size(), 1u);
  EXPECT_FALSE(s.remedies[0].in_backbone);
  EXPECT_EQ(s.remedies[0].remedies[0].kind, "strip-to-host");
  EXPECT_EQ(s.remedies[0].remedies[0].bridge_bytes, uint64_t{160 + 40 + 72});
  EXPECT_TRUE(s.remedies[0].resolved_without_custom_op);
}

TEST(TargetScan, SoftmaxOnAnUnsupportedAxisFallsBackWithRewrite) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) {
  y = Softmax <axis = 2> (x)
})",
                "rknn-rk3588");
  const NodeScan& n = s.Node("Softmax");
  EXPECT_EQ(n.placement, Placement::kCpuFallback);
  EXPECT_EQ(n.failures[0].id, "rknn.softmax.axis");
  EXPECT_EQ(n.failures[0].detail, "axis is 2");
  ASSERT_EQ(s.rewrites.size(), 1u);
  EXPECT_EQ(s.rewrites[0].remedies[0].id, "rewrite.softmax-transpose-axis");
}

TEST(TargetScan, Opset13SoftmaxDefaultAxisIsLast) {
  // Opset 13's default axis -1 on a rank-4 input is axis 3: allowed.
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) { y = Softmax (x) })",
                "rknn-rk3588");
  EXPECT_EQ(s.Node("Softmax").placement, Placement::kAccelerator);
}

TEST(TargetScan, GatherWithRank2IndicesFallsBack) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4,8] x) => (float[2,2,8] y) {
  i = Constant <value = int64[2,2] {0,0,0,0}> ()
  y = Gather (x, i)
})",
                "rknn-rk3588");
  const NodeScan& n = s.Node("Gather");
  EXPECT_EQ(n.placement, Placement::kCpuFallback);
  EXPECT_EQ(n.failures[0].id, "rknn.gather.indices-rank");
}

TEST(TargetScan, CustomDomainOpIsUnsupportedOnRknnWithDecomposeRewrite) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
g (float[1,3,8,8] x) => (float[1,3,8,8] y) {
  g1 = com.microsoft.Gelu (x)
  w = Constant <value = float[3,3,1,1] {1,0,0,0,1,0,0,0,1}> ()
  y = Conv (g1, w)
})",
                "rknn-rk3588");
  const NodeScan& n = s.Node("com.microsoft:Gelu");
  EXPECT_EQ(n.placement, Placement::kUnsupported);
  ASSERT_EQ(s.remedies.size(), 1u);
  EXPECT_EQ(s.remedies[0].remedies[0].id, "rewrite.gelu-decompose");
  // ONNX Runtime CPU runs it.
  EXPECT_EQ(Scan(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>
g (float[1,3,8,8] x) => (float[1,3,8,8] y) { y = com.microsoft.Gelu (x) })",
                 "onnxruntime-cpu")
                .scan.unsupported,
            0);
}

TEST(TargetScan, TopKOnStm32NeedsACustomOpWithItsSignature) {
  auto s = Scan(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,100] x) => (float[1,5] v, int64[1,5] i) {
  k = Constant <value = int64[1] {5}> ()
  v, i = TopK <axis = 1> (x, k)
})",
                "stm32f767");
  const NodeScan& n = s.Node("TopK");
  EXPECT_EQ(n.placement, Placement::kUnsupported);
  EXPECT_NE(n.reason.find("no CPU fallback"), std::string::npos);
  ASSERT_EQ(s.remedies.size(), 1u);
  const Remedy& r = s.remedies[0].remedies.back();
  EXPECT_EQ(r.kind, "custom-op");
  EXPECT_EQ(r.signature["domain"], "ai.onnx");
  EXPECT_EQ(r.signature["op"], "TopK");
  EXPECT_EQ(r.signature["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(r.signature["inputs"][0]["shape"], nlohmann::json({1, 100}));
  EXPECT_EQ(r.signature["outputs"][1]["dtype"], "int64");
  EXPECT_EQ(r.signature["attributes"]["axis"], 1);
  // No host on an MCU: neither strip-to-host nor split is offered.
  EXPECT_EQ(s.remedies[0].remedies.size(), 1u);
}

TEST(TargetScan, OpsetOutsideTheTargetRangeIsAFinding) {
  auto s = Scan(R"(<ir_version: 7, opset_import: ["" : 11]>
g (float[1,3,8,8] x) => (float[1,3,8,8] y) { y = Relu (x) })",
                "rknn-rk3588");
  ASSERT_EQ(s.scan.findings.size(), 1u);
  EXPECT_NE(s.scan.findings[0].find("opset 11 is outside the target's supported range 12-19"),
            std::string::npos);
}

TEST(MemoryFitTest, WeightsAgainstFlashAndArenaAgainstRam) {
  ModelFacts facts;
  facts.params_bytes = 8'000'000;  // float32 -> 2 MB as int8: over 70% of 2 MB flash
  facts.peak_activation_bytes = 400'000;
  TargetProfile stm = LoadTarget(testing::SourceDir() / "rules", "stm32f767");
  MemoryFit m = FitMemory(facts, stm, stm.ram_bytes, stm.flash_bytes);
  EXPECT_EQ(m.weight_bytes, 2'000'000u);
  EXPECT_EQ(m.usable_flash, static_cast<uint64_t>(2097152 * 0.7));
  EXPECT_FALSE(*m.flash_fits);
  EXPECT_TRUE(*m.ram_fits);  // 100 KB int8 arena in 358 KB
  EXPECT_FALSE(*m.fits);
  facts.params_bytes = 1'000'000;
  m = FitMemory(facts, stm, stm.ram_bytes, stm.flash_bytes);
  EXPECT_TRUE(*m.fits);
  facts.peak_activation_bytes.reset();
  m = FitMemory(facts, stm, stm.ram_bytes, stm.flash_bytes);
  EXPECT_FALSE(m.ram_fits.has_value());
  EXPECT_FALSE(m.fits.has_value());
}

// --- malformed target profiles

class TargetFileErrors : public ::testing::Test {
 protected:
  std::string Error(const std::string& body) {
    testing::WriteFile(dir_ / "bad.json", body);
    try {
      LoadTargetFile(dir_ / "bad.json");
    } catch (const porttool::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      return e.what();
    }
    return "no error";
  }
  std::string Profile(const std::string& extra) {
    return R"({"schema": "porttool.target/1", "name": "bad", "title": "t",
  "sources": [{"document": "d", "toolkit": "k", "location": "l"}],
  "hardware": {"class": "cortex-m", "ram_bytes": 1, "flash_bytes": 1, "weights_in_ram": false,
               "has_host_cpu": false},
  "dtypes": {"supported": ["int8"], "weights": "int8", "activations": "int8"},
  "opset": {"min": 7, "max": 17},
  "dynamic_shapes": {"support": "none", "text": "t"},
  "cpu_fallback": "none",
)" + extra +
           "}";
  }
  testing::TempDir dir_;
};

TEST_F(TargetFileErrors, ValidProfileLoads) {
  EXPECT_EQ(Error(Profile(R"("accelerator_ops": ["Conv"])")), "no error");
}

TEST_F(TargetFileErrors, UnknownOpName) {
  std::string e = Error(Profile(R"("accelerator_ops": ["Conv", "Convolution"])"));
  EXPECT_NE(e.find("bad.json:9: at /accelerator_ops/1"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown op name \"Convolution\""), std::string::npos) << e;
  e = Error(Profile(R"("accelerator_ops": ["Conv"], "op_constraints": {"Rezise": []})"));
  EXPECT_NE(e.find("at /op_constraints/Rezise"), std::string::npos) << e;
}

TEST_F(TargetFileErrors, MissingField) {
  std::string e = Error(R"({"schema": "porttool.target/1", "name": "bad", "accelerator_ops": []})");
  EXPECT_NE(e.find("missing required field \"title\""), std::string::npos) << e;
}

TEST_F(TargetFileErrors, WrongTypeAndUnknownCheck) {
  std::string e = Error(Profile(R"("accelerator_ops": "Conv")"));
  EXPECT_NE(e.find("at /accelerator_ops: expected an array, got a string"), std::string::npos) << e;
  e = Error(Profile(R"("accelerator_ops": ["Conv"], "generic_constraints": [
    {"id": "g", "text": "t", "source": "s", "check": {"kind": "max_rnak", "max": 4}}])"));
  EXPECT_NE(e.find("at /generic_constraints/0/check/kind: unknown check kind \"max_rnak\""),
            std::string::npos)
      << e;
  e = Error(Profile(R"("accelerator_ops": ["Conv"], "generic_constraints": [
    {"id": "g", "text": "t", "source": "s", "check": {"kind": "max_rank"}}])"));
  EXPECT_NE(e.find("check needs \"max\" (an integer)"), std::string::npos) << e;
}

// Issue 54: parameters typed and ranged at load, not found wrong by RunCheck (exit 4).
TEST_F(TargetFileErrors, CheckParametersAreTypedAndRanged) {
  auto with_check = [&](const std::string& check) {
    return Error(Profile(R"("accelerator_ops": ["Conv"], "generic_constraints": [
      {"id": "g", "text": "t", "source": "s", "check": )" +
                         check + "}]"));
  };
  const std::pair<const char*, const char*> cases[] = {
      {R"({"kind": "input_rank", "input": -1, "min": 1, "max": 4})",
       "at /generic_constraints/0/check/input: expected an integer in [0, 2147483647], got -1"},
      {R"({"kind": "input_rank", "input": 0, "min": 1.5, "max": 4})",
       "at /generic_constraints/0/check/min: expected an integer >= 0, got 1.5"},
      {R"({"kind": "axis_in", "input": 0, "values": ["a"], "defaults": []})",
       "at /generic_constraints/0/check/values/0: expected an integer, got a string"},
      {R"({"kind": "attr_range", "attr": "k", "min": 1, "max": 3, "from_weight": "yes"})",
       "at /generic_constraints/0/check/from_weight: expected true or false, got a string"},
      {R"({"kind": "resize_scale", "min": 1, "max": 8, "integer": 1})",
       "at /generic_constraints/0/check/integer: expected true or false, got a number"},
      {R"({"kind": "inputs_constant", "inputs": [9223372036854775808]})",
       "at /generic_constraints/0/check/inputs/0: expected an integer in [0, 2147483647], got "
       "9223372036854775808 (beyond 2^63 - 1)"},
      {R"({"kind": "batch", "max": 1e308})",
       "at /generic_constraints/0/check/max: expected an integer >= 0, got 1e+308"},
  };
  for (const auto& [check, expected] : cases) {
    std::string e = with_check(check);
    EXPECT_NE(e.find(expected), std::string::npos) << check << "\n" << e;
  }
}

TEST_F(TargetFileErrors, AlignmentIsAPowerOfTwoUpTo4096) {
  for (const char* bad : {"3", "-64", "0", "4611686018427387904", "8192", "\"64\"", "64.0"}) {
    std::string e =
        Error(Profile(R"("accelerator_ops": ["Conv"], "alignment_bytes": )" + std::string(bad)));
    EXPECT_NE(e.find("at /alignment_bytes: expected "), std::string::npos) << bad << ": " << e;
    EXPECT_EQ(e.find("--"), std::string::npos) << "names a flag: " << e;
  }
}

TEST_F(TargetFileErrors, SyntaxError) {
  std::string e = Error("{\"schema\": \"porttool.target/1\",\n\"name\": }");
  EXPECT_NE(e.find("bad.json:2:"), std::string::npos) << e;
}

TEST(TargetNamesTest, UnknownTargetIsAUsageErrorWithSuggestion) {
  try {
    LoadTarget(testing::SourceDir() / "rules", "rknn-rk3589");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("did you mean 'rknn-rk3588'"), std::string::npos);
  }
  EXPECT_EQ(TargetNames(testing::SourceDir() / "rules"),
            (std::vector<std::string>{"jetson-orin", "onnxruntime-cpu", "rknn-rk3588",
                                      "rknn-rv1106", "stm32f767"}));
}

}  // namespace
}  // namespace porttool::decide
