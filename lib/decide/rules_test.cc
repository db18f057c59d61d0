// The decision table row by row (facts -> dimension outcome), the combination policy, and the
// validation errors of malformed rule files.
#include "lib/decide/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "lib/decide/rules_dir.h"
#include "lib/decide/target.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::decide {
namespace {

class DecisionTableTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    catalog_ = new FactCatalog(
        FactCatalog::Load(testing::SourceDir() / "rules" / "decision" / "facts.json"));
    table_ = new DecisionTable(LoadDecisionTable(
        JsonFile::Load(testing::SourceDir() / "rules" / "decision" / "table.json"), *catalog_));
  }
  static void TearDownTestSuite() {
    delete table_;
    delete catalog_;
  }
  const Dimension& Dim(const std::string& id) {
    for (const auto& d : table_->dimensions) {
      if (d.id == id) return d;
    }
    throw std::runtime_error("no dimension " + id);
  }
  DimensionResult Eval(const std::string& dim, const nlohmann::json& values) {
    Facts facts;
    for (const auto& [name, v] : values.items()) facts.Set(*catalog_, name, v, "test");
    AddDerivedFacts(*catalog_, facts);
    return EvaluateDimension(Dim(dim), facts);
  }
  void Expect(const std::string& dim, const nlohmann::json& facts, Outcome outcome,
              const std::string& rule) {
    DimensionResult r = Eval(dim, facts);
    EXPECT_EQ(OutcomeName(r.outcome), OutcomeName(outcome)) << dim << " " << facts.dump();
    EXPECT_EQ(r.rule, rule) << r.reason;
    if (outcome != Outcome::kUnknown) {
      EXPECT_FALSE(r.reason.empty());
    }
  }
  static FactCatalog* catalog_;
  static DecisionTable* table_;
};
FactCatalog* DecisionTableTest::catalog_ = nullptr;
DecisionTable* DecisionTableTest::table_ = nullptr;

const nlohmann::json kNoneUnresolved = {{"target.unresolved_backbone_ops", 0}};

TEST_F(DecisionTableTest, HardwareOnnxForSupportedRuntime) {
  for (const char* cls : {"server-x86", "server-arm64", "jetson", "soc-npu"}) {
    Expect("hardware", {{"hardware.class", cls}, {"target.unresolved_backbone_ops", 0}},
           Outcome::kOnnx, "hardware.onnx.supported-runtime");
  }
}

TEST_F(DecisionTableTest, HardwareCustomOpForFpgaVendorOnlyNpuAndMcuWithoutOnnxToolchain) {
  for (const char* cls : {"fpga", "soc-npu-vendor-only"}) {
    // Decided without target facts: no ONNX path exists whatever the scan says.
    Expect("hardware", {{"hardware.class", cls}}, Outcome::kCustomOp,
           "hardware.custom-op.fpga-vendor-only");
  }
  for (const char* cls : {"cortex-m", "riscv-mcu"}) {
    Expect("hardware", {{"hardware.class", cls}, {"hardware.onnx_toolchain", false}},
           Outcome::kCustomOp, "hardware.custom-op.mcu-no-onnx-toolchain");
  }
}

// Issue 16 item 5: an MCU whose toolchain imports ONNX (ST Edge AI Core for STM32) takes the
// ONNX path when the scan resolves every backbone op and memory fits with room to spare.
TEST_F(DecisionTableTest, HardwareMcuWithOnnxToolchainFollowsScanAndMemory) {
  nlohmann::json facts = {{"hardware.class", "cortex-m"},
                          {"hardware.onnx_toolchain", true},
                          {"target.unresolved_backbone_ops", 0},
                          {"target.memory_fits", true},
                          {"target.memory_headroom_pct", 60}};
  Expect("hardware", facts, Outcome::kOnnx, "hardware.onnx.mcu-onnx-toolchain");
  facts["target.memory_headroom_pct"] = 5;
  Expect("hardware", facts, Outcome::kVerify, "hardware.verify.mcu-tight-fit");
  facts["target.memory_fits"] = false;
  facts["target.memory_headroom_pct"] = -40;
  Expect("hardware", facts, Outcome::kVerify, "hardware.verify.mcu-does-not-fit");
  facts["target.unresolved_backbone_ops"] = 2;
  Expect("hardware", facts, Outcome::kCustomOp, "hardware.custom-op.unsupported-backbone");
  // Without knowing the toolchain the dimension says what it needs instead of guessing.
  DimensionResult r = Eval("hardware", {{"hardware.class", "cortex-m"}});
  EXPECT_EQ(r.outcome, Outcome::kUnknown);
  EXPECT_NE(std::find(r.missing.begin(), r.missing.end(), "hardware.onnx_toolchain"),
            r.missing.end());
}

TEST_F(DecisionTableTest, HardwareCustomOpForUnresolvedBackboneOps) {
  Expect("hardware", {{"hardware.class", "soc-npu"}, {"target.unresolved_backbone_ops", 2}},
         Outcome::kCustomOp, "hardware.custom-op.unsupported-backbone");
}

TEST_F(DecisionTableTest, HardwareVerifyForGenericCortexA) {
  Expect("hardware", {{"hardware.class", "cortex-a"}, {"target.unresolved_backbone_ops", 0}},
         Outcome::kVerify, "hardware.verify.cortex-a");
}

TEST_F(DecisionTableTest, HardwareUnknownWithoutTargetScan) {
  DimensionResult r = Eval("hardware", {{"hardware.class", "server-x86"}});
  EXPECT_EQ(r.outcome, Outcome::kUnknown);
  EXPECT_EQ(r.missing, std::vector<std::string>{"target.unresolved_backbone_ops"});
  EXPECT_NE(r.reason.find("never guessed"), std::string::npos);
}

TEST_F(DecisionTableTest, ComplexityRows) {
  nlohmann::json base = {{"model.compute_layers", 30},    {"model.control_flow_ops", 0},
                         {"model.custom_domain_ops", 0},  {"model.transformer_like", false},
                         {"model.attention_patterns", 0}, {"model.layernorm_patterns", 0}};
  Expect("complexity", base, Outcome::kOnnx, "complexity.onnx.small");
  auto deep = base;
  deep["model.compute_layers"] = 150;
  deep["model.control_flow_ops"] = 3;
  Expect("complexity", deep, Outcome::kCustomOp, "complexity.custom-op.deep-control-flow");
  auto custom = base;
  custom["model.custom_domain_ops"] = 4;
  Expect("complexity", custom, Outcome::kCustomOp, "complexity.custom-op.custom-domains");
  auto transformer = base;
  transformer["model.transformer_like"] = true;
  Expect("complexity", transformer, Outcome::kVerify, "complexity.verify.transformer");
  auto grey = base;
  grey["model.compute_layers"] = 64;
  Expect("complexity", grey, Outcome::kVerify, "complexity.verify.grey");
}

TEST_F(DecisionTableTest, PerformanceRows) {
  Expect("performance", {{"performance.latency_ms", 40}}, Outcome::kCustomOp,
         "performance.custom-op.latency");
  Expect("performance",
         {{"performance.latency_ms", 0},
          {"performance.fps", 30},
          {"performance.resolution", "720p"},
          {"performance.power_w", 1.5}},
         Outcome::kCustomOp, "performance.custom-op.fps-power");
  Expect("performance",
         {{"performance.latency_ms", 100},
          {"performance.fps", 10},
          {"performance.resolution", "1080p"},
          {"performance.power_w", 0}},
         Outcome::kVerify, "performance.verify.medium-realtime");
  Expect("performance",
         {{"performance.latency_ms", 0},
          {"performance.fps", 10},
          {"performance.resolution", "1080p"},
          {"performance.power_w", 0}},
         Outcome::kOnnx, "performance.onnx.no-power-limit");
  Expect("performance",
         {{"performance.latency_ms", 0},
          {"performance.fps", 10},
          {"performance.resolution", "1080p"},
          {"performance.power_w", 5}},
         Outcome::kVerify, "performance.verify.power-budget");
}

TEST_F(DecisionTableTest, PerformanceUnknownWhenLatencyMissing) {
  // fps alone cannot rule out the <= 50 ms latency case: unknown, not onnx.
  DimensionResult r = Eval(
      "performance",
      {{"performance.fps", 10}, {"performance.resolution", "1080p"}, {"performance.power_w", 0}});
  EXPECT_EQ(r.outcome, Outcome::kUnknown);
  EXPECT_EQ(r.missing, std::vector<std::string>{"performance.latency_ms"});
  EXPECT_EQ(r.trace[0].result, "unknown");
}

TEST_F(DecisionTableTest, PrecisionRows) {
  Expect("precision", {{"precision.int8_loss_pct", 6}}, Outcome::kCustomOp,
         "precision.custom-op.loss-or-fp16");
  Expect("precision", {{"precision.requires_fp16", true}}, Outcome::kCustomOp,
         "precision.custom-op.loss-or-fp16");
  Expect("precision",
         {{"precision.int8_loss_pct", 1},
          {"precision.requires_fp16", false},
          {"precision.mixed", true}},
         Outcome::kVerify, "precision.verify.mixed");
  Expect("precision",
         {{"precision.int8_loss_pct", 1},
          {"precision.requires_fp16", false},
          {"precision.mixed", false}},
         Outcome::kOnnx, "precision.onnx.int8-ok");
  Expect("precision",
         {{"precision.int8_loss_pct", 3},
          {"precision.requires_fp16", false},
          {"precision.mixed", false}},
         Outcome::kVerify, "precision.verify.grey");
  Expect("precision", {{"precision.int8_loss_pct", 1}}, Outcome::kUnknown, "");
}

TEST_F(DecisionTableTest, ScheduleRows) {
  Expect("schedule", {{"schedule.dev_days", 2}}, Outcome::kOnnx, "schedule.onnx.short");
  Expect("schedule", {{"schedule.dev_days", 5}}, Outcome::kVerify, "schedule.verify.medium");
  Expect("schedule", {{"schedule.dev_days", 12}}, Outcome::kCustomOp, "schedule.custom-op.long");
  Expect("schedule", nlohmann::json::object(), Outcome::kUnknown, "");
}

TEST_F(DecisionTableTest, MaintenanceRows) {
  Expect("maintenance", {{"maintenance.model_update", "reexport"}}, Outcome::kOnnx,
         "maintenance.onnx.reexport");
  Expect("maintenance", {{"maintenance.model_update", "op-rewrite"}}, Outcome::kCustomOp,
         "maintenance.custom-op.op-rewrite");
  Expect("maintenance", {{"maintenance.model_update", "versioned"}}, Outcome::kVerify,
         "maintenance.verify.versioned");
}

TEST_F(DecisionTableTest, ReasonSubstitutesFactValues) {
  DimensionResult r = Eval("schedule", {{"schedule.dev_days", 2}});
  EXPECT_NE(r.reason.find("2 person-days"), std::string::npos) << r.reason;
}

// Policy: builds results by hand so each case names exactly the outcomes it needs.
std::vector<DimensionResult> Results(Outcome hw, Outcome cx, Outcome perf, Outcome prec,
                                     Outcome sched, Outcome maint) {
  std::vector<DimensionResult> r;
  const std::pair<const char*, Outcome> dims[] = {{"hardware", hw},      {"complexity", cx},
                                                  {"performance", perf}, {"precision", prec},
                                                  {"schedule", sched},   {"maintenance", maint}};
  for (const auto& [id, o] : dims) {
    DimensionResult d;
    d.id = id;
    d.outcome = o;
    if (o == Outcome::kUnknown) d.missing = {std::string(id) + ".fact"};
    r.push_back(d);
  }
  return r;
}

TEST_F(DecisionTableTest, PolicyAnyHardCustomOpWins) {
  auto v = Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kOnnx, Outcome::kCustomOp,
                                           Outcome::kVerify, Outcome::kOnnx, Outcome::kOnnx));
  EXPECT_EQ(v.verdict, Outcome::kCustomOp);
  EXPECT_EQ(v.rule, "policy.any-hard-custom-op");
  EXPECT_NE(v.reason.find("performance"), std::string::npos);
  EXPECT_FALSE(v.leaning.has_value());
}

TEST_F(DecisionTableTest, PolicyAllHardOnnxIgnoresCostDimensions) {
  auto v = Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kOnnx, Outcome::kOnnx,
                                           Outcome::kOnnx, Outcome::kCustomOp, Outcome::kCustomOp));
  EXPECT_EQ(v.verdict, Outcome::kOnnx);
  EXPECT_EQ(v.rule, "policy.all-hard-onnx");
}

TEST_F(DecisionTableTest, PolicyGreyZoneLeansByCostDimensions) {
  auto custom =
      Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kVerify, Outcome::kOnnx,
                                      Outcome::kOnnx, Outcome::kCustomOp, Outcome::kVerify));
  EXPECT_EQ(custom.verdict, Outcome::kVerify);
  EXPECT_EQ(custom.leaning, Outcome::kCustomOp);
  auto onnx = Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kVerify, Outcome::kOnnx,
                                              Outcome::kOnnx, Outcome::kOnnx, Outcome::kUnknown));
  EXPECT_EQ(onnx.leaning, Outcome::kOnnx);
  auto tie = Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kVerify, Outcome::kOnnx,
                                             Outcome::kOnnx, Outcome::kOnnx, Outcome::kCustomOp));
  EXPECT_EQ(tie.leaning, Outcome::kOnnx);  // a tie leans onnx (lower development cost)
  EXPECT_NE(tie.leaning_reason.find("tie"), std::string::npos);
}

TEST_F(DecisionTableTest, PolicyUnknownHardDimensionGivesVerifyWithMissingFacts) {
  auto v = Combine(table_->policy, Results(Outcome::kOnnx, Outcome::kOnnx, Outcome::kUnknown,
                                           Outcome::kOnnx, Outcome::kUnknown, Outcome::kUnknown));
  EXPECT_EQ(v.verdict, Outcome::kVerify);
  EXPECT_EQ(v.rule, "policy.grey-zone");
  EXPECT_EQ(v.missing, std::vector<std::string>{"performance.fact"});
  EXPECT_NE(v.reason.find("performance=unknown"), std::string::npos) << v.reason;
}

// --- malformed rule files: each error names file, line, pointer and the expectation.

std::string LoadError(const std::string& text) {
  FactCatalog catalog =
      FactCatalog::Load(testing::SourceDir() / "rules" / "decision" / "facts.json");
  try {
    LoadDecisionTable(JsonFile::FromText(text, "bad.json"), catalog);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "no error";
}

std::string TableWithRule(const std::string& rule) {
  return R"({"schema": "porttool.decision/1",
  "dimensions": [{"id": "d", "title": "D", "kind": "hard",
    "rules": [)" +
         rule + R"(]}],
  "policy": {"id": "p", "hard": ["d"], "cost": [],
    "verdicts": [{"id": "v", "when": "otherwise", "verdict": "verify", "reason": "r"}],
    "leaning": {"tie": "onnx", "reason": "r"}}})";
}

TEST(RuleFileErrors, SyntaxErrorNamesLineAndColumn) {
  std::string e = LoadError("{\n  \"schema\": \"x\",\n  \"dimensions\": [\n}");
  EXPECT_NE(e.find("bad.json:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("JSON syntax error"), std::string::npos) << e;
}

TEST(RuleFileErrors, UnknownFact) {
  std::string e = LoadError(TableWithRule(
      R"({"id": "r", "outcome": "onnx", "reason": "x",
          "when": {"fact": "performance.fsp", "op": "ge", "value": 1}})"));
  EXPECT_NE(e.find("bad.json:4: at /dimensions/0/rules/0/when/fact"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown fact \"performance.fsp\""), std::string::npos) << e;
  EXPECT_NE(e.find("performance.fps"), std::string::npos) << e;  // did you mean
}

TEST(RuleFileErrors, WrongValueType) {
  std::string e = LoadError(TableWithRule(
      R"({"id": "r", "outcome": "onnx", "reason": "x",
          "when": {"fact": "performance.fps", "op": "ge", "value": "fast"}})"));
  EXPECT_NE(e.find("/dimensions/0/rules/0/when/value"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a number (frames/s), got a string"), std::string::npos) << e;
}

TEST(RuleFileErrors, WrongEnumValueAndOperator) {
  std::string e = LoadError(TableWithRule(
      R"({"id": "r", "outcome": "onnx", "reason": "x",
          "when": {"fact": "hardware.class", "op": "eq", "value": "cortex-x"}})"));
  EXPECT_NE(e.find("expected one of server-x86"), std::string::npos) << e;
  e = LoadError(TableWithRule(R"({"id": "r", "outcome": "onnx", "reason": "x",
          "when": {"fact": "hardware.class", "op": "gt", "value": "cortex-m"}})"));
  EXPECT_NE(e.find("needs a numeric fact"), std::string::npos) << e;
}

TEST(RuleFileErrors, MissingFieldAndUnknownOutcome) {
  std::string e = LoadError(TableWithRule(
      R"({"id": "r", "outcome": "onnx", "when": {"fact": "performance.fps", "op": "ge", "value": 1}})"));
  EXPECT_NE(e.find("at /dimensions/0/rules/0/reason: missing required field"), std::string::npos)
      << e;
  e = LoadError(TableWithRule(R"({"id": "r", "outcome": "maybe", "reason": "x",
          "when": {"fact": "performance.fps", "op": "ge", "value": 1}})"));
  EXPECT_NE(e.find("unknown outcome \"maybe\" (expected onnx, custom-op or verify)"),
            std::string::npos)
      << e;
}

TEST(RuleFileErrors, TypoInFieldNameIsRejected) {
  std::string e =
      LoadError(TableWithRule(R"({"id": "r", "outcome": "onnx", "reason": "x", "whem": {}})"));
  EXPECT_NE(e.find("unknown field \"whem\""), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean \"when\""), std::string::npos) << e;
}

// Rule, target and facts files are checked for nesting depth on the raw text, before parsing: a
// file nested 100000 deep (quadratic pointer index, deep recursion) is bad input naming the file,
// line and column, through every loader; 64 levels are still read.
TEST(RuleFileErrors, NestingPastSixtyFourLevelsIsRefusedByEveryLoader) {
  auto nested = [](int levels) {
    return "{\"schema\": " + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_NO_THROW(JsonFile::FromText(nested(64), "ok.json"));
  testing::TempDir dir;
  const auto path = dir / "deep.json";
  testing::WriteFile(path, nested(100000));
  FactCatalog catalog =
      FactCatalog::Load(testing::SourceDir() / "rules" / "decision" / "facts.json");
  const std::vector<std::pair<const char*, std::function<void()>>> loaders = {
      {"fact catalog", [&] { FactCatalog::Load(path); }},
      {"decision table", [&] { LoadDecisionTable(JsonFile::Load(path), catalog); }},
      {"target profile", [&] { LoadTargetFile(path); }},
      {"user facts",
       [&] {
         Facts facts;
         LoadUserFacts(path, catalog, facts);
       }},
  };
  for (const auto& [what, load] : loaders) {
    try {
      load();
      ADD_FAILURE() << what << ": a 100000-deep file was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << what;
      EXPECT_NE(std::string(e.what()).find("deep.json:1:"), std::string::npos)
          << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("JSON nested deeper than 64 levels"), std::string::npos)
          << what << ": " << e.what();
    }
  }
}

TEST(UserFacts, NestedAndDottedKeysWithTypeErrors) {
  FactCatalog catalog =
      FactCatalog::Load(testing::SourceDir() / "rules" / "decision" / "facts.json");
  Facts facts;
  LoadUserFacts(JsonFile::FromText(R"({"performance": {"fps": 30, "resolution": "720p"},
                                       "schedule.dev_days": 4})",
                                   "p.json"),
                catalog, facts);
  AddDerivedFacts(catalog, facts);
  EXPECT_EQ(facts.Get("performance.pixels")->value, 921600);
  EXPECT_EQ(facts.Get("schedule.dev_days")->origin, "facts file p.json");
  try {
    LoadUserFacts(JsonFile::FromText("{\n\"precision\": {\"requires_fp16\": \"yes\"}}", "p.json"),
                  catalog, facts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("p.json:2: at /precision/requires_fp16"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("expected true or false"), std::string::npos);
  }
}

TEST(ShippedRules, DocsListEveryFact) {
  FactCatalog catalog =
      FactCatalog::Load(testing::SourceDir() / "rules" / "decision" / "facts.json");
  std::string doc = testing::ReadFile(testing::SourceDir() / "docs" / "facts.md");
  for (const auto& name : catalog.Names()) {
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos) << name << " is not in docs/facts.md";
  }
}

TEST(ShippedRules, EveryFileValidates) {
  auto rules_dir = testing::SourceDir() / "rules";
  for (const auto& f : ShippedRuleFiles(rules_dir)) {
    EXPECT_NO_THROW(ValidateRuleFile(rules_dir, f)) << f;
  }
}

}  // namespace
}  // namespace porttool::decide
