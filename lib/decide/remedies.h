// Remedies for the nodes a target cannot run (step 2 of the decision procedure): a rewrite rule
// from rules/decision/remedies.json when one applies, stripping post-processing at the graph tail
// to the host, splitting the node out to the host CPU (with the bridge size), or, last, a custom
// operator with the exact signature to implement.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/decide/analyzed_model.h"
#include "lib/decide/json_file.h"
#include "lib/decide/scan.h"
#include "lib/decide/target.h"

namespace porttool::decide {

struct RemedyRule {
  std::string id;
  std::string op;                  // OpKey
  std::vector<std::string> fixes;  // constraint ids; empty: the op itself is missing
  std::vector<Check> requires_checks;
  std::optional<std::string> pass;
  std::string text;
};

std::vector<RemedyRule> LoadRemedies(const JsonFile& file);

struct Remedy {
  std::string kind;  // "rewrite", "strip-to-host", "split", "custom-op"
  std::string id;    // rewrite rule id; empty otherwise
  std::string text;
  std::optional<std::string> pass;
  std::optional<uint64_t> bridge_bytes;  // split / strip-to-host
  nlohmann::json signature;              // custom-op
};

struct NodeRemedies {
  int index = -1;
  std::string node;
  std::string op;
  bool in_backbone = true;
  std::vector<Remedy> remedies;             // best first
  bool resolved_without_custom_op = false;  // a rewrite or host placement covers it
};

// Remedies for every unsupported node of `scan`.
std::vector<NodeRemedies> ComputeRemedies(const AnalyzedModel& model, const TargetProfile& target,
                                          const TargetScan& scan,
                                          const std::vector<RemedyRule>& rules);

// Rewrite rules that would move CPU-fallback nodes back onto the accelerator.
std::vector<NodeRemedies> FallbackRewrites(const AnalyzedModel& model, const TargetScan& scan,
                                           const std::vector<RemedyRule>& rules);

// The operator a custom implementation must provide for node `index`: domain, op, inputs and
// outputs with dtypes and shapes, attributes.
nlohmann::json CustomOpSignature(const AnalyzedModel& model, int index);

nlohmann::json RemediesToJson(const std::vector<NodeRemedies>& remedies);

}  // namespace porttool::decide
