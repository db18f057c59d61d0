#include "tools/porttool/transform_output.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/util/strings.h"

namespace porttool::cli {
namespace {

// A pass over 10^5 nodes may leave a note on each; a terminal needs the first few and a count.
constexpr size_t kTextNotesPerStep = 20;

void PrintText(const passes::TransformReport& r, const std::vector<std::string>& files) {
  for (const auto& s : r.steps) {
    if (s.result.changes == 0 && s.result.notes.empty()) continue;
    std::cout << fmt::format("{:<30} {} change(s){}\n", s.id, s.result.changes,
                             s.result.failed ? "  FAILED" : "");
    PrintBounded(s.result.notes, kTextNotesPerStep, "    ", "notes",
                 fmt::format("--json lists the first {}", stages::kJsonNotesPerStep),
                 [](const std::string& note) { std::cout << "    " << note << "\n"; });
  }
  std::cout << fmt::format("\n{:<28} {:>8} {:>8}\n", "op", "before", "after");
  for (const auto& c : passes::OpCounts(r)) {
    std::cout << fmt::format("{:<28} {:>8} {:>8}{}\n", c.op, c.before, c.after,
                             c.before != c.after ? "  *" : "");
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
    nlohmann::json doc = stages::TransformJson(report);
    doc["output"] = files;
    PrintJson(doc);
  } else {
    PrintText(report, files);
  }
  return report.failed ? kExitCheckFailed : kExitOk;
}

void AddFoldLimitOptions(CLI::App& cmd, stages::TransformLimits& limits,
                         const std::string& rounds_help) {
  cmd.add_option("--max-tensor-bytes", limits.max_tensor_bytes, "Largest tensor folding creates")
      ->capture_default_str();
  cmd.add_option("--max-rounds", limits.max_rounds, rounds_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

stages::NoteSink LogNotes() {
  return
      [](const std::string& pass, const std::string& note) { spdlog::debug("{}: {}", pass, note); };
}

}  // namespace porttool::cli
