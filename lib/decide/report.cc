#include "lib/decide/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "lib/decide/analyzed_model.h"
#include "lib/decide/rules_dir.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

std::string Bytes(uint64_t b) { return util::FormatBytes(b); }

std::string Macs(uint64_t macs) {
  if (macs >= 1000000000ull) return fmt::format("{:.2f} GMAC", macs / 1e9);
  return fmt::format("{:.2f} MMAC", macs / 1e6);
}

// Target hardware facts first, so that the user's --facts and flags override them.
void AddTargetFacts(const FactCatalog& catalog, const TargetProfile& t, Facts& facts) {
  std::string origin = "target " + t.name;
  facts.Set(catalog, "hardware.class", t.hardware_class, origin);
  facts.Set(catalog, "hardware.ram_bytes", t.ram_bytes, origin);
  facts.Set(catalog, "hardware.flash_bytes", t.flash_bytes, origin);
  facts.Set(catalog, "hardware.onnx_toolchain", !t.onnx_toolchain.empty(), origin);
}

void AddScanFacts(const FactCatalog& catalog, const TargetScan& scan,
                  const std::vector<NodeRemedies>& remedies, const MemoryFit& memory,
                  Facts& facts) {
  std::string origin = "target scan " + scan.target;
  int unresolved = 0;
  for (const auto& r : remedies) unresolved += r.in_backbone && !r.resolved_without_custom_op;
  facts.Set(catalog, "target.unsupported_nodes", scan.unsupported, origin);
  facts.Set(catalog, "target.fallback_nodes", scan.cpu_fallback, origin);
  // Nodes the scan could not decide may need custom operators too: with none certain, the count
  // stays unknown (the hardware dimension says what it needs) instead of a reassuring 0.
  if (unresolved > 0 || scan.undecided == 0) {
    facts.Set(catalog, "target.unresolved_backbone_ops", unresolved, origin);
  }
  if (memory.fits) facts.Set(catalog, "target.memory_fits", *memory.fits, origin);
  if (memory.headroom_pct) {
    facts.Set(catalog, "target.memory_headroom_pct", std::round(*memory.headroom_pct * 10) / 10,
              origin);
  }
}

uint64_t FactBytes(const Facts& facts, const char* name, uint64_t fallback) {
  const FactValue* v = facts.Get(name);
  return v ? v->value.get<uint64_t>() : fallback;
}

std::optional<double> FactNumber(const Facts& facts, const char* name) {
  const FactValue* v = facts.Get(name);
  if (!v) return std::nullopt;
  return v->value.get<double>();
}

// Node names per rewrite rule id, so six identical Resize findings read as one line.
std::map<std::string, std::vector<std::string>> RewritesByRule(
    const std::vector<NodeRemedies>& rewrites) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& fr : rewrites) out[fr.remedies.front().id].push_back(fr.node);
  return out;
}

ReportStep ScanStep(const DecisionReport& r) {
  ReportStep step{1, "Operator compatibility scan", {}};
  if (!r.scan) {
    step.findings.push_back(
        "No target given: the scan was skipped and target facts stay unknown "
        "(shipped targets: " +
        util::Join(r.target_names, ", ") + ").");
    return step;
  }
  const auto& s = *r.scan;
  step.findings.push_back(fmt::format(
      "{} nodes on {}: {} on the accelerator, {} on CPU fallback, "
      "{} unsupported ({} Constant nodes and {} nodes with a static value, such as shape "
      "arithmetic, are folded at conversion and not scanned).",
      s.nodes.size(), s.target, s.accelerator, s.cpu_fallback, s.unsupported, s.constants_skipped,
      s.static_folded));
  if (s.undecided > 0) {
    step.findings.back().insert(
        step.findings.back().find(" ("),
        fmt::format(", {} of them undecided until the input shape is pinned", s.undecided));
  }
  std::map<std::string, std::pair<int, std::string>> by_reason;  // "op placement" -> count, why
  for (const auto& n : s.nodes) {
    if (n.lowering) {
      // Named, so a reader can check the claim against the vendor's own words.
      auto& entry = by_reason[fmt::format("{} -> accelerator as {} through lowering {}", n.op,
                                          util::Join(n.lowering->becomes, "+"), n.lowering->id)];
      ++entry.first;
      entry.second = n.lowering->text + " (" + n.lowering->source + ")";
    }
    if (n.placement == Placement::kAccelerator) continue;
    std::string why = n.reason;
    if (!n.failures.empty()) {
      why = n.failures[0].text + " (" + n.failures[0].detail + "; " + n.failures[0].source + ")";
    }
    auto& entry = by_reason[n.op + " -> " + PlacementName(n.placement)];
    ++entry.first;
    if (entry.second.empty()) entry.second = why;
  }
  for (const auto& [key, value] : by_reason) {
    step.findings.push_back(fmt::format("{} x{}: {}", key, value.first, value.second));
  }
  for (const auto& f : s.findings) step.findings.push_back(f);
  return step;
}

ReportStep ImpactStep(const DecisionReport& r) {
  ReportStep step{2, "Impact of each missing op", {}};
  if (!r.scan) {
    step.findings.push_back("Needs a target.");
    return step;
  }
  if (r.remedies.empty()) step.findings.push_back("No unsupported node: nothing must be solved.");
  for (const auto& nr : r.remedies) {
    const Remedy& best = nr.remedies.front();
    step.findings.push_back(fmt::format(
        "{} ({}) is in the {}: {} -> {}{}", nr.node, nr.op,
        nr.in_backbone ? "backbone (must solve)" : "post-processing tail (strip to host)",
        best.kind, best.id.empty() ? best.text : best.id,
        nr.resolved_without_custom_op ? "" : " (custom operator needed)"));
  }
  for (const auto& [rule, nodes] : RewritesByRule(r.fallback_rewrites)) {
    step.findings.push_back(
        fmt::format("{} CPU-fallback node(s) would move to the accelerator with "
                    "rewrite {}: {}.",
                    nodes.size(), rule, util::Join(nodes, ", ")));
  }
  return step;
}

std::optional<double> EstimatedLatencyMs(const DecisionReport& r) {
  if (!r.target || !r.model_facts.total_macs || r.target->peak_macs_per_s <= 0) return std::nullopt;
  return 1000.0 * *r.model_facts.total_macs / (r.target->peak_macs_per_s * r.target->efficiency);
}

ReportStep PerformanceStep(const DecisionReport& r) {
  ReportStep step{3, "Performance baseline vs SLA", {}};
  auto estimate = EstimatedLatencyMs(r);
  if (!r.model_facts.total_macs) {
    step.findings.push_back(
        r.model_facts.dynamic_inputs.empty()
            ? "MACs unknown: some compute layers have no static shape (see the notes)."
            : "MACs unknown: pin the dynamic inputs' shapes to get a baseline.");
  } else if (!estimate) {
    step.findings.push_back(fmt::format("{} per inference; no target compute rate (no target).",
                                        Macs(*r.model_facts.total_macs)));
  } else {
    step.findings.push_back(fmt::format(
        "{} per inference; estimated {:.1f} ms on {} ({}), accelerator part only; {} CPU-fallback "
        "node(s) add transfer and CPU time. Measure on the board: this is an estimate.",
        Macs(*r.model_facts.total_macs), *estimate, r.target->name, r.target->compute_source,
        r.scan ? r.scan->cpu_fallback : 0));
  }
  auto latency = FactNumber(r.facts, "performance.latency_ms");
  auto fps = FactNumber(r.facts, "performance.fps");
  std::optional<double> budget;
  if (latency && *latency > 0) budget = *latency;
  if (fps && *fps > 0) budget = std::min(budget.value_or(1e18), 1000.0 / *fps);
  if (!budget) {
    step.findings.push_back("No SLA given (performance.fps / performance.latency_ms).");
  } else if (estimate) {
    double loss = (*estimate - *budget) / *budget;
    step.findings.push_back(fmt::format(
        "SLA budget {:.1f} ms per inference: the estimate {} it{}.", *budget,
        *estimate <= *budget ? "meets" : "misses",
        loss > 0.3 ? fmt::format(" by {:.0f}% (> 30%: custom operators for the bottleneck are "
                                 "justified if measurement confirms)",
                                 loss * 100)
                   : ""));
  }
  return step;
}

ReportStep BottleneckStep(const DecisionReport& r) {
  ReportStep step{4, "Bottleneck location", {}};
  const auto& costs = r.model_facts.macs_by_node;
  if (costs.empty()) {
    step.findings.push_back(
        "No MAC counts (no Conv/ConvTranspose/MatMul/Gemm with static shapes).");
    return step;
  }
  uint64_t total = 0;
  for (const auto& c : costs) total += c.macs;
  std::map<std::string, uint64_t> by_op;
  for (const auto& c : costs) by_op[c.op] += c.macs;
  std::vector<std::string> ops;
  for (const auto& [op, macs] : by_op) {
    ops.push_back(fmt::format("{} {:.0f}%", op, 100.0 * macs / total));
  }
  step.findings.push_back("MACs by op: " + util::Join(ops, ", ") + ".");
  for (size_t i = 0; i < std::min<size_t>(5, costs.size()); ++i) {
    step.findings.push_back(fmt::format("#{} {} ({}): {} ({:.1f}%)", i + 1, costs[i].name,
                                        costs[i].op, Macs(costs[i].macs),
                                        100.0 * costs[i].macs / total));
  }
  return step;
}

ReportStep CostStep(const DecisionReport& r) {
  ReportStep step{5, "Cost-benefit", {}};
  int custom_ops = 0;
  for (const auto& nr : r.remedies) custom_ops += !nr.resolved_without_custom_op;
  auto days = FactNumber(r.facts, "schedule.dev_days");
  auto rate = FactNumber(r.facts, "cost.day_rate");
  auto benefit = FactNumber(r.facts, "cost.benefit");
  step.findings.push_back(
      fmt::format("{} node(s) need a custom operator to function at all.", custom_ops));
  if (days && rate) {
    double cost = *days * *rate;
    std::string verdict = "no cost.benefit given to compare with";
    if (benefit) {
      verdict = cost <= *benefit
                    ? fmt::format("below the stated benefit {:.0f}: worth it", *benefit)
                    : fmt::format(
                          "above the stated benefit {:.0f}: not worth it "
                          "unless a function is otherwise unavailable",
                          *benefit);
    }
    step.findings.push_back(fmt::format("Custom-op cost = {:g} person-days x {:g} = {:.0f}, {}.",
                                        *days, *rate, cost, verdict));
  } else {
    step.findings.push_back(
        "Cost unknown: give schedule.dev_days and cost.day_rate (and "
        "cost.benefit) to compare.");
  }
  step.findings.push_back(
      "Write custom operators only when the measured performance loss exceeds "
      "30% or a function is otherwise unavailable.");
  return step;
}

std::vector<std::string> NextSteps(const DecisionReport& r) {
  std::vector<std::string> out;
  std::string model = r.model_name;
  if (!r.model_facts.dynamic_inputs.empty()) {
    out.push_back("Pin the dynamic inputs of " + model +
                  " (their input shapes, NAME:DIMS) and save the static model (infer-shapes).");
  }
  if (r.scan) {
    for (const auto& f : r.scan->findings) {
      if (f.find("opset") != std::string::npos) out.push_back(f);
    }
  }
  for (const auto& [rule, nodes] : RewritesByRule(r.fallback_rewrites)) {
    out.push_back(
        fmt::format("Apply rewrite {} to {} node(s) ({}) to keep them on the accelerator.", rule,
                    nodes.size(), util::Join(nodes, ", ")));
  }
  for (const auto& nr : r.remedies) {
    out.push_back(fmt::format("{} ({}): {}", nr.node, nr.op, nr.remedies.front().text));
  }
  if (r.memory && r.memory->fits && !*r.memory->fits) {
    out.push_back("Memory does not fit: quantize, prune, or pick a target with more RAM/flash.");
  }
  std::set<std::string> missing(r.verdict.missing.begin(), r.verdict.missing.end());
  if (!missing.empty()) {
    out.push_back("Supply the missing facts (" +
                  util::Join({missing.begin(), missing.end()}, ", ") +
                  ") in a project facts file or as fact options, and run decide again.");
  }
  if (r.verdict.verdict == Outcome::kOnnx) {
    out.push_back(
        "Convert with the target's toolkit and measure accuracy and latency on the board.");
  } else if (r.verdict.verdict == Outcome::kVerify) {
    out.push_back("Convert once and run on the target; decide again with measured figures.");
  } else {
    out.push_back(
        "Write custom operators only for the ops named above; keep the rest on the ONNX path.");
  }
  return out;
}

std::string OptionalBytes(const std::optional<uint64_t>& v) { return v ? Bytes(*v) : "unknown"; }

std::string FitWord(const std::optional<bool>& v) {
  return v ? (*v ? "fits" : "does NOT fit") : "unknown";
}

}  // namespace

DecisionReport Decide(const io::Model& model, const DecideOptions& options) {
  const auto& dir = options.rules_dir;
  FactCatalog catalog = FactCatalog::Load(dir / "decision" / "facts.json");
  DecisionTable table = LoadDecisionTable(JsonFile::Load(dir / "decision" / "table.json"), catalog);
  auto remedy_rules = LoadRemedies(JsonFile::Load(dir / "decision" / "remedies.json"));

  DecisionReport r;
  r.model_name = model.path.filename().string();
  r.target_names = TargetNames(dir);
  r.policy = table.policy;
  AnalyzedModel analyzed(model, options.input_shapes);
  r.model_facts = analyzed.facts();
  analyzed.AddFacts(catalog, r.facts);
  if (!options.target.empty()) {
    r.target = LoadTarget(dir, options.target);
    AddTargetFacts(catalog, *r.target, r.facts);
  }
  if (!options.facts_file.empty()) LoadUserFacts(options.facts_file, catalog, r.facts);
  for (const auto& f : options.flag_facts) r.facts.Set(catalog, f.name, f.value, f.flag);
  AddDerivedFacts(catalog, r.facts);

  if (r.target) {
    r.scan = ScanTarget(analyzed, *r.target);
    r.memory = FitMemory(r.model_facts, *r.target,
                         FactBytes(r.facts, "hardware.ram_bytes", r.target->ram_bytes),
                         FactBytes(r.facts, "hardware.flash_bytes", r.target->flash_bytes));
    r.remedies = ComputeRemedies(analyzed, *r.target, *r.scan, remedy_rules);
    r.fallback_rewrites = FallbackRewrites(analyzed, *r.scan, remedy_rules);
    AddScanFacts(catalog, *r.scan, r.remedies, *r.memory, r.facts);
  }
  for (const auto& d : table.dimensions) r.dimensions.push_back(EvaluateDimension(d, r.facts));
  r.verdict = Combine(table.policy, r.dimensions);
  r.steps = {ScanStep(r), ImpactStep(r), PerformanceStep(r), BottleneckStep(r), CostStep(r)};
  r.next_steps = NextSteps(r);
  return r;
}

nlohmann::json DecisionReport::ToJson() const {
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& d : dimensions) {
    nlohmann::json trace = nlohmann::json::array();
    for (const auto& t : d.trace) {
      trace.push_back({{"rule", t.rule}, {"result", t.result}, {"missing", t.missing}});
    }
    dims.push_back({{"id", d.id},
                    {"title", d.title},
                    {"kind", d.kind},
                    {"outcome", OutcomeName(d.outcome)},
                    {"rule", d.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.rule)},
                    {"reason", d.reason},
                    {"missing", d.missing},
                    {"trace", trace}});
  }
  nlohmann::json fact_json = nlohmann::json::object();
  for (const auto& [name, v] : facts.all())
    fact_json[name] = {{"value", v.value}, {"origin", v.origin}};
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& s : steps) {
    steps_json.push_back({{"step", s.number}, {"title", s.title}, {"findings", s.findings}});
  }
  nlohmann::json unsupported = nlohmann::json::array();
  if (scan) {
    // Named: a range-for over a member of a temporary reads it after it is destroyed.
    const nlohmann::json scan_json = ScanToJson(*scan);
    for (const auto& n : scan_json["nodes"]) {
      if (n["placement"] == "unsupported") unsupported.push_back(n);
    }
  }
  nlohmann::json histogram = model_facts.op_histogram;
  nlohmann::json heaviest = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(10, model_facts.macs_by_node.size()); ++i) {
    const auto& c = model_facts.macs_by_node[i];
    heaviest.push_back({{"node", c.name}, {"op", c.op}, {"macs", c.macs}});
  }
  nlohmann::json doc = {{"model", model_name},
                        {"target", target ? nlohmann::json(target->name) : nlohmann::json(nullptr)},
                        {"verdict", OutcomeName(verdict.verdict)},
                        {"verdict_rule", verdict.rule},
                        {"verdict_reason", verdict.reason},
                        {"leaning", verdict.leaning ? nlohmann::json(OutcomeName(*verdict.leaning))
                                                    : nlohmann::json(nullptr)},
                        {"leaning_reason", verdict.leaning_reason},
                        {"missing_facts", verdict.missing},
                        {"policy",
                         {{"id", policy.id},
                          {"hard", policy.hard},
                          {"cost", policy.cost},
                          {"description", policy.description}}},
                        {"dimensions", dims},
                        {"facts", fact_json},
                        {"op_histogram", histogram},
                        {"heaviest_nodes", heaviest},
                        {"unsupported", unsupported},
                        {"remedies", RemediesToJson(remedies)},
                        {"fallback_rewrites", RemediesToJson(fallback_rewrites)},
                        {"memory", memory ? MemoryToJson(*memory) : nlohmann::json(nullptr)},
                        {"steps", steps_json},
                        {"next_steps", next_steps}};
  if (scan) doc["scan"] = ScanToJson(*scan);
  if (target) {
    doc["target_profile"] = {{"name", target->name},
                             {"title", target->title},
                             {"sources", target->sources},
                             {"notes", target->notes}};
  }
  return doc;
}

std::string DecisionReport::ToMarkdown() const {
  std::string md = fmt::format("# Decision report: {}{}\n\n", model_name,
                               target ? " on " + target->name : std::string());
  md += fmt::format("**Verdict: `{}`**", OutcomeName(verdict.verdict));
  if (verdict.leaning) md += fmt::format(" (leaning `{}`)", OutcomeName(*verdict.leaning));
  md += fmt::format(" — {} _[{}]_\n\n", verdict.reason, verdict.rule);
  if (verdict.leaning) md += "Leaning: " + verdict.leaning_reason + "\n\n";
  md += "Policy: " + policy.description + "\n\n";
  md += "## Dimensions\n\n| Dimension | Kind | Outcome | Rule | Reason |\n|---|---|---|---|---|\n";
  for (const auto& d : dimensions) {
    md += fmt::format("| {} | {} | `{}` | {} | {} |\n", d.title, d.kind, OutcomeName(d.outcome),
                      d.rule.empty() ? "-" : d.rule, d.reason);
  }
  md += "\nRule trace (rules tried in order; `unknown` = a needed fact is missing):\n\n";
  for (const auto& d : dimensions) {
    std::vector<std::string> steps;
    for (const auto& t : d.trace) {
      steps.push_back(t.rule + ": " + t.result +
                      (t.missing.empty() ? "" : " (needs " + util::Join(t.missing, ", ") + ")"));
    }
    md += "- " + d.id + ": " + util::Join(steps, "; ") + "\n";
  }
  md += "\n## The five steps\n";
  for (const auto& s : steps) {
    md += fmt::format("\n### {}. {}\n\n", s.number, s.title);
    for (const auto& f : s.findings) md += "- " + f + "\n";
  }
  md += "\n## Unsupported nodes and remedies\n\n";
  if (remedies.empty()) md += target ? "None.\n" : "Needs a target.\n";
  for (const auto& nr : remedies) {
    md += fmt::format("- **{}** ({}, {}):\n", nr.node, nr.op,
                      nr.in_backbone ? "backbone" : "post-processing tail");
    for (const auto& r : nr.remedies) {
      md += fmt::format("  - {}{}: {}\n", r.kind, r.id.empty() ? "" : " `" + r.id + "`", r.text);
      if (r.kind == "custom-op") md += "    signature: `" + util::DumpJson(r.signature) + "`\n";
    }
  }
  md += "\n## Memory fit\n\n";
  if (!memory) {
    md += "Needs a target.\n";
  } else {
    md += fmt::format("- Weights: {} as stored, {} on the target vs usable flash {}: {}\n",
                      Bytes(memory->params_bytes), Bytes(memory->weight_bytes),
                      Bytes(memory->usable_flash), FitWord(memory->flash_fits));
    md += fmt::format("- Activation arena: {}{} vs usable RAM {}: {}\n",
                      OptionalBytes(memory->arena_bytes),
                      target && target->weights_in_ram ? " (+ weights, loaded to RAM)" : "",
                      Bytes(memory->usable_ram), FitWord(memory->ram_fits));
    for (const auto& n : memory->notes) md += "- " + n + "\n";
  }
  md += "\n## Facts\n\n| Fact | Value | Origin |\n|---|---|---|\n";
  for (const auto& [name, v] : facts.all()) {
    md += fmt::format("| {} | {} | {} |\n", name, facts.Format(name), v.origin);
  }
  if (!verdict.missing.empty()) {
    md += "\nMissing (shown, never guessed): " + util::Join(verdict.missing, ", ") + "\n";
  }
  if (target) {
    md += "\nTarget profile sources: ";
    std::vector<std::string> sources;
    for (const auto& s : target->sources) {
      sources.push_back(s["document"].get<std::string>() + " (" + s["toolkit"].get<std::string>() +
                        ")");
    }
    md += util::Join(sources, "; ") + "\n";
  }
  md += "\n## Next steps\n\n";
  for (size_t i = 0; i < next_steps.size(); ++i)
    md += fmt::format("{}. {}\n", i + 1, next_steps[i]);
  return md;
}

}  // namespace porttool::decide
