#include "lib/decide/target.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/decide/analyzed_model.h"
#include "lib/decide/effective_attr.h"
#include "lib/decide/patterns.h"
#include "lib/decide/rules_dir.h"
#include "lib/ir/dtype.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

// ai.onnx ops newer than the linked libonnx 1.12 registry (opset <= 17), by first opset, so
// profiles can name what vendors document (DeformConv, GroupNormalization, ...).
const std::map<std::string, int> kNewerOnnxOps = {
    {"BitwiseAnd", 18},         {"BitwiseNot", 18},     {"BitwiseOr", 18},
    {"BitwiseXor", 18},         {"CenterCropPad", 18},  {"Col2Im", 18},
    {"GroupNormalization", 18}, {"Mish", 18},           {"OptionalGetElement", 18},
    {"DeformConv", 19},         {"AffineGrid", 20},     {"Gelu", 20},
    {"ImageDecoder", 20},       {"RegexFullMatch", 20}, {"StringConcat", 20},
    {"StringSplit", 20}};

const std::map<std::string, std::vector<std::string>> kCheckParams = {
    {"attr_in", {"attr", "values", "default"}},
    {"attr_range", {"attr", "min", "max", "from_weight"}},
    {"attrs_unset", {"attrs"}},
    {"axis_in", {"input", "values", "defaults"}},
    {"input_rank", {"input", "min", "max"}},
    {"max_rank", {"max"}},
    {"batch", {"max"}},
    {"input_absent", {"input"}},
    {"input_constant", {"input"}},
    {"inputs_constant", {"inputs"}},
    {"resize_scale", {"min", "max", "integer", "allow_from_one"}},
    {"static_shapes", {}},
    {"reduce_axes", {"sets"}},
    {"layer_norm_pattern", {}}};

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::string ValueText(const nlohmann::json& v) { return v.dump(); }

std::string InputName(const onnx::NodeProto& node, int i) {
  return i < node.input_size() ? node.input(i) : std::string();
}

CheckResult Pass() { return {}; }
CheckResult Fail(std::string detail) { return {CheckResult::Status::kFail, std::move(detail)}; }
CheckResult Unverified(std::string detail) {
  return {CheckResult::Status::kUnverified, std::move(detail)};
}

const TensorInfo* RankedInfo(const AnalyzedModel& m, const std::string& tensor) {
  const TensorInfo* info = m.Info(tensor);
  return info && info->has_shape ? info : nullptr;
}

// An attribute the node's mode ignores passes whatever its value; an absent one is compared at
// its default (the schema's for the node's op version, else the profile's `default`).
CheckResult CheckAttrIn(const nlohmann::json& p, const onnx::NodeProto& node, int64_t opset) {
  std::string attr = p["attr"];
  if (IgnoredBecause(node, opset, attr)) return Pass();
  nlohmann::json value =
      EffectiveAttr(node, opset, attr).value_or(p.value("default", nlohmann::json()));
  if (value.is_null()) return Pass();
  for (const auto& allowed : p["values"]) {
    if (SameAttrValue(allowed, value)) return Pass();
  }
  return Fail(fmt::format("{} is {}{}", attr, ValueText(value),
                          FindAttr(node, attr) ? "" : " (its default)"));
}

CheckResult CheckAttrRange(const nlohmann::json& p, const onnx::NodeProto& node,
                           const AnalyzedModel& m) {
  std::string attr = p["attr"];
  std::vector<int64_t> values;
  const auto* a = FindAttr(node, attr);
  if (a && a->type() == onnx::AttributeProto::INT) values = {a->i()};
  if (a) values.insert(values.end(), a->ints().begin(), a->ints().end());
  if (!a && p.value("from_weight", false)) {
    const TensorInfo* w = RankedInfo(m, InputName(node, 1));
    if (!w) return Unverified(attr + " not set and the weight shape is unknown");
    values.assign(w->dims.begin() + std::min<size_t>(2, w->dims.size()), w->dims.end());
  } else if (!a) {
    auto def = EffectiveAttr(node, m.facts().opset, attr);
    if (def && def->is_number()) def = nlohmann::json::array({*def});
    for (const auto& v : def && def->is_array() ? *def : nlohmann::json::array()) {
      if (v.is_number()) values.push_back(v.get<int64_t>());
    }
  }
  double lo = p["min"], hi = p["max"];
  for (int64_t v : values) {
    if (v < lo || v > hi) {
      return Fail(fmt::format("{} = [{}]{} is outside [{}, {}]", attr, fmt::join(values, ", "),
                              a ? "" : " (its default)", lo, hi));
    }
  }
  return Pass();
}

// "Not supported to set" means not set to anything but its default: an attribute written at its
// default value, or one the node's mode ignores, changes nothing the converter computes.
CheckResult CheckAttrsUnset(const nlohmann::json& p, const onnx::NodeProto& node, int64_t opset) {
  std::vector<std::string> set;
  for (const auto& entry : p["attrs"]) {
    const std::string name = entry;
    const auto* a = FindAttr(node, name);
    if (!a || IgnoredBecause(node, opset, name)) continue;
    auto def = AttrDefault(node.op_type(), opset, name);
    nlohmann::json value = AttrJson(*a);
    if (def && SameAttrValue(value, *def)) continue;
    set.push_back(fmt::format("{} = {}{}", name, ValueText(value),
                              def ? " (default " + ValueText(*def) + ")" : ""));
  }
  if (set.empty()) return Pass();
  return Fail(util::Join(set, ", ") + (set.size() == 1 ? " is set" : " are set"));
}

CheckResult CheckAxisIn(const nlohmann::json& p, const onnx::NodeProto& node,
                        const AnalyzedModel& m) {
  int64_t axis = 0;
  if (auto value = EffectiveAttr(node, m.facts().opset, "axis"); value && value->is_number()) {
    axis = value->get<int64_t>();
  } else {
    for (const auto& d : p["defaults"]) {
      if (d["since"].get<int64_t>() <= m.facts().opset) axis = d["value"];
    }
  }
  int64_t normalized = axis;
  if (axis < 0) {
    const TensorInfo* info = RankedInfo(m, InputName(node, p["input"]));
    if (!info) return Unverified(fmt::format("axis {} with an input of unknown rank", axis));
    normalized = axis + static_cast<int64_t>(info->dims.size());
  }
  for (const auto& allowed : p["values"]) {
    if (allowed.get<int64_t>() == normalized) return Pass();
  }
  std::string shown = axis == normalized ? fmt::format("axis is {}", axis)
                                         : fmt::format("axis is {} (= {})", axis, normalized);
  return Fail(FindAttr(node, "axis") ? shown : shown + " (its default)");
}

CheckResult CheckInputRank(const nlohmann::json& p, const onnx::NodeProto& node,
                           const AnalyzedModel& m) {
  std::string name = InputName(node, p["input"]);
  if (name.empty()) return Pass();
  const TensorInfo* info = RankedInfo(m, name);
  if (!info) return Unverified("rank of '" + name + "' is unknown");
  int64_t rank = static_cast<int64_t>(info->dims.size());
  if (rank < p["min"].get<int64_t>() || rank > p["max"].get<int64_t>()) {
    return Fail(fmt::format("input '{}' has rank {}", name, rank));
  }
  return Pass();
}

CheckResult CheckMaxRank(const nlohmann::json& p, const onnx::NodeProto& node,
                         const AnalyzedModel& m) {
  auto check = [&](const std::string& name) -> std::optional<CheckResult> {
    const TensorInfo* info = name.empty() ? nullptr : RankedInfo(m, name);
    if (info && static_cast<int64_t>(info->dims.size()) > p["max"].get<int64_t>()) {
      return Fail(fmt::format("'{}' has rank {}", name, info->dims.size()));
    }
    return std::nullopt;
  };
  for (const auto& in : node.input()) {
    if (m.IsConstant(in)) continue;  // weights are re-laid out by the converter
    if (auto r = check(in)) return *r;
  }
  for (const auto& out : node.output()) {
    if (auto r = check(out)) return *r;
  }
  return Pass();
}

CheckResult CheckBatch(const nlohmann::json& p, const onnx::NodeProto& node,
                       const AnalyzedModel& m) {
  const TensorInfo* info = RankedInfo(m, InputName(node, 0));
  if (!info || info->dims.empty() || info->dims[0] < 0) return Unverified("batch size is unknown");
  if (info->dims[0] > p["max"].get<int64_t>())
    return Fail(fmt::format("batch is {}", info->dims[0]));
  return Pass();
}

CheckResult CheckInputAbsent(const nlohmann::json& p, const onnx::NodeProto& node,
                             const AnalyzedModel& m) {
  std::string name = InputName(node, p["input"]);
  if (name.empty()) return Pass();
  const TensorInfo* info = m.Info(name);
  if (m.IsConstant(name) && info && info->IsStatic() && ir::ElementCount(info->dims) == 0) {
    return Pass();
  }
  return Fail(fmt::format("input {} ('{}') is given", p["input"].get<int>(), name));
}

CheckResult CheckInputsConstant(const std::vector<int>& inputs, const onnx::NodeProto& node,
                                const AnalyzedModel& m) {
  for (int i : inputs) {
    std::string name = InputName(node, i);
    if (!name.empty() && !m.IsConstant(name)) {
      return Fail(fmt::format("input {} ('{}') is computed at run time", i, name));
    }
  }
  return Pass();
}

// Scales of a Resize/Upsample node: the constant `scales` input, or constant `sizes` divided by
// the input's static dims.
std::optional<std::vector<double>> ResizeScales(const onnx::NodeProto& node,
                                                const AnalyzedModel& m) {
  bool upsample_style = node.op_type() == "Upsample" || node.input_size() == 2;
  std::string scales = InputName(node, upsample_style ? 1 : 2);
  if (!scales.empty()) {
    auto values = m.ConstantValues(scales);
    if (values && !values->empty()) return values;
  }
  std::string sizes = InputName(node, 3);
  const TensorInfo* in = RankedInfo(m, InputName(node, 0));
  auto size_values = sizes.empty() ? std::nullopt : m.ConstantValues(sizes);
  if (!size_values || !in || !in->IsStatic() || size_values->size() != in->dims.size()) {
    return std::nullopt;
  }
  std::vector<double> out;
  for (size_t i = 0; i < in->dims.size(); ++i) {
    out.push_back(in->dims[i] ? (*size_values)[i] / static_cast<double>(in->dims[i]) : 0);
  }
  return out;
}

CheckResult CheckResizeScale(const nlohmann::json& p, const onnx::NodeProto& node,
                             const AnalyzedModel& m) {
  auto scales = ResizeScales(node, m);
  if (!scales) return Unverified("scales are not constant (or sizes need unknown input dims)");
  const TensorInfo* in = RankedInfo(m, InputName(node, 0));
  double lo = p["min"], hi = p["max"];
  bool integer = p.value("integer", false), from_one = p.value("allow_from_one", false);
  std::string shown = fmt::format("scales [{}]", fmt::join(*scales, ", "));
  for (size_t i = 0; i < scales->size(); ++i) {
    double s = (*scales)[i];
    if (i < 2) {
      if (s != 1.0) return Fail(shown + ": N and C must not be scaled");
      continue;
    }
    bool from_unit = from_one && in && i < in->dims.size() && in->dims[i] == 1;
    if (from_unit) continue;
    if (integer && std::floor(s) != s)
      return Fail(shown + ": scale " + fmt::format("{}", s) + " is not an integer");
    if (s < lo || s > hi)
      return Fail(shown + fmt::format(": scale {} is outside [{}, {}]", s, lo, hi));
  }
  return Pass();
}

// The reduced axes (normalised by the input rank) are one of the allowed sets, each also
// normalised: [[2, 3]] is "over H and W of NCHW", [[-1]] "over the last axis".
CheckResult CheckReduceAxes(const nlohmann::json& p, const onnx::NodeProto& node,
                            const AnalyzedModel& m) {
  auto axes = ReducedAxes(m, node);
  if (!axes) return Unverified("the reduced axes or the input rank are unknown");
  const int64_t rank = static_cast<int64_t>(RankedInfo(m, InputName(node, 0))->dims.size());
  for (const auto& set : p["sets"]) {
    std::set<int64_t> allowed;
    for (int64_t a : set.get<std::vector<int64_t>>()) allowed.insert(a < 0 ? a + rank : a);
    if (std::vector<int64_t>(allowed.begin(), allowed.end()) == *axes) return Pass();
  }
  return Fail(fmt::format("reduces axes [{}] of a rank-{} input", fmt::join(*axes, ", "), rank));
}

CheckResult CheckLayerNormPattern(const AnalyzedModel& m, int node_index) {
  if (LayerNormMembers(m, node_index)) return Pass();
  return Fail(
      "not part of a ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div layer norm over the "
      "trailing axes");
}

// While an input has unpinned dims, a shape that is not static may become static once they are
// pinned: that is not known yet, so not a failure (which would send Conv to a custom kernel).
CheckResult CheckStaticShapes(const onnx::NodeProto& node, const AnalyzedModel& m) {
  for (const auto& names : {node.input(), node.output()}) {
    for (const auto& name : names) {
      if (name.empty() || m.IsConstant(name)) continue;
      const TensorInfo* info = m.Info(name);
      if (info && info->IsStatic()) continue;
      if (!m.facts().dynamic_inputs.empty()) {
        return Unverified("'" + name + "' has no static shape until the input shape is pinned");
      }
      return Fail("'" + name + "' has no static shape");
    }
  }
  return Pass();
}

// Node input indices are ints in the checks (and in ONNX's NodeProto); a larger index in a
// profile is a typo, not an input.
constexpr int64_t kMaxInputIndex = std::numeric_limits<int>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// convert-opset's own default ceiling; no ONNX opset comes near it.
constexpr int64_t kMaxOpset = 1000;

// A required parameter: named in the check's own error when absent, typed when present.
void RequireParam(const JsonFile& f, const std::string& p, const char* key, const char* what) {
  if (!f.Has(p + "/" + key)) f.Fail(p, fmt::format("check needs \"{}\" ({})", key, what));
}

void ParseNumberParam(const JsonFile& f, const std::string& p, const char* key) {
  RequireParam(f, p, key, "a number");
  f.Number(p + "/" + key);
}

void ParseIntParam(const JsonFile& f, const std::string& p, const char* key, int64_t min,
                   int64_t max) {
  RequireParam(f, p, key, "an integer");
  f.Integer(p + "/" + key, min, max);
}

void ParseOptionalBool(const JsonFile& f, const std::string& p, const char* key) {
  if (f.Has(p + "/" + key)) f.Bool(p + "/" + key);
}

// axis_in's "defaults": [{"since": OPSET, "value": AXIS}, ...], the axis by opset when unset.
void ParseAxisDefaults(const JsonFile& f, const std::string& p) {
  const auto& defaults = f.Array(p + "/defaults");
  for (size_t i = 0; i < defaults.size(); ++i) {
    std::string dp = p + "/defaults/" + std::to_string(i);
    f.OnlyKeys(dp, {"since", "value"});
    f.Integer(dp + "/since", 1, kInt64Max);
    f.Integer(dp + "/value");
  }
}

void ParseReduceSets(const JsonFile& f, const std::string& p) {
  const auto& sets = f.Array(p + "/sets");
  if (sets.empty()) f.Fail(p + "/sets", "expected at least one set of axes");
  for (size_t i = 0; i < sets.size(); ++i) {
    std::string sp = p + "/sets/" + std::to_string(i);
    if (f.Integers(sp, kInt64Min, kInt64Max).empty()) {
      f.Fail(sp, "expected a non-empty array of axes");
    }
  }
}

// Every parameter the check kind reads, with the type (and range) RunCheck relies on: nothing
// reaches RunCheck that its get<>() calls could truncate or throw on.
void ParseCheckParams(const JsonFile& f, const std::string& p, const std::string& k) {
  if (k == "attr_in" || k == "attr_range") f.String(p + "/attr");
  if (k == "attr_in") f.Array(p + "/values");
  if (k == "axis_in") f.Integers(p + "/values", kInt64Min, kInt64Max);
  if (k == "attr_range" || k == "resize_scale") {
    ParseNumberParam(f, p, "min");
    ParseNumberParam(f, p, "max");
  }
  if (k == "input_rank") {
    ParseIntParam(f, p, "min", 0, kInt64Max);
    ParseIntParam(f, p, "max", 0, kInt64Max);
  }
  if (k == "max_rank" || k == "batch") ParseIntParam(f, p, "max", 0, kInt64Max);
  if (k == "attr_range") ParseOptionalBool(f, p, "from_weight");
  if (k == "resize_scale") {
    ParseOptionalBool(f, p, "integer");
    ParseOptionalBool(f, p, "allow_from_one");
  }
  if (k == "attrs_unset") f.Strings(p + "/attrs");
  if (k == "axis_in" || k == "input_rank" || k == "input_absent" || k == "input_constant") {
    f.Integer(p + "/input", 0, kMaxInputIndex);
  }
  if (k == "axis_in") ParseAxisDefaults(f, p);
  if (k == "inputs_constant") f.Integers(p + "/inputs", 0, kMaxInputIndex);
  if (k == "reduce_axes") ParseReduceSets(f, p);
}

}  // namespace

Check ParseCheck(const JsonFile& f, const std::string& p) {
  Check c;
  c.kind = f.String(p + "/kind");
  auto it = kCheckParams.find(c.kind);
  if (it == kCheckParams.end()) {
    std::vector<std::string> kinds;
    for (const auto& [k, v] : kCheckParams) kinds.push_back(k);
    f.Fail(p + "/kind", "unknown check kind \"" + c.kind + "\" (expected one of " +
                            util::Join(kinds, ", ") + ")");
  }
  std::vector<std::string> allowed = it->second;
  allowed.push_back("kind");
  f.OnlyKeys(p, allowed);
  ParseCheckParams(f, p, c.kind);
  c.params = f.At(p);
  return c;
}

CheckResult RunCheck(const Check& check, const AnalyzedModel& m, int node_index) {
  return RunCheckOnVariant(check, m, node_index, m.graph().node(node_index));
}

CheckResult RunCheckOnVariant(const Check& check, const AnalyzedModel& m, int node_index,
                              const onnx::NodeProto& node) {
  const auto& p = check.params;
  const std::string& k = check.kind;
  const int64_t opset = m.facts().opset;
  if (k == "attr_in") return CheckAttrIn(p, node, opset);
  if (k == "attr_range") return CheckAttrRange(p, node, m);
  if (k == "attrs_unset") return CheckAttrsUnset(p, node, opset);
  if (k == "axis_in") return CheckAxisIn(p, node, m);
  if (k == "input_rank") return CheckInputRank(p, node, m);
  if (k == "max_rank") return CheckMaxRank(p, node, m);
  if (k == "batch") return CheckBatch(p, node, m);
  if (k == "input_absent") return CheckInputAbsent(p, node, m);
  if (k == "input_constant") return CheckInputsConstant({p["input"].get<int>()}, node, m);
  if (k == "inputs_constant")
    return CheckInputsConstant(p["inputs"].get<std::vector<int>>(), node, m);
  if (k == "resize_scale") return CheckResizeScale(p, node, m);
  if (k == "static_shapes") return CheckStaticShapes(node, m);
  if (k == "reduce_axes") return CheckReduceAxes(p, node, m);
  if (k == "layer_norm_pattern") return CheckLayerNormPattern(m, node_index);
  ThrowInternal("check kind '{}' passed validation but has no implementation", k);
}

bool IsKnownOp(const std::string& key, const std::set<std::string>& declared) {
  if (key.find(':') != std::string::npos) return declared.count(key) > 0;
  return onnx::OpSchemaRegistry::Schema(key, onnx::ONNX_DOMAIN) != nullptr ||
         kNewerOnnxOps.count(key) > 0;
}

bool TargetProfile::AcceleratorHas(const std::string& op) const {
  if (accelerator_exclude.count(op)) return false;
  if (accelerator_ops.count(op)) return true;
  return accelerator_all_onnx && op.find(':') == std::string::npos && IsKnownOp(op, {});
}

bool TargetProfile::FallbackHas(const std::string& op) const {
  if (unsupported_ops.count(op)) return false;
  if (fallback == Fallback::kList) return fallback_ops.count(op) > 0;
  // "yes": every op the toolkit knows, i.e. ONNX ops and the domain ops the profile declares.
  return fallback == Fallback::kAll && IsKnownOp(op, accelerator_ops);
}

namespace {

std::set<std::string> DeclaredOps(const TargetProfile& t) {
  std::set<std::string> out = t.accelerator_ops;
  out.insert(t.fallback_ops.begin(), t.fallback_ops.end());
  return out;
}

std::set<std::string> ParseOpList(const JsonFile& f, const std::string& p, bool declares,
                                  const std::set<std::string>& declared, bool allow_star) {
  std::set<std::string> ops;
  auto names = f.Strings(p);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& op = names[i];
    bool ok = (allow_star && op == "*") ||
              (declares && op.find(':') != std::string::npos && op.front() != ':') ||
              IsKnownOp(op, declared);
    if (!ok) {
      f.Fail(p + "/" + std::to_string(i),
             "unknown op name \"" + op +
                 "\" (expected an ai.onnx op known to ONNX's schema "
                 "registry, or a \"domain:Op\" declared in accelerator_ops/cpu_fallback)");
    }
    ops.insert(op);
  }
  return ops;
}

std::vector<Constraint> ParseConstraints(const JsonFile& f, const std::string& p) {
  std::vector<Constraint> out;
  const auto& arr = f.Array(p);
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string cp = p + "/" + std::to_string(i);
    f.OnlyKeys(cp, {"id", "text", "source", "check"});
    out.push_back({f.String(cp + "/id"), f.String(cp + "/text"), f.String(cp + "/source"),
                   ParseCheck(f, cp + "/check")});
  }
  return out;
}

std::map<std::string, std::vector<Constraint>> ParseOpConstraints(const JsonFile& f,
                                                                  const std::string& p,
                                                                  const TargetProfile& t) {
  std::map<std::string, std::vector<Constraint>> out;
  for (const auto& [op, value] : f.Object(p).items()) {
    std::string op_pointer = p + "/" + PointerToken(op);
    if (!IsKnownOp(op, DeclaredOps(t))) {
      f.Fail(op_pointer, "unknown op name \"" + op +
                             "\" (expected an ai.onnx op known to ONNX's "
                             "schema registry, or a \"domain:Op\" the profile declares)");
    }
    out[op] = ParseConstraints(f, op_pointer);
  }
  return out;
}

std::vector<Lowering> ParseLowerings(const JsonFile& f, const TargetProfile& t) {
  std::vector<Lowering> out;
  const auto& arr = f.Array("/lowerings");
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string lp = "/lowerings/" + std::to_string(i);
    f.OnlyKeys(lp, {"id", "op", "becomes", "conditions", "text", "source"});
    Lowering l;
    l.id = f.String(lp + "/id");
    l.op = f.String(lp + "/op");
    if (!IsKnownOp(l.op, DeclaredOps(t))) {
      f.Fail(lp + "/op", "unknown op name \"" + l.op +
                             "\" (expected an ai.onnx op known to ONNX's schema registry, or a "
                             "\"domain:Op\" the profile declares)");
    }
    l.becomes = f.Strings(lp + "/becomes");
    if (l.becomes.empty()) f.Fail(lp + "/becomes", "expected at least one op");
    const auto& conditions = f.Array(lp + "/conditions");
    for (size_t c = 0; c < conditions.size(); ++c) {
      l.conditions.push_back(ParseCheck(f, lp + "/conditions/" + std::to_string(c)));
    }
    l.text = f.String(lp + "/text");
    l.source = f.String(lp + "/source");
    for (const auto& other : out) {
      if (other.id == l.id) f.Fail(lp + "/id", "duplicate lowering id \"" + l.id + "\"");
    }
    out.push_back(std::move(l));
  }
  return out;
}

// After `extends` is resolved: a lowering must become ops this profile's accelerator runs (a
// child profile that drops an op from its accelerator list cannot inherit a lowering into it).
void CheckLoweringTargets(const TargetProfile& t) {
  for (size_t i = 0; i < t.lowerings.size(); ++i) {
    const auto& becomes = t.lowerings[i].becomes;
    for (size_t j = 0; j < becomes.size(); ++j) {
      if (t.AcceleratorHas(becomes[j])) continue;
      JsonFile::Load(t.lowerings_file)
          .Fail("/lowerings/" + std::to_string(i) + "/becomes/" + std::to_string(j),
                "\"" + becomes[j] + "\" is not an accelerator op of target " + t.name +
                    (t.lowerings_file == t.file ? ""
                                                : " (which inherits these lowerings; give it "
                                                  "its own \"lowerings\")"));
    }
  }
}

void ParseHardware(const JsonFile& f, TargetProfile& t) {
  f.OnlyKeys("/hardware", {"class", "ram_bytes", "flash_bytes", "usable_fraction", "weights_in_ram",
                           "has_host_cpu", "onnx_toolchain"});
  static const std::vector<std::string> kClasses = {"server-x86", "server-arm64",        "jetson",
                                                    "soc-npu",    "soc-npu-vendor-only", "cortex-a",
                                                    "cortex-m",   "riscv-mcu",           "fpga"};
  t.hardware_class = f.String("/hardware/class");
  if (std::find(kClasses.begin(), kClasses.end(), t.hardware_class) == kClasses.end()) {
    f.Fail("/hardware/class", "unknown hardware class \"" + t.hardware_class +
                                  "\" (expected one of " + util::Join(kClasses, ", ") + ")");
  }
  t.ram_bytes = f.Integer("/hardware/ram_bytes", 0, kInt64Max);
  t.flash_bytes = f.Integer("/hardware/flash_bytes", 0, kInt64Max);
  t.usable_fraction = f.NumberOr("/hardware/usable_fraction", 0.7);
  if (t.usable_fraction <= 0 || t.usable_fraction > 1) {
    f.Fail("/hardware/usable_fraction", "expected a fraction in (0, 1]");
  }
  t.weights_in_ram = f.Bool("/hardware/weights_in_ram");
  t.has_host_cpu = f.Bool("/hardware/has_host_cpu");
  t.onnx_toolchain = f.StringOr("/hardware/onnx_toolchain", "");
}

void ParseFallback(const JsonFile& f, TargetProfile& t) {
  const auto& v = f.At("/cpu_fallback");
  if (v.is_array()) {
    t.fallback = TargetProfile::Fallback::kList;
    t.fallback_ops = ParseOpList(f, "/cpu_fallback", true, DeclaredOps(t), false);
  } else if (v == "yes") {
    t.fallback = TargetProfile::Fallback::kAll;
  } else if (v == "none") {
    t.fallback = TargetProfile::Fallback::kNone;
  } else {
    f.Fail("/cpu_fallback", "expected \"yes\", \"none\" or an array of op names, got " + v.dump());
  }
}

void ParseFloatArithmetic(const JsonFile& f, TargetProfile& t) {
  f.OnlyKeys("/float_arithmetic", {"value", "source", "text"});
  static const std::vector<std::string> kValues = {"fp16", "fp32", "none"};
  t.float_arithmetic = f.String("/float_arithmetic/value");
  if (std::find(kValues.begin(), kValues.end(), t.float_arithmetic) == kValues.end()) {
    f.Fail("/float_arithmetic/value", "expected one of " + util::Join(kValues, ", "));
  }
  t.float_arithmetic_source = f.String("/float_arithmetic/source");
  t.float_arithmetic_text = f.String("/float_arithmetic/text");
}

// "input_values": {"NAME": number or [numbers], ...}; integers stay exact.
void ParseInputValues(const JsonFile& f, TargetProfile& t) {
  t.input_values.clear();
  for (const auto& [name, value] : f.Object("/input_values").items()) {
    std::string p = "/input_values/" + PointerToken(name);
    const nlohmann::json items = value.is_array() ? value : nlohmann::json::array({value});
    shape::InputValue v;
    v.origin = "from the target profile";
    for (const auto& item : items) {
      if (item.is_number_unsigned() && item.get<uint64_t>() > static_cast<uint64_t>(kInt64Max)) {
        f.Fail(p, "expected numbers; " + item.dump() + " is beyond 2^63 - 1");
      } else if (item.is_number_integer()) {
        v.numbers.push_back(item.get<int64_t>());
      } else if (item.is_number()) {
        v.numbers.push_back(item.get<double>());
      } else {
        f.Fail(p, "expected a number or a non-empty array of numbers");
      }
    }
    if (v.numbers.empty()) f.Fail(p, "expected a number or a non-empty array of numbers");
    t.input_values[name] = std::move(v);
  }
}

VendorTool ParseVendorTool(const JsonFile& f) {
  const std::string p = "/vendor_tool";
  f.OnlyKeys(
      p, {"tool", "version", "platform", "float_precision", "raised_precision", "source", "text"});
  VendorTool v;
  v.tool = f.String(p + "/tool");
  static const std::set<std::string> kTools = {"rknn-toolkit2", "trtexec", "stedgeai", "none"};
  if (!kTools.count(v.tool)) {
    f.Fail(p + "/tool",
           "expected one of rknn-toolkit2, trtexec, stedgeai, none (the tools port "
           "writes a step for)");
  }
  v.source = f.String(p + "/source");
  v.version = f.StringOr(p + "/version", "");
  v.platform = f.StringOr(p + "/platform", "");
  v.float_precision = f.StringOr(p + "/float_precision", "");
  v.text = f.StringOr(p + "/text", "");
  if (v.tool != "none" && v.version.empty()) {
    f.Fail(p + "/version", "expected the tool's version the values are for");
  }
  if ((v.tool == "rknn-toolkit2" || v.tool == "stedgeai") && v.platform.empty()) {
    f.Fail(p + "/platform", "expected the tool's name for the target");
  }
  if (f.Has(p + "/raised_precision")) {
    f.OnlyKeys(p + "/raised_precision", {"float", "int16"});
    for (const char* key : {"float", "int16"}) {
      std::string at = p + "/raised_precision/" + key;
      if (f.Has(at)) v.raised_precision[key] = f.String(at);
    }
  }
  return v;
}

// The buffer alignment port hands emit-header and emit-runner: a power of two from 1 to 4096, the
// range they accept (lib/emit/emit_header.h kMaxAlignment; 4096 is a page, more than any DMA
// engine or NPU asks for). Checked here so the profile is named, not a flag port does not have.
uint64_t ParseAlignment(const JsonFile& f) {
  int64_t a = f.Integer("/alignment_bytes", 1, 4096);
  if ((a & (a - 1)) != 0) {
    f.Fail("/alignment_bytes", fmt::format("expected a power of two in [1, 4096], got {}", a));
  }
  return static_cast<uint64_t>(a);
}

// Reads the fields `f` sets into `t` (a parent's values stay where `f` is silent).
void ParseProfileFields(const JsonFile& f, TargetProfile& t, std::set<std::string>& seen) {
  f.OnlyKeys("", {"schema",
                  "name",
                  "extends",
                  "title",
                  "sources",
                  "notes",
                  "hardware",
                  "alignment_bytes",
                  "dtypes",
                  "opset",
                  "dynamic_shapes",
                  "compute",
                  "pipeline",
                  "cpu_fallback",
                  "accelerator_ops",
                  "accelerator_exclude",
                  "unsupported_ops",
                  "unsupported_reason",
                  "generic_constraints",
                  "op_constraints",
                  "cpu_constraints",
                  "lowerings",
                  "rewrites",
                  "default_input_shape",
                  "input_values",
                  "runner_backend",
                  "float_arithmetic",
                  "vendor_tool"});
  for (const auto& [key, value] : f.root().items()) seen.insert(key);
  if (f.String("/schema") != "porttool.target/1") {
    f.Fail("/schema", "expected \"porttool.target/1\"");
  }
  auto has = [&](const char* key) { return f.Has(std::string("/") + key); };
  t.name = f.String("/name");
  if (has("title")) t.title = f.String("/title");
  if (has("sources")) {
    const auto& sources = f.Array("/sources");
    if (sources.empty()) f.Fail("/sources", "expected at least one source document");
    for (size_t i = 0; i < sources.size(); ++i) {
      std::string sp = "/sources/" + std::to_string(i);
      f.OnlyKeys(sp, {"document", "toolkit", "location"});
      f.String(sp + "/document");
      f.String(sp + "/toolkit");
      f.String(sp + "/location");
    }
    t.sources = sources;
  }
  if (has("notes")) t.notes = f.Strings("/notes");
  if (has("hardware")) ParseHardware(f, t);
  if (has("alignment_bytes")) t.alignment_bytes = ParseAlignment(f);
  if (has("dtypes")) {
    f.OnlyKeys("/dtypes", {"supported", "weights", "activations"});
    t.dtypes = f.Strings("/dtypes/supported");
    t.weight_dtype = f.String("/dtypes/weights");
    t.activation_dtype = f.String("/dtypes/activations");
  }
  if (has("opset")) {
    f.OnlyKeys("/opset", {"min", "max"});
    t.opset_min = f.Integer("/opset/min", 1, kMaxOpset);
    t.opset_max = f.Integer("/opset/max", 1, kMaxOpset);
    if (t.opset_min > t.opset_max) f.Fail("/opset", "expected min <= max");
  }
  if (has("dynamic_shapes")) {
    f.OnlyKeys("/dynamic_shapes", {"support", "text"});
    t.dynamic_support = f.String("/dynamic_shapes/support");
    t.dynamic_text = f.String("/dynamic_shapes/text");
  }
  if (has("compute")) {
    f.OnlyKeys("/compute", {"peak_macs_per_s", "efficiency", "source"});
    t.peak_macs_per_s = f.Number("/compute/peak_macs_per_s", 0, HUGE_VAL);
    t.efficiency = f.Number("/compute/efficiency", 0, 1);
    t.compute_source = f.String("/compute/source");
  }
  if (has("pipeline")) {
    f.OnlyKeys("/pipeline", {"host_macs_per_s", "bridge_bytes_per_s", "switch_ms", "source"});
    t.host_macs_per_s = f.Number("/pipeline/host_macs_per_s");
    t.bridge_bytes_per_s = f.Number("/pipeline/bridge_bytes_per_s");
    t.switch_ms = f.Number("/pipeline/switch_ms");
    t.pipeline_source = f.String("/pipeline/source");
    if (!(t.host_macs_per_s > 0) || !(t.bridge_bytes_per_s > 0) || !(t.switch_ms >= 0)) {
      f.Fail("/pipeline", "expected host_macs_per_s > 0, bridge_bytes_per_s > 0, switch_ms >= 0");
    }
  }
  if (has("accelerator_ops")) {
    t.accelerator_ops = ParseOpList(f, "/accelerator_ops", true, {}, true);
    t.accelerator_all_onnx = t.accelerator_ops.erase("*") > 0;
  }
  if (has("cpu_fallback")) ParseFallback(f, t);
  if (has("accelerator_exclude")) {
    t.accelerator_exclude = ParseOpList(f, "/accelerator_exclude", false, DeclaredOps(t), false);
  }
  if (has("unsupported_ops")) {
    t.unsupported_ops = ParseOpList(f, "/unsupported_ops", false, DeclaredOps(t), false);
  }
  if (has("unsupported_reason")) t.unsupported_reason = f.String("/unsupported_reason");
  if (has("generic_constraints"))
    t.generic_constraints = ParseConstraints(f, "/generic_constraints");
  if (has("op_constraints")) t.op_constraints = ParseOpConstraints(f, "/op_constraints", t);
  if (has("cpu_constraints")) t.cpu_constraints = ParseOpConstraints(f, "/cpu_constraints", t);
  if (has("lowerings")) {
    t.lowerings = ParseLowerings(f, t);
    t.lowerings_file = f.name();
  }
  if (has("rewrites")) {
    t.rewrites = f.String("/rewrites");
    t.rewrites_file = f.name();
  }
  if (has("default_input_shape")) {
    t.default_input_shape = f.String("/default_input_shape");
    if (t.default_input_shape.empty()) f.Fail("/default_input_shape", "expected NAME:DIMS");
    t.default_input_shape_file = f.name();
  }
  if (has("input_values")) ParseInputValues(f, t);
  if (has("runner_backend")) {
    t.runner_backend = f.String("/runner_backend");
    if (t.runner_backend != "rknn") f.Fail("/runner_backend", "expected \"rknn\"");
  }
  if (has("float_arithmetic")) ParseFloatArithmetic(f, t);
  if (has("vendor_tool")) t.vendor_tool = ParseVendorTool(f);
}

void LoadInto(const std::filesystem::path& path, TargetProfile& t, std::set<std::string>& seen,
              int depth) {
  JsonFile f = JsonFile::Load(path);
  if (f.Has("/extends")) {
    std::string parent = f.String("/extends");
    auto parent_path = path.parent_path() / (parent + ".json");
    if (depth > 4 || !std::filesystem::exists(parent_path)) {
      f.Fail("/extends", "expected the name of another profile in " + path.parent_path().string() +
                             " (no " + parent + ".json, or a cycle)");
    }
    LoadInto(parent_path, t, seen, depth + 1);
  }
  ParseProfileFields(f, t, seen);
  t.file = path.string();
}

}  // namespace

TargetProfile LoadTargetFile(const std::filesystem::path& path) {
  TargetProfile t;
  std::set<std::string> seen;
  LoadInto(path, t, seen, 0);
  for (const char* key : {"name", "title", "sources", "hardware", "dtypes", "opset",
                          "dynamic_shapes", "cpu_fallback", "accelerator_ops"}) {
    if (!seen.count(key)) {
      JsonFile::Load(path).Fail("", std::string("missing required field \"") + key + "\"");
    }
  }
  CheckLoweringTargets(t);
  if (t.name != path.stem().string()) {
    JsonFile::Load(path).Fail(
        "/name", "expected \"" + path.stem().string() + "\" (the name must match the file name)");
  }
  return t;
}

std::vector<std::string> TargetNames(const std::filesystem::path& rules_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(rules_dir / "targets", ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TargetProfile LoadTarget(const std::filesystem::path& rules_dir, const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos || util::EndsWith(name_or_path, ".json")) {
    if (!std::filesystem::is_regular_file(name_or_path)) {
      ThrowUsage("target profile '{}' does not exist", name_or_path);
    }
    return LoadTargetFile(name_or_path);
  }
  auto path = rules_dir / "targets" / (name_or_path + ".json");
  if (!std::filesystem::exists(path)) {
    auto names = TargetNames(rules_dir);
    auto close = util::ClosestNames(name_or_path, names, 1);
    ThrowUsage(
        "unknown target '{}' (shipped targets: {}{}; profiles live in {}; a profile file "
        "can also be given by path)",
        name_or_path, util::Join(names, ", "),
        close.empty() ? "" : "; did you mean '" + close[0] + "'?",
        (rules_dir / "targets").string());
  }
  return LoadTargetFile(path);
}

}  // namespace porttool::decide
