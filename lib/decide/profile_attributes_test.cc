// Attribute rules compare effective values (issue 49 item 5). Table-driven from the shipped
// profiles: every attribute constraint (attr_in, attr_range, attrs_unset, axis_in) of every
// profile in rules/targets, for every attribute it names, is run on a small node of its op with
// the attribute absent, set to its default, and set to a value the rule rejects. A constraint
// added to a profile is covered without editing this file (or fails here naming what is missing,
// such as a model for a new op).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "lib/decide/effective_attr.h"
#include "lib/decide/scan.h"
#include "lib/util/testing.h"

namespace porttool::decide::profile_attributes_test {
namespace {

using Status = CheckResult::Status;

// One small model per op that profiles constrain by attribute; the op's node takes no attribute
// here (variants add them). Inputs are 4-D (Gather's 5-D, so an axis can fall outside 0-3).
const std::map<std::string, std::string>& Templates() {
  static const std::map<std::string, std::string> kTemplates = {
      {"Resize", R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,3,16,16] y) {
  roi = Constant <value = float[0] {}> ()
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize (x, roi, scales)
})"},
      {"Upsample", R"(<ir_version: 4, opset_import: ["" : 9]>
g (float[1,3,8,8] x) => (float[1,3,16,16] y) {
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Upsample (x, scales)
})"},
      {"Softmax", R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,3,8,8] y) {
  y = Softmax (x)
})"},
      {"Gather", R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4,5,6] x) => (float[2,3,4,5,6] y) {
  i = Constant <value = int64[2] {0, 1}> ()
  g1 = Gather (x, i)
  y = Identity (x)
})"},
      {"Conv", R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,4,6,6] y) {
  ws = Constant <value = int64[4] {4, 3, 3, 3}> ()
  w = ConstantOfShape <value = float[1] {0.5}> (ws)
  y = Conv (x, w)
})"},
  };
  return kTemplates;
}

// Defaults the operator text ties to the inputs rather than stating: the template Conv's 3x3
// weight sets its kernel_shape.
std::optional<nlohmann::json> InputDerivedDefault(const std::string& op, const std::string& attr) {
  if (op == "Conv" && attr == "kernel_shape") return nlohmann::json::array({3, 3});
  return std::nullopt;
}

onnx::AttributeProto MakeAttr(const std::string& name, const nlohmann::json& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  if (v.is_string()) {
    a.set_type(onnx::AttributeProto::STRING);
    a.set_s(v.get<std::string>());
  } else if (v.is_number_integer()) {
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(v.get<int64_t>());
  } else if (v.is_number()) {
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(v.get<float>());
  } else {
    bool floats =
        std::any_of(v.begin(), v.end(), [](const auto& e) { return e.is_number_float(); });
    a.set_type(floats ? onnx::AttributeProto::FLOATS : onnx::AttributeProto::INTS);
    for (const auto& e : v) {
      if (floats)
        a.add_floats(e.get<float>());
      else
        a.add_ints(e.get<int64_t>());
    }
  }
  return a;
}

struct Analyzed {
  std::unique_ptr<AnalyzedModel> model;
  int index = -1;  // the constrained op's node
};

const Analyzed& TemplateFor(const std::string& op) {
  static std::map<std::string, Analyzed> cache;
  auto it = cache.find(op);
  if (it != cache.end()) return it->second;
  Analyzed a;
  auto t = Templates().find(op);
  if (t != Templates().end()) {
    a.model = std::make_unique<AnalyzedModel>(io::ParseText(t->second), shape::InputShapes{});
    for (int i = 0; i < a.model->graph().node_size(); ++i) {
      if (a.model->graph().node(i).op_type() == op) a.index = i;
    }
  }
  return cache.emplace(op, std::move(a)).first->second;
}

// A value of `attr` that the check rejects, or null when none can be made.
nlohmann::json RejectedValue(const Check& c, const std::string& attr,
                             const std::optional<nlohmann::json>& def, const Analyzed& t) {
  const auto& p = c.params;
  if (c.kind == "attr_in") {
    if (p["values"].front().is_string()) return "not-a-listed-value";
    int64_t top = 0;
    for (const auto& v : p["values"]) top = std::max(top, v.get<int64_t>());
    return top + 1;
  }
  if (c.kind == "attr_range") {
    return std::vector<int64_t>(attr == "pads" ? 4 : 2, p["max"].get<int64_t>() + 1);
  }
  if (c.kind == "attrs_unset") {
    if (!def) return 1;
    if (def->is_string()) return def->get<std::string>() + "-other";
    if (def->is_number_integer()) return def->get<int64_t>() + 1;
    return def->get<double>() + 0.5;
  }
  if (c.kind == "axis_in") {
    const auto& node = t.model->graph().node(t.index);
    const TensorInfo* in = t.model->Info(node.input(p["input"].get<int>()));
    const int64_t rank = static_cast<int64_t>(in->dims.size());
    std::set<int64_t> allowed;
    for (const auto& v : p["values"]) allowed.insert(v.get<int64_t>());
    for (int64_t a = -rank; a < rank; ++a) {
      if (!allowed.count(a < 0 ? a + rank : a)) return a;
    }
  }
  return nullptr;
}

// A value of the attribute `d.on` under which `d.attr` has no effect.
std::string IrrelevantValue(const AttrDependency& d) {
  const std::vector<std::string> candidates =
      d.on == "mode" ? std::vector<std::string>{"nearest", "linear", "cubic"}
                     : std::vector<std::string>{"half_pixel", "asymmetric"};
  for (const auto& v : candidates) {
    if (std::find(d.relevant.begin(), d.relevant.end(), v) == d.relevant.end()) return v;
  }
  return "";
}

std::vector<std::string> AttrsOf(const Check& c) {
  if (c.kind == "attr_in" || c.kind == "attr_range") return {c.params["attr"]};
  if (c.kind == "attrs_unset") return c.params["attrs"].get<std::vector<std::string>>();
  if (c.kind == "axis_in") return {"axis"};
  return {};
}

struct Case {
  std::string where;  // "rknn-rk3588 op_constraints Resize rknn.resize.mode nearest_mode"
  std::string op;
  std::string attr;
  Check check;
};

std::vector<Case> AttributeCases() {
  std::vector<Case> cases;
  const auto rules = testing::SourceDir() / "rules";
  for (const auto& name : TargetNames(rules)) {
    TargetProfile t = LoadTarget(rules, name);
    auto add = [&](const std::string& table, const std::string& op, const std::string& id,
                   const Check& check) {
      for (const auto& attr : AttrsOf(check)) {
        cases.push_back({name + " " + table + " " + op + " " + id + " " + attr, op, attr, check});
      }
    };
    for (const auto& [table, constraints] : {std::pair{"op_constraints", &t.op_constraints},
                                             {"cpu_constraints", &t.cpu_constraints}}) {
      for (const auto& [op, list] : *constraints) {
        for (const auto& c : list) add(table, op, c.id, c.check);
      }
    }
    for (const auto& l : t.lowerings) {
      for (const auto& c : l.conditions) add("lowerings", l.op, l.id, c);
    }
    // Generic constraints apply to every op; none of the shipped ones reads an attribute.
    for (const auto& c : t.generic_constraints) {
      EXPECT_TRUE(AttrsOf(c.check).empty()) << name << " " << c.id << ": a generic attribute "
                                            << "constraint needs cases for every op";
    }
  }
  return cases;
}

TEST(ProfileAttributeRules, AbsentAndDefaultPassAndARejectedValueFails) {
  std::vector<Case> cases = AttributeCases();
  ASSERT_GE(cases.size(), 15u);  // the five profiles name at least this many today
  std::vector<std::string> without_default;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.where);
    const Analyzed& t = TemplateFor(c.op);
    ASSERT_GE(t.index, 0) << "no model for op " << c.op << ": add one to Templates()";
    const auto& base = t.model->graph().node(t.index);
    const int64_t opset = t.model->facts().opset;
    // Where the attribute only matters in one mode, test it in that mode.
    onnx::NodeProto context = base;
    for (const auto& d : AttrDependencies()) {
      if (d.op == c.op && d.attr == c.attr)
        *context.add_attribute() = MakeAttr(d.on, d.relevant[0]);
    }
    auto status = [&](const std::optional<nlohmann::json>& value) {
      onnx::NodeProto variant = context;
      if (value) *variant.add_attribute() = MakeAttr(c.attr, *value);
      return RunCheckOnVariant(c.check, *t.model, t.index, variant);
    };
    CheckResult absent = status(std::nullopt);
    EXPECT_EQ(absent.status, Status::kPass) << absent.detail;
    auto def = AttrDefault(c.op, opset, c.attr);
    if (!def) def = InputDerivedDefault(c.op, c.attr);
    if (def) {
      CheckResult at_default = status(*def);
      EXPECT_EQ(at_default.status, Status::kPass)
          << "at default " << def->dump() << ": " << at_default.detail;
    } else {
      without_default.push_back(c.op + "." + c.attr);
    }
    nlohmann::json rejected = RejectedValue(c.check, c.attr, def, t);
    ASSERT_FALSE(rejected.is_null()) << "cannot make a value the rule rejects";
    CheckResult bad = status(rejected);
    EXPECT_EQ(bad.status, Status::kFail) << "at " << rejected.dump();
    EXPECT_NE(bad.detail.find(c.attr), std::string::npos) << bad.detail;
    // In a mode that ignores the attribute, even that value changes nothing.
    for (const auto& d : AttrDependencies()) {
      if (d.op != c.op || d.attr != c.attr) continue;
      onnx::NodeProto ignored = base;
      *ignored.add_attribute() = MakeAttr(d.on, IrrelevantValue(d));
      *ignored.add_attribute() = MakeAttr(c.attr, rejected);
      CheckResult r = RunCheckOnVariant(c.check, *t.model, t.index, ignored);
      EXPECT_EQ(r.status, Status::kPass) << d.on << " = " << IrrelevantValue(d) << ": " << r.detail;
    }
  }
  // Only Resize-18's axes has no default (absent means every axis): it is tested absent and set.
  std::set<std::string> missing(without_default.begin(), without_default.end());
  EXPECT_EQ(missing, (std::set<std::string>{"Resize.axes"}));
}

// A profile's own `default` (kept for attributes an old op version lacks) must say what ONNX says.
TEST(ProfileAttributeRules, ProfileDefaultsAgreeWithTheOnnxSchema) {
  int compared = 0;
  for (const auto& c : AttributeCases()) {
    if (!c.check.params.contains("default")) continue;
    auto def = AttrDefault(c.op, 17, c.attr);
    ASSERT_TRUE(def) << c.where;
    EXPECT_TRUE(SameAttrValue(*def, c.check.params["default"]))
        << c.where << ": profile says " << c.check.params["default"].dump() << ", ONNX "
        << def->dump();
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

// M-LSD's Resizes as tf2onnx writes them: every attribute explicit, at its default or ignored by
// the linear mode. They run on the RK3588 NPU; a real setting still sends one to the CPU.
std::string TfResize(const std::string& cubic_coeff_a, int exclude_outside = 0) {
  return R"(<ir_version: 8, opset_import: ["" : 11]>
g (float[1,8,10,10] x) => (float[1,8,20,20] y) {
  roi = Constant <value = float[0] {}> ()
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <coordinate_transformation_mode = "half_pixel", cubic_coeff_a = )" +
         cubic_coeff_a + ", exclude_outside = " + std::to_string(exclude_outside) +
         R"(, mode = "linear", nearest_mode = "floor"> (x, roi, scales)
})";
}

NodeScan ScanResize(const std::string& text) {
  AnalyzedModel m(io::ParseText(text), {});
  TargetScan scan = ScanTarget(m, LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588"));
  for (const auto& n : scan.nodes) {
    if (n.op == "Resize") return n;
  }
  throw std::runtime_error("no Resize scanned");
}

TEST(ProfileAttributeRules, TfTwoOnnxBilinearResizeRunsOnTheRk3588Npu) {
  NodeScan n = ScanResize(TfResize("-0.75"));
  EXPECT_EQ(n.placement, Placement::kAccelerator) << n.reason;
  EXPECT_TRUE(n.failures.empty());
  // cubic_coeff_a is ignored unless the mode is cubic, whatever its value.
  EXPECT_EQ(ScanResize(TfResize("-0.5")).placement, Placement::kAccelerator);
  NodeScan set = ScanResize(TfResize("-0.75", 1));
  EXPECT_EQ(set.placement, Placement::kCpuFallback);
  ASSERT_EQ(set.failures.size(), 1u);
  EXPECT_EQ(set.failures[0].id, "rknn.resize.unset-attrs");
  EXPECT_NE(set.failures[0].detail.find("exclude_outside = 1 (default 0) is set"),
            std::string::npos)
      << set.failures[0].detail;
}

TEST(ProfileAttributeRules, NearestModeCountsOnANearestResize) {
  std::string nearest = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,10,10] x) => (float[1,8,20,20] y) {
  roi = Constant <value = float[0] {}> ()
  scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
  y = Resize <mode = "nearest", nearest_mode = "NM"> (x, roi, scales)
})";
  auto with = [&](const std::string& mode) {
    std::string text = nearest;
    text.replace(text.find("NM"), 2, mode);
    return ScanResize(text);
  };
  EXPECT_EQ(with("round_prefer_floor").placement, Placement::kAccelerator);
  NodeScan floor = with("floor");
  EXPECT_EQ(floor.placement, Placement::kCpuFallback);
  ASSERT_FALSE(floor.failures.empty());
  EXPECT_NE(floor.failures[0].detail.find("nearest_mode = \"floor\""), std::string::npos)
      << floor.failures[0].detail;
}

}  // namespace
}  // namespace porttool::decide::profile_attributes_test
