#include "lib/stages/check.h"

#include <fmt/format.h>

#include "lib/ir/initializer_inputs.h"

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

std::vector<std::string> ApplyCheckFixes(io::Model& model) {
  std::vector<std::string> fixed;
  auto dropped = ir::DropInitializerInputs(*model.proto.mutable_graph());
  if (!dropped.empty()) {
    fixed.push_back(fmt::format(
        "[initializer-input] dropped {} initializer(s) from the graph inputs (the initializers "
        "stay)",
        dropped.size()));
  }
  return fixed;
}

nlohmann::json CheckJson(const CheckStageResult& result) {
  const analysis::CheckReport& report = result.report;
  nlohmann::json findings = nlohmann::json::array();
  auto shown = analysis::SelectFindings(
      report, {.per_id = kJsonFindingsPerId, .total = report.findings.size()});
  for (const auto& [f, more] : shown) {
    findings.push_back({{"severity", analysis::SeverityName(f->severity)},
                        {"id", f->id},
                        {"node", f->node},
                        {"tensor", f->tensor},
                        {"message", f->message},
                        {"fix", f->fix}});
  }
  nlohmann::json doc = {{"ok", !report.HasErrors()},
                        {"errors", report.Count(analysis::Severity::kError)},
                        {"warnings", report.Count(analysis::Severity::kWarning)},
                        {"infos", report.Count(analysis::Severity::kInfo)},
                        {"findings", findings},
                        {"counts", analysis::CountById(report)},
                        {"omitted", report.findings.size() - shown.size()}};
  if (result.target) doc["target"] = decide::TargetCheckToJson(*result.target);
  return doc;
}

}  // namespace porttool::stages
