// The decision table as data: dimensions of ordered rules over named facts, each rule with an
// outcome and a reason, plus the combination policy that turns the dimension outcomes into a
// verdict. Loading validates everything against the fact catalogue (unknown fact, wrong value
// type, unknown operator or outcome, missing field) and points at file, line and JSON pointer.
// Evaluation is three-valued: a condition over a missing fact is unknown, and an unknown rule
// blocks every later rule with a different outcome, so missing facts surface as 'unknown'
// instead of a guess.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/decide/facts.h"
#include "lib/decide/json_file.h"

namespace porttool::decide {

enum class Outcome { kOnnx, kCustomOp, kVerify, kUnknown };
std::string OutcomeName(Outcome outcome);  // "onnx", "custom-op", "verify", "unknown"

struct Condition {
  enum class Kind { kFact, kAll, kAny, kNot };
  Kind kind = Kind::kFact;
  std::string fact;                 // kFact
  std::string op;                   // eq, ne, lt, le, gt, ge, in
  nlohmann::json value;             // kFact
  std::vector<Condition> children;  // kAll, kAny, kNot (one child)
};

struct Rule {
  std::string id;
  Outcome outcome = Outcome::kUnknown;
  std::optional<Condition> when;  // absent for a dimension's `otherwise`
  std::string reason;             // may name facts in braces: "{hardware.class}"
};

struct Dimension {
  std::string id;
  std::string title;
  std::string kind;  // "hard" or "cost"
  std::vector<Rule> rules;
  std::optional<Rule> otherwise;
};

struct PolicyVerdict {
  std::string id;
  std::string when;  // any-hard-custom-op, all-hard-onnx, otherwise
  Outcome verdict = Outcome::kVerify;
  std::string reason;
};

struct Policy {
  std::string id;
  std::string description;
  std::vector<std::string> hard;
  std::vector<std::string> cost;
  std::vector<PolicyVerdict> verdicts;
  Outcome leaning_tie = Outcome::kOnnx;
  std::string leaning_reason;
};

struct DecisionTable {
  std::string file;
  std::vector<Dimension> dimensions;
  Policy policy;
};

DecisionTable LoadDecisionTable(const JsonFile& file, const FactCatalog& catalog);

enum class Truth { kFalse, kTrue, kUnknown };

// Kleene evaluation; names of facts that were needed but missing are added to `missing`.
Truth Evaluate(const Condition& condition, const Facts& facts, std::set<std::string>& missing);

struct RuleTrace {
  std::string rule;
  std::string result;  // "fired", "no", "unknown", "blocked", "skipped"
  std::vector<std::string> missing;
};

struct DimensionResult {
  std::string id;
  std::string title;
  std::string kind;
  Outcome outcome = Outcome::kUnknown;
  std::string rule;                  // the rule that fired; empty when unknown
  std::string reason;                // with fact values substituted
  std::vector<std::string> missing;  // facts that would decide an unknown dimension
  std::vector<RuleTrace> trace;
};

DimensionResult EvaluateDimension(const Dimension& dimension, const Facts& facts);

struct Verdict {
  Outcome verdict = Outcome::kVerify;
  std::string rule;
  std::string reason;
  std::optional<Outcome> leaning;  // only for the grey zone
  std::string leaning_reason;
  std::vector<std::string> missing;  // facts of unknown dimensions
};

Verdict Combine(const Policy& policy, const std::vector<DimensionResult>& results);

// Replaces "{fact.name}" with the fact's display value ("?" when missing).
std::string SubstituteFacts(const std::string& text, const Facts& facts);

}  // namespace porttool::decide
