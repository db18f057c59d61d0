#include "lib/stages/check.h"

#include <fmt/format.h>

namespace porttool::stages {

CheckStageResult CheckStage(io::Model& model, const CheckStageOptions& options) {
  CheckStageResult result;
  analysis::CheckOptions check;
  check.full_check = options.full_check;
  check.input_shapes = options.input_shapes;
  result.report = analysis::CheckModel(model, check);
  if (options.target) {
    result.target = decide::CheckModelOnTarget(model, *options.target, options.input_shapes);
    decide::AddTargetFindings(*result.target, result.report);
  }
  return result;
}

nlohmann::json CheckJson(const CheckStageResult& result) {
  const analysis::CheckReport& report = result.report;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    findings.push_back({{"severity", analysis::SeverityName(f.severity)},
                        {"id", f.id},
                        {"node", f.node},
                        {"tensor", f.tensor},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  nlohmann::json doc = {{"ok", !report.HasErrors()},
                        {"errors", report.Count(analysis::Severity::kError)},
                        {"warnings", report.Count(analysis::Severity::kWarning)},
                        {"infos", report.Count(analysis::Severity::kInfo)},
                        {"findings", findings}};
  if (result.target) doc["target"] = decide::TargetCheckToJson(*result.target);
  return doc;
}

std::string FindingsText(const analysis::CheckReport& report) {
  std::string out;
  for (const auto& f : report.findings) {
    out += fmt::format("{}[{}] {}\n", analysis::SeverityName(f.severity), f.id, f.message);
    if (!f.fix.empty()) out += fmt::format("    fix: {}\n", f.fix);
  }
  return out;
}

}  // namespace porttool::stages
