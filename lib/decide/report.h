// The decision report: `porttool decide`. It gathers the facts (model, target profile, --facts
// file, flags), evaluates the decision table dimension by dimension, combines the outcomes with
// the policy into a verdict (onnx | custom-op | verify, with a leaning in the grey zone), and
// walks the five-step procedure: (1) operator compatibility scan, (2) impact and remedy of each
// missing op, (3) performance baseline against the SLA, (4) bottleneck location, (5) cost-benefit.
// Rendered as JSON (shape documented in docs/facts.md) or markdown.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/facts.h"
#include "lib/decide/remedies.h"
#include "lib/decide/rules.h"
#include "lib/decide/scan.h"
#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::decide {

struct FlagFact {
  std::string name;
  nlohmann::json value;
  std::string flag;  // "--fps", shown as the fact's origin
};

struct DecideOptions {
  std::filesystem::path rules_dir;   // holds decision/ and targets/ (resolved by the caller)
  std::string target;                // name or profile path; empty: target facts stay unknown
  std::filesystem::path facts_file;  // empty: none
  std::vector<FlagFact> flag_facts;
  shape::InputShapes input_shapes;
};

struct ReportStep {
  int number = 0;
  std::string title;
  std::vector<std::string> findings;
};

struct DecisionReport {
  std::string model_name;
  std::optional<TargetProfile> target;
  std::vector<std::string> target_names;  // the shipped profiles, listed when no target was given
  Facts facts;
  ModelFacts model_facts;
  std::vector<DimensionResult> dimensions;
  Policy policy;
  Verdict verdict;
  std::optional<TargetScan> scan;
  std::optional<MemoryFit> memory;
  std::vector<NodeRemedies> remedies;           // unsupported nodes
  std::vector<NodeRemedies> fallback_rewrites;  // CPU-fallback nodes a rewrite would move back
  std::vector<ReportStep> steps;
  std::vector<std::string> next_steps;

  nlohmann::json ToJson() const;
  std::string ToMarkdown() const;
};

// Throws Error(kUsage) for an unknown target or bad --input-shape, Error(kBadInput) for
// malformed rule/target/facts files or facts of the wrong type.
DecisionReport Decide(const io::Model& model, const DecideOptions& options);

}  // namespace porttool::decide
