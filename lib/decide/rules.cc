#include "lib/decide/rules.h"

#include <algorithm>
#include <map>
#include <regex>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

const std::vector<std::string> kComparisons = {"eq", "ne", "lt", "le", "gt", "ge", "in"};
const std::vector<std::string> kOutcomes = {"onnx", "custom-op", "verify"};
const std::vector<std::string> kPolicyWhens = {"any-hard-custom-op", "all-hard-onnx", "otherwise"};

Outcome ParseOutcome(const JsonFile& f, const std::string& pointer) {
  std::string name = f.String(pointer);
  if (name == "onnx") return Outcome::kOnnx;
  if (name == "custom-op") return Outcome::kCustomOp;
  if (name == "verify") return Outcome::kVerify;
  f.Fail(pointer, "unknown outcome \"" + name + "\" (expected onnx, custom-op or verify)");
}

// The value a comparison names must suit the fact: numbers for ordered comparisons, an allowed
// enum value, a boolean for a boolean fact.
void CheckComparisonValue(const JsonFile& f, const std::string& pointer, const FactSpec& spec,
                          const std::string& op, const nlohmann::json& value) {
  if (op == "in") {
    if (!value.is_array() || value.empty()) {
      f.Fail(pointer,
             "operator \"in\" expects a non-empty array of values for fact \"" + spec.name + "\"");
    }
    for (size_t i = 0; i < value.size(); ++i) {
      if (auto error = CheckFactValue(spec, value[i])) {
        f.Fail(pointer + "/" + std::to_string(i), "fact \"" + spec.name + "\": " + *error);
      }
    }
    return;
  }
  bool ordered = op != "eq" && op != "ne";
  if (ordered && spec.type != FactType::kInteger && spec.type != FactType::kNumber) {
    f.Fail(pointer, "operator \"" + op + "\" needs a numeric fact, but \"" + spec.name + "\" is " +
                        FactTypeName(spec.type));
  }
  if (auto error = CheckFactValue(spec, value)) {
    f.Fail(pointer, "fact \"" + spec.name + "\": " + *error);
  }
}

Condition ParseCondition(const JsonFile& f, const std::string& p, const FactCatalog& catalog) {
  const auto& obj = f.Object(p);
  Condition c;
  if (obj.contains("all") || obj.contains("any")) {
    f.OnlyKeys(p, {"all", "any"});
    if (obj.size() != 1) f.Fail(p, "expected exactly one of \"all\" or \"any\"");
    std::string key = obj.contains("all") ? "all" : "any";
    c.kind = key == "all" ? Condition::Kind::kAll : Condition::Kind::kAny;
    const auto& items = f.Array(p + "/" + key);
    if (items.empty()) f.Fail(p + "/" + key, "expected at least one condition");
    for (size_t i = 0; i < items.size(); ++i) {
      c.children.push_back(ParseCondition(f, p + "/" + key + "/" + std::to_string(i), catalog));
    }
    return c;
  }
  if (obj.contains("not")) {
    f.OnlyKeys(p, {"not"});
    c.kind = Condition::Kind::kNot;
    c.children.push_back(ParseCondition(f, p + "/not", catalog));
    return c;
  }
  f.OnlyKeys(p, {"fact", "op", "value"});
  c.fact = f.String(p + "/fact");
  const FactSpec* spec = catalog.Find(c.fact);
  if (!spec) {
    auto close = util::ClosestNames(c.fact, catalog.Names(), 3);
    f.Fail(p + "/fact",
           fmt::format("unknown fact \"{}\" (expected a fact from "
                       "rules/decision/facts.json{})",
                       c.fact,
                       close.empty() ? "" : "; did you mean " + util::Join(close, ", ") + "?"));
  }
  c.op = f.String(p + "/op");
  if (std::find(kComparisons.begin(), kComparisons.end(), c.op) == kComparisons.end()) {
    f.Fail(p + "/op", "unknown operator \"" + c.op + "\" (expected one of " +
                          util::Join(kComparisons, ", ") + ")");
  }
  c.value = f.At(p + "/value");
  CheckComparisonValue(f, p + "/value", *spec, c.op, c.value);
  return c;
}

Rule ParseRule(const JsonFile& f, const std::string& p, const FactCatalog& catalog,
               bool needs_when) {
  f.OnlyKeys(p, {"id", "outcome", "when", "reason"});
  Rule r;
  r.id = f.String(p + "/id");
  r.outcome = ParseOutcome(f, p + "/outcome");
  if (needs_when) r.when = ParseCondition(f, p + "/when", catalog);
  r.reason = f.String(p + "/reason");
  return r;
}

Dimension ParseDimension(const JsonFile& f, const std::string& p, const FactCatalog& catalog) {
  f.OnlyKeys(p, {"id", "title", "kind", "rules", "otherwise"});
  Dimension d;
  d.id = f.String(p + "/id");
  d.title = f.String(p + "/title");
  d.kind = f.String(p + "/kind");
  if (d.kind != "hard" && d.kind != "cost") {
    f.Fail(p + "/kind", "expected \"hard\" or \"cost\", got \"" + d.kind + "\"");
  }
  const auto& rules = f.Array(p + "/rules");
  if (rules.empty()) f.Fail(p + "/rules", "expected at least one rule");
  for (size_t i = 0; i < rules.size(); ++i) {
    d.rules.push_back(ParseRule(f, p + "/rules/" + std::to_string(i), catalog, true));
  }
  if (f.Has(p + "/otherwise")) d.otherwise = ParseRule(f, p + "/otherwise", catalog, false);
  return d;
}

Policy ParsePolicy(const JsonFile& f, const std::string& p, const std::set<std::string>& dims) {
  f.OnlyKeys(p, {"id", "description", "hard", "cost", "verdicts", "leaning"});
  Policy policy;
  policy.id = f.String(p + "/id");
  policy.description = f.StringOr(p + "/description", "");
  for (const char* key : {"hard", "cost"}) {
    auto names = f.Strings(p + "/" + key);
    for (size_t i = 0; i < names.size(); ++i) {
      if (!dims.count(names[i])) {
        f.Fail(
            p + "/" + key + "/" + std::to_string(i),
            "unknown dimension \"" + names[i] + "\" (expected one of the table's dimension ids)");
      }
    }
    (std::string(key) == "hard" ? policy.hard : policy.cost) = names;
  }
  const auto& verdicts = f.Array(p + "/verdicts");
  for (size_t i = 0; i < verdicts.size(); ++i) {
    std::string vp = p + "/verdicts/" + std::to_string(i);
    f.OnlyKeys(vp, {"id", "when", "verdict", "reason"});
    PolicyVerdict v;
    v.id = f.String(vp + "/id");
    v.when = f.String(vp + "/when");
    if (std::find(kPolicyWhens.begin(), kPolicyWhens.end(), v.when) == kPolicyWhens.end()) {
      f.Fail(vp + "/when", "unknown policy condition \"" + v.when + "\" (expected one of " +
                               util::Join(kPolicyWhens, ", ") + ")");
    }
    v.verdict = ParseOutcome(f, vp + "/verdict");
    v.reason = f.String(vp + "/reason");
    policy.verdicts.push_back(v);
  }
  if (policy.verdicts.empty() || policy.verdicts.back().when != "otherwise") {
    f.Fail(p + "/verdicts", "expected the last verdict to have \"when\": \"otherwise\"");
  }
  f.OnlyKeys(p + "/leaning", {"tie", "reason"});
  policy.leaning_tie = ParseOutcome(f, p + "/leaning/tie");
  policy.leaning_reason = f.String(p + "/leaning/reason");
  return policy;
}

bool Compare(const std::string& op, const nlohmann::json& actual, const nlohmann::json& expected) {
  if (op == "in") {
    return std::any_of(expected.begin(), expected.end(),
                       [&](const nlohmann::json& v) { return Compare("eq", actual, v); });
  }
  if (actual.is_number() && expected.is_number()) {
    double a = actual.get<double>(), e = expected.get<double>();
    if (op == "eq") return a == e;
    if (op == "ne") return a != e;
    if (op == "lt") return a < e;
    if (op == "le") return a <= e;
    if (op == "gt") return a > e;
    if (op == "ge") return a >= e;
  }
  if (op == "eq") return actual == expected;
  if (op == "ne") return actual != expected;
  return false;
}

}  // namespace

std::string OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOnnx:
      return "onnx";
    case Outcome::kCustomOp:
      return "custom-op";
    case Outcome::kVerify:
      return "verify";
    case Outcome::kUnknown:
      return "unknown";
  }
  return "unknown";
}

DecisionTable LoadDecisionTable(const JsonFile& f, const FactCatalog& catalog) {
  f.OnlyKeys("", {"schema", "description", "dimensions", "policy"});
  // As rules validate reads it: decide must not accept a table validate refuses.
  if (f.String("/schema") != "porttool.decision/1") {
    f.Fail("/schema", "expected \"porttool.decision/1\"");
  }
  DecisionTable table;
  table.file = f.name();
  std::set<std::string> ids, rule_ids;
  const auto& dims = f.Array("/dimensions");
  for (size_t i = 0; i < dims.size(); ++i) {
    std::string p = "/dimensions/" + std::to_string(i);
    Dimension d = ParseDimension(f, p, catalog);
    if (!ids.insert(d.id).second) f.Fail(p + "/id", "dimension \"" + d.id + "\" is defined twice");
    for (size_t r = 0; r < d.rules.size(); ++r) {
      if (!rule_ids.insert(d.rules[r].id).second) {
        f.Fail(p + "/rules/" + std::to_string(r) + "/id",
               "rule id \"" + d.rules[r].id + "\" is used twice (expected unique ids)");
      }
    }
    table.dimensions.push_back(std::move(d));
  }
  table.policy = ParsePolicy(f, "/policy", ids);
  return table;
}

Truth Evaluate(const Condition& c, const Facts& facts, std::set<std::string>& missing) {
  switch (c.kind) {
    case Condition::Kind::kFact: {
      const FactValue* v = facts.Get(c.fact);
      if (!v) {
        missing.insert(c.fact);
        return Truth::kUnknown;
      }
      return Compare(c.op, v->value, c.value) ? Truth::kTrue : Truth::kFalse;
    }
    case Condition::Kind::kNot: {
      Truth t = Evaluate(c.children[0], facts, missing);
      return t == Truth::kUnknown ? t : (t == Truth::kTrue ? Truth::kFalse : Truth::kTrue);
    }
    case Condition::Kind::kAll:
    case Condition::Kind::kAny: {
      // Kleene logic: a decisive child (false for all, true for any) wins over unknowns, and
      // then the other children's missing facts are irrelevant.
      Truth decisive = c.kind == Condition::Kind::kAll ? Truth::kFalse : Truth::kTrue;
      std::set<std::string> child_missing;
      bool unknown = false;
      for (const auto& child : c.children) {
        Truth t = Evaluate(child, facts, child_missing);
        if (t == decisive) return decisive;
        if (t == Truth::kUnknown) unknown = true;
      }
      if (!unknown) return decisive == Truth::kFalse ? Truth::kTrue : Truth::kFalse;
      missing.insert(child_missing.begin(), child_missing.end());
      return Truth::kUnknown;
    }
  }
  return Truth::kUnknown;
}

std::string SubstituteFacts(const std::string& text, const Facts& facts) {
  static const std::regex kPlaceholder(R"(\{([a-z0-9_]+\.[a-z0-9_.]+)\})");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kPlaceholder);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, it->position() - last);
    out += facts.Format((*it)[1]);
    last = it->position() + it->length();
  }
  return out + text.substr(last);
}

DimensionResult EvaluateDimension(const Dimension& d, const Facts& facts) {
  DimensionResult result{d.id, d.title, d.kind, Outcome::kUnknown, "", "", {}, {}};
  // Outcomes of earlier rules that could not be evaluated: a later rule with another outcome
  // cannot fire, because the earlier one might have.
  std::set<Outcome> pending;
  std::set<std::string> missing;
  for (const auto& rule : d.rules) {
    std::set<std::string> rule_missing;
    Truth t = Evaluate(*rule.when, facts, rule_missing);
    RuleTrace trace{rule.id, "", {rule_missing.begin(), rule_missing.end()}};
    if (t == Truth::kTrue) {
      bool blocked =
          std::any_of(pending.begin(), pending.end(), [&](Outcome o) { return o != rule.outcome; });
      trace.result = blocked ? "blocked" : "fired";
      result.trace.push_back(trace);
      if (!blocked) {
        result.outcome = rule.outcome;
        result.rule = rule.id;
        result.reason = SubstituteFacts(rule.reason, facts);
      }
      break;
    }
    trace.result = t == Truth::kFalse ? "no" : "unknown";
    result.trace.push_back(trace);
    if (t == Truth::kUnknown) {
      pending.insert(rule.outcome);
      missing.insert(rule_missing.begin(), rule_missing.end());
    }
  }
  if (result.rule.empty() && pending.empty() && d.otherwise) {
    result.outcome = d.otherwise->outcome;
    result.rule = d.otherwise->id;
    result.reason = SubstituteFacts(d.otherwise->reason, facts);
    result.trace.push_back({d.otherwise->id, "fired", {}});
  }
  if (result.rule.empty()) {
    result.missing.assign(missing.begin(), missing.end());
    result.reason = missing.empty() ? "No rule matched the given facts."
                                    : "Missing fact(s): " + util::Join(result.missing, ", ") +
                                          " (shown, never guessed: give them as project facts).";
  }
  return result;
}

Verdict Combine(const Policy& policy, const std::vector<DimensionResult>& results) {
  std::map<std::string, const DimensionResult*> by_id;
  for (const auto& r : results) by_id[r.id] = &r;
  auto outcome_of = [&](const std::string& id) {
    auto it = by_id.find(id);
    return it == by_id.end() ? Outcome::kUnknown : it->second->outcome;
  };
  std::vector<std::string> hard_custom, hard_not_onnx;
  Verdict v;
  for (const auto& id : policy.hard) {
    Outcome o = outcome_of(id);
    if (o == Outcome::kCustomOp) hard_custom.push_back(id);
    if (o != Outcome::kOnnx) hard_not_onnx.push_back(id + "=" + OutcomeName(o));
    if (o == Outcome::kUnknown && by_id.count(id)) {
      for (const auto& m : by_id[id]->missing) v.missing.push_back(m);
    }
  }
  for (const auto& pv : policy.verdicts) {
    bool applies = pv.when == "otherwise" ||
                   (pv.when == "any-hard-custom-op" && !hard_custom.empty()) ||
                   (pv.when == "all-hard-onnx" && hard_not_onnx.empty());
    if (!applies) continue;
    v.verdict = pv.verdict;
    v.rule = pv.id;
    std::string dims =
        util::Join(pv.when == "any-hard-custom-op" ? hard_custom : hard_not_onnx, ", ");
    v.reason = std::regex_replace(pv.reason, std::regex(R"(\{dimensions\})"), dims);
    if (pv.when == "otherwise") {
      int onnx = 0, custom = 0;
      for (const auto& id : policy.cost) {
        onnx += outcome_of(id) == Outcome::kOnnx;
        custom += outcome_of(id) == Outcome::kCustomOp;
      }
      v.leaning = onnx > custom   ? Outcome::kOnnx
                  : custom > onnx ? Outcome::kCustomOp
                                  : policy.leaning_tie;
      std::string reason = std::regex_replace(policy.leaning_reason, std::regex(R"(\{onnx\})"),
                                              std::to_string(onnx));
      v.leaning_reason =
          std::regex_replace(reason, std::regex(R"(\{custom\})"), std::to_string(custom));
    }
    break;
  }
  return v;
}

}  // namespace porttool::decide
