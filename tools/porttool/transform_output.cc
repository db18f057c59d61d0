#include "tools/porttool/transform_output.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <set>

namespace porttool::cli {
namespace {

nlohmann::json ReportJson(const passes::TransformReport& r, const std::vector<std::string>& files) {
  nlohmann::json ops = nlohmann::json::array();
  std::set<std::string> names;
  for (const auto& [op, n] : r.ops_before) names.insert(op);
  for (const auto& [op, n] : r.ops_after) names.insert(op);
  for (const auto& op : names) {
    auto before = r.ops_before.count(op) ? r.ops_before.at(op) : 0;
    auto after = r.ops_after.count(op) ? r.ops_after.at(op) : 0;
    ops.push_back({{"op", op}, {"before", before}, {"after", after}});
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"pass", s.id},
                     {"changes", s.result.changes},
                     {"failed", s.result.failed},
                     {"notes", s.result.notes}});
  }
  return {{"nodes_before", r.nodes_before},
          {"nodes_after", r.nodes_after},
          {"ops", ops},
          {"rounds", r.rounds},
          {"hit_cap", r.hit_cap},
          {"failed", r.failed},
          {"steps", steps},
          {"output", files}};
}

void PrintText(const passes::TransformReport& r, const std::vector<std::string>& files) {
  for (const auto& s : r.steps) {
    if (s.result.changes == 0 && s.result.notes.empty()) continue;
    std::cout << fmt::format("{:<30} {} change(s){}\n", s.id, s.result.changes,
                             s.result.failed ? "  FAILED" : "");
    for (const auto& note : s.result.notes) std::cout << "    " << note << "\n";
  }
  std::set<std::string> names;
  for (const auto& [op, n] : r.ops_before) names.insert(op);
  for (const auto& [op, n] : r.ops_after) names.insert(op);
  std::cout << fmt::format("\n{:<28} {:>8} {:>8}\n", "op", "before", "after");
  for (const auto& op : names) {
    int before = r.ops_before.count(op) ? r.ops_before.at(op) : 0;
    int after = r.ops_after.count(op) ? r.ops_after.at(op) : 0;
    std::cout << fmt::format("{:<28} {:>8} {:>8}{}\n", op, before, after,
                             before != after ? "  *" : "");
  }
  std::cout << fmt::format("{:<28} {:>8} {:>8}\n", "total nodes", r.nodes_before, r.nodes_after);
  if (r.rounds > 1) std::cout << r.rounds << " round(s) to a fixed point\n";
  for (const auto& f : files) std::cout << "wrote " << f << "\n";
}

}  // namespace

void WarnIfCapped(const passes::TransformReport& report, const std::string& flag) {
  if (report.hit_cap) {
    spdlog::warn("stopped after {} rounds before a fixed point; raise {} to go on", report.rounds,
                 flag);
  }
}

int FinishTransform(io::Model& model, const passes::TransformReport& report,
                    const ModelOutputOptions& output, bool json) {
  std::vector<std::string> files;
  if (report.failed) {
    spdlog::error("stage '{}' failed; nothing was written", report.steps.back().id);
  } else if (!output.output.empty()) {
    files = SaveModel(model, output);
  }
  if (json) {
    PrintJson(ReportJson(report, files));
  } else {
    PrintText(report, files);
  }
  return report.failed ? kExitCheckFailed : kExitOk;
}

void AddFoldLimitOptions(CLI::App& cmd, FoldLimits& limits, const std::string& rounds_help) {
  cmd.add_option("--max-tensor-bytes", limits.max_tensor_bytes, "Largest tensor folding creates")
      ->capture_default_str();
  cmd.add_option("--max-rounds", limits.max_rounds, rounds_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

passes::PassContext LoggingContext(const FoldLimits& limits) {
  passes::PassContext context;
  context.max_tensor_bytes = limits.max_tensor_bytes;
  context.max_rounds = limits.max_rounds;
  context.note_sink = [](const std::string& pass, const std::string& note) {
    spdlog::debug("{}: {}", pass, note);
  };
  return context;
}

}  // namespace porttool::cli
