// CheckStage: `porttool check` as one call. It composes the ONNX checker, strict shape inference
// and the porting lints (lib/analysis/check.h) with, when a target profile is given, the
// operator-compatibility scan and memory fit (lib/decide/scan.h), whose failures join the
// findings so that one run has one verdict. The model is only borrowed: it is left as it was.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/check.h"
#include "lib/decide/scan.h"
#include "lib/decide/target.h"
#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::stages {

struct CheckStageOptions {
  bool full_check = true;  // strict shape inference after the checker
  shape::InputShapes input_shapes;
  std::optional<decide::TargetProfile> target{};
};

struct CheckStageResult {
  analysis::CheckReport report;
  std::optional<decide::TargetCheck> target;  // with a target
  bool ok() const { return !report.HasErrors(); }
};

CheckStageResult CheckStage(io::Model& model, const CheckStageOptions& options);

// The fixes that need no one's judgement, made on `model`: initializers listed as graph inputs
// are dropped from the inputs (finding "initializer-input"). One line per fix made; empty when
// there was nothing to fix.
std::vector<std::string> ApplyCheckFixes(io::Model& model);

// `check --json` keeps this many findings of each id and counts the rest.
inline constexpr size_t kJsonFindingsPerId = 100;

// {"ok", "errors", "warnings", "infos", "findings": [...], "counts": {id: n}, "omitted": n,
// "target"?}: the `check --json` shape. `findings` holds the first kJsonFindingsPerId of each id.
nlohmann::json CheckJson(const CheckStageResult& result);

}  // namespace porttool::stages
