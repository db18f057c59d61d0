#include "passes/transform.h"

#include "lib/ir/rewrite.h"
#include "lib/util/strings.h"

namespace porttool::passes {
namespace {

int Total(const std::map<std::string, int>& ops) {
  int n = 0;
  for (const auto& [op, count] : ops) n += count;
  return n;
}

}  // namespace

std::vector<OpCount> OpCounts(const TransformReport& r) {
  std::map<std::string, OpCount> by_op;
  for (const auto& [op, n] : r.ops_before) by_op[op] = {op, n, 0};
  for (const auto& [op, n] : r.ops_after) {
    by_op.try_emplace(op, OpCount{op, 0, 0});
    by_op[op].after = n;
  }
  std::vector<OpCount> out;
  for (auto& [op, count] : by_op) out.push_back(count);
  return out;
}

TransformReport Transform(io::Model& model, const std::vector<PipelineStep>& steps,
                          bool fixed_point, PassContext& context) {
  ValidatePipeline(steps);
  TransformReport report;
  report.ops_before = ir::OpHistogram(model.proto.graph());
  report.nodes_before = Total(report.ops_before);
  if (fixed_point) {
    report.rounds =
        RunToFixedPoint(model, steps, context.max_rounds, report.hit_cap, report.steps, context);
  } else {
    report.steps = RunPipeline(model, steps, context);
  }
  report.failed = !report.steps.empty() && report.steps.back().result.failed;
  report.ops_after = ir::OpHistogram(model.proto.graph());
  report.nodes_after = Total(report.ops_after);
  return report;
}

TransformReport Simplify(io::Model& model, const std::string& input_shape, PassContext& context) {
  std::map<std::string, std::string> fold_options;
  if (!input_shape.empty()) fold_options["input-shape"] = input_shape;
  std::vector<PipelineStep> steps = {{"fold-constants", PassOptions(fold_options)},
                                     {"inline-if", {}},
                                     {"eliminate-identity", {}},
                                     {"fuse-conv-bn", {}},
                                     {"fuse-conv-mul", {}},
                                     {"fuse-conv-add", {}},
                                     {"eliminate-dead-code", {}},
                                     {"eliminate-unused-initializers", {}}};
  // Named first, so every note, report and segment below shows a name, not a blank.
  auto named = RunPipeline(model, {{"name-nodes", {}}}, context);
  TransformReport report = Transform(model, steps, /*fixed_point=*/true, context);
  report.steps.insert(report.steps.begin(), std::move(named.front()));
  auto check = RunPipeline(model, {{"check", {}}}, context);
  report.failed = check.back().result.failed;
  report.steps.push_back(std::move(check.back()));
  return report;
}

TransformReport PrepareForQuantization(io::Model& model, PassContext& context) {
  std::vector<PipelineStep> steps = {{"fuse-conv-bn", {}},
                                     {"fuse-conv-mul", {}},
                                     {"fuse-conv-add", {}},
                                     {"eliminate-dead-code", {}},
                                     {"eliminate-unused-initializers", {}}};
  return Transform(model, steps, /*fixed_point=*/true, context);
}

std::vector<PipelineStep> RuleSteps(const std::vector<std::string>& rules) {
  return ParsePipeline(util::Join(rules, ","));
}

}  // namespace porttool::passes
