#include "lib/decide/scan.h"

#include <fmt/format.h>

#include <map>

#include "lib/ir/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/util/strings.h"

namespace porttool::decide {
namespace {

// Runs constraints; failures and unverified checks are appended. True when all passed.
bool RunConstraints(const std::vector<Constraint>& constraints, const AnalyzedModel& model,
                    int index, NodeScan& out) {
  bool ok = true;
  for (const auto& c : constraints) {
    CheckResult r = RunCheck(c.check, model, index);
    if (r.status == CheckResult::Status::kFail) {
      out.failures.push_back({c.id, c.text, c.source, r.detail});
      ok = false;
    } else if (r.status == CheckResult::Status::kUnverified) {
      out.unverified.push_back(c.id + ": " + r.detail);
    }
  }
  return ok;
}

const std::vector<Constraint>& ConstraintsFor(
    const std::map<std::string, std::vector<Constraint>>& table, const std::string& op) {
  static const std::vector<Constraint> kNone;
  auto it = table.find(op);
  return it == table.end() ? kNone : it->second;
}

// Nodes inside If/Loop/Scan bodies run where their op can run; their constraint checks need
// main-graph shapes and constants, so they are listed as not verified instead of being run.
// `path` is a copy: the caller passes the name of an element of `out`, which push_back moves.
void ScanSubgraphs(const onnx::NodeProto& parent, const std::string path, int index,
                   const TargetProfile& t, std::vector<NodeScan>& out) {
  for (const auto& attr : parent.attribute()) {
    std::vector<const onnx::GraphProto*> bodies;
    if (attr.has_g()) bodies.push_back(&attr.g());
    for (const auto& g : attr.graphs()) bodies.push_back(&g);
    for (const auto* body : bodies) {
      for (int i = 0; i < body->node_size(); ++i) {
        const auto& node = body->node(i);
        if (node.op_type() == "Constant" && node.domain().empty()) continue;
        NodeScan s;
        s.index = index;
        s.name = path + "/" +
                 (node.name().empty() ? attr.name() + "#" + std::to_string(i) : node.name());
        s.parent = path.substr(0, path.find('/'));
        s.op = OpKey(node);
        if (t.unsupported_ops.count(s.op)) {
          s.placement = Placement::kUnsupported;
          s.reason = t.unsupported_reason;
        } else if (t.AcceleratorHas(s.op)) {
          if (!t.generic_constraints.empty() || t.op_constraints.count(s.op)) {
            s.unverified.push_back("inside a subgraph: accelerator constraints not checked");
          }
        } else if (t.FallbackHas(s.op)) {
          s.placement = Placement::kCpuFallback;
          s.reason = "not an accelerator op on this target (inside a subgraph";
          for (const auto& l : t.lowerings) {
            // Lowering conditions read main-graph shapes and constants, as constraints do.
            if (l.op == s.op) s.reason += "; lowering " + l.id + " not checked there";
          }
          s.reason += ")";
        } else {
          s.placement = Placement::kUnsupported;
          s.reason = "not an accelerator op on this target and no CPU fallback for it";
        }
        out.push_back(s);
        ScanSubgraphs(node, s.name, index, t, out);
      }
    }
  }
}

// The first lowering of the node's op whose conditions all pass, or nullptr; `not_applied`
// collects why the others did not (an unverifiable condition does not hold: placing a node on
// the accelerator on an unknown would be a pass for something not checked).
const Lowering* ApplicableLowering(const AnalyzedModel& model, const TargetProfile& t, int index,
                                   NodeScan& s, std::vector<std::string>& not_applied) {
  for (const auto& l : t.lowerings) {
    if (l.op != s.op) continue;
    std::string why;
    for (const auto& condition : l.conditions) {
      CheckResult r = RunCheck(condition, model, index);
      if (r.status == CheckResult::Status::kPass) continue;
      why = r.status == CheckResult::Status::kFail ? r.detail : "not verified: " + r.detail;
      if (r.status == CheckResult::Status::kUnverified) {
        s.unverified.push_back(l.id + ": " + r.detail + " (lowering not applied)");
      }
      break;
    }
    if (why.empty()) return &l;
    not_applied.push_back(
        fmt::format("lowering {} to {} does not apply: {}", l.id, util::Join(l.becomes, "+"), why));
  }
  return nullptr;
}

// "fails accelerator constraint rknn.resize.coord (coordinate_transformation_mode is
// \"asymmetric\")": which constraint, and what the node has, not just that one failed.
std::string FailedConstraintsText(const std::vector<ConstraintFailure>& failures) {
  std::vector<std::string> parts;
  for (const auto& f : failures) {
    parts.push_back(f.detail.empty() ? f.id : f.id + " (" + f.detail + ")");
  }
  if (parts.empty()) return "fails accelerator constraint(s)";
  return fmt::format("fails accelerator constraint{} {}", parts.size() == 1 ? "" : "s",
                     util::Join(parts, "; "));
}

std::string WithLoweringNotes(std::string reason, const std::vector<std::string>& not_applied) {
  return not_applied.empty() ? reason : reason + " (" + util::Join(not_applied, "; ") + ")";
}

NodeScan ScanNode(const AnalyzedModel& model, const TargetProfile& t, int index) {
  const auto& node = model.graph().node(index);
  NodeScan s;
  s.index = index;
  s.name = ir::NodeLabel(node, index);
  s.op = OpKey(node);
  s.in_backbone = model.FeedsComputeLayer(index);
  if (t.unsupported_ops.count(s.op)) {
    s.placement = Placement::kUnsupported;
    s.reason = t.unsupported_reason;
    return s;
  }
  // The converter rewrites before it places: a lowering that applies decides, even for an op the
  // accelerator also runs under its own name (rknn-toolkit2 turns MatMul with a constant B into
  // a Convolution rather than its exMatMul).
  std::vector<std::string> not_applied;
  const Lowering* lowering = ApplicableLowering(model, t, index, s, not_applied);
  if (lowering || t.AcceleratorHas(s.op)) {
    bool generic_ok = RunConstraints(t.generic_constraints, model, index, s);
    bool specific_ok =
        lowering || RunConstraints(ConstraintsFor(t.op_constraints, s.op), model, index, s);
    if (generic_ok && specific_ok) {
      if (lowering) s.lowering = *lowering;
      return s;
    }
    s.reason = WithLoweringNotes(FailedConstraintsText(s.failures), not_applied);
  } else {
    s.reason = WithLoweringNotes("not an accelerator op on this target", not_applied);
  }
  if (t.FallbackHas(s.op)) {
    NodeScan cpu;
    if (RunConstraints(ConstraintsFor(t.cpu_constraints, s.op), model, index, cpu)) {
      s.placement = Placement::kCpuFallback;
      s.unverified.insert(s.unverified.end(), cpu.unverified.begin(), cpu.unverified.end());
      return s;
    }
    s.failures.insert(s.failures.end(), cpu.failures.begin(), cpu.failures.end());
    s.reason += "; the CPU fallback's constraints fail too";
  } else if (t.fallback == TargetProfile::Fallback::kNone) {
    s.reason += "; the target has no CPU fallback";
  } else {
    s.reason += t.fallback == TargetProfile::Fallback::kList
                    ? "; not in the target's CPU-fallback op list"
                    : "; no kernel for this domain on the target";
  }
  s.placement = Placement::kUnsupported;
  return s;
}

// One line per lowering used: which nodes the converter rewrites, into what, and why we say so.
std::string LoweringsText(const TargetScan& scan) {
  constexpr size_t kNamesShown = 5;
  std::map<std::string, std::pair<const Lowering*, std::vector<std::string>>> by_id;
  for (const auto& s : scan.nodes) {
    if (!s.lowering) continue;
    auto& entry = by_id[s.lowering->id];
    entry.first = &*s.lowering;
    entry.second.push_back(s.name.empty() ? "#" + std::to_string(s.index) : s.name);
  }
  std::string out;
  for (const auto& [id, entry] : by_id) {
    const auto& [lowering, names] = entry;
    out += fmt::format("  {:<12} {} {} node(s) as {} via {}: {}\n      {} [{}]\n", "lowered",
                       names.size(), lowering->op, util::Join(lowering->becomes, "+"), id,
                       util::JoinFirst(names, kNamesShown), lowering->text, lowering->source);
  }
  return out;
}

// What the scan could not decide, by op, and what decides it.
std::string UndecidedFinding(const AnalyzedModel& model, const TargetScan& scan) {
  std::map<std::string, int> by_op;
  std::string example;
  for (const auto& s : scan.nodes) {
    if (!s.undecided) continue;
    ++by_op[s.op];
    if (example.empty()) example = s.unverified.front();
  }
  std::vector<std::string> ops;
  for (const auto& [op, n] : by_op) ops.push_back(fmt::format("{} x{}", op, n));
  return fmt::format(
      "Could not decide where {} node(s) run on {} ({}): their checks need static shapes and the "
      "input dims {} are not pinned (e.g. {}); pin the input shape to decide. They are counted "
      "at their op's placement until then, and are not missing kernels.",
      scan.undecided, scan.target, util::Join(ops, ", "),
      util::Join(model.facts().dynamic_inputs, ", "), example);
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.0f}%", 100.0 * part / whole) : "-";
}

}  // namespace

std::string PlacementName(Placement p) {
  switch (p) {
    case Placement::kAccelerator:
      return "accelerator";
    case Placement::kCpuFallback:
      return "cpu-fallback";
    case Placement::kUnsupported:
      return "unsupported";
  }
  return "?";
}

TargetScan ScanTarget(const AnalyzedModel& model, const TargetProfile& t) {
  TargetScan scan;
  scan.target = t.name;
  const auto& g = model.graph();
  for (int i = 0; i < g.node_size(); ++i) {
    if (g.node(i).op_type() == "Constant" && g.node(i).domain().empty()) {
      ++scan.constants_skipped;
      continue;
    }
    if (model.IsStaticValue(i)) {
      ++scan.static_folded;
      continue;
    }
    scan.nodes.push_back(ScanNode(model, t, i));
    ScanSubgraphs(g.node(i), scan.nodes.back().name, i, t, scan.nodes);
  }
  const bool pinned = model.facts().dynamic_inputs.empty();
  for (auto& s : scan.nodes) {
    s.undecided = !pinned && !s.unverified.empty() && s.placement != Placement::kUnsupported;
    scan.accelerator += s.placement == Placement::kAccelerator;
    scan.cpu_fallback += s.placement == Placement::kCpuFallback;
    scan.unsupported += s.placement == Placement::kUnsupported;
    scan.lowered += s.lowering.has_value();
    scan.undecided += s.undecided;
  }
  if (scan.undecided > 0) scan.findings.push_back(UndecidedFinding(model, scan));
  int64_t opset = model.facts().opset;
  if (opset < t.opset_min || opset > t.opset_max) {
    scan.findings.push_back(fmt::format(
        "Model opset {} is outside the target's supported range {}-{}: convert it first "
        "(onnx.version_converter to opset {}).",
        opset, t.opset_min, t.opset_max, opset < t.opset_min ? t.opset_min : t.opset_max));
  }
  if (!model.facts().dynamic_inputs.empty() && t.dynamic_support != "full") {
    scan.findings.push_back(fmt::format(
        "Dynamic input dims {} but the target's support is '{}': "
        "{} Pin their input shapes.",
        util::Join(model.facts().dynamic_inputs, ", "), t.dynamic_support, t.dynamic_text));
  }
  return scan;
}

std::vector<bool> HostNodes(const AnalyzedModel& model, const TargetScan& scan) {
  std::vector<bool> host(model.graph().node_size(), false);
  // A body node that cannot run on the accelerator takes its If/Loop/Scan to the host with it.
  for (const auto& s : scan.nodes) {
    if (s.placement != Placement::kAccelerator) host[s.index] = true;
  }
  return host;
}

MemoryFit FitMemory(const ModelFacts& facts, const TargetProfile& t, uint64_t ram_bytes,
                    uint64_t flash_bytes) {
  MemoryFit m;
  m.params_bytes = facts.params_bytes;
  // Float32 weights and activations shrink when the target stores them narrower.
  auto target_size = [](const std::string& dtype) {
    auto id = ir::DtypeFromName(dtype);
    return id ? ir::DtypeSize(*id) : size_t{4};
  };
  size_t weight_size = target_size(t.weight_dtype), act_size = target_size(t.activation_dtype);
  m.weight_bytes = facts.params_bytes * std::min<size_t>(weight_size, 4) / 4;
  if (weight_size < 4) {
    m.notes.push_back(
        fmt::format("Weights counted as {} ({} of the float32 size) because the "
                    "target stores {} weights.",
                    util::FormatBytes(m.weight_bytes), Percent(weight_size, 4), t.weight_dtype));
  }
  if (facts.peak_activation_bytes) {
    m.arena_bytes = *facts.peak_activation_bytes * std::min<size_t>(act_size, 4) / 4;
  } else {
    m.notes.push_back("Activation arena unknown: " +
                      (facts.peak_activation_note.empty() ? std::string("no static shapes")
                                                          : facts.peak_activation_note) +
                      (facts.dynamic_inputs.empty() ? "." : " (pin the dynamic inputs' shapes)."));
  }
  m.usable_ram = static_cast<uint64_t>(ram_bytes * t.usable_fraction);
  m.usable_flash = static_cast<uint64_t>(flash_bytes * t.usable_fraction);
  m.flash_fits = m.weight_bytes <= m.usable_flash;
  if (m.arena_bytes) {
    uint64_t ram_need = *m.arena_bytes + (t.weights_in_ram ? m.weight_bytes : 0);
    m.ram_fits = ram_need <= m.usable_ram;
    m.fits = *m.flash_fits && *m.ram_fits;
    auto left = [](uint64_t need, uint64_t usable) {
      return usable ? 100.0 * (double(usable) - double(need)) / double(usable) : -100.0;
    };
    m.headroom_pct = std::min(left(m.weight_bytes, m.usable_flash), left(ram_need, m.usable_ram));
  } else if (!*m.flash_fits) {
    m.fits = false;
  }
  return m;
}

TargetCheck CheckTarget(const AnalyzedModel& model, const TargetProfile& target) {
  TargetCheck c;
  c.scan = ScanTarget(model, target);
  c.memory = FitMemory(model.facts(), target, target.ram_bytes, target.flash_bytes);
  c.ok = c.scan.unsupported == 0 && c.memory.fits.value_or(true);
  return c;
}

TargetCheck CheckModelOnTarget(const io::Model& model, const TargetProfile& target,
                               const shape::InputShapes& shapes) {
  return CheckTarget(AnalyzedModel(model, shapes), target);
}

std::vector<bool> HostNodesForTarget(const io::Model& model, const TargetProfile& target,
                                     const shape::InputShapes& shapes) {
  AnalyzedModel analyzed(model, shapes);
  return HostNodes(analyzed, ScanTarget(analyzed, target));
}

void AddTargetFindings(const TargetCheck& c, analysis::CheckReport& report) {
  for (const auto& s : c.scan.nodes) {
    if (s.placement != Placement::kUnsupported) continue;
    report.Add({analysis::Severity::kError, "target-unsupported", s.name, "",
                fmt::format("node '{}' ({}) cannot run on target {}: {}", s.name, s.op,
                            c.scan.target, s.reason),
                "cut the graph there and run that part on the host (split at node '" + s.name +
                    "'), rewrite it with supported ops, or write a custom operator"});
  }
  if (c.memory.fits.value_or(true)) return;
  report.Add({analysis::Severity::kError, "target-memory", "", "",
              fmt::format("the model does not fit target {}: weights {} (usable flash {}), "
                          "arena {} (usable RAM {})",
                          c.scan.target, util::FormatBytes(c.memory.weight_bytes),
                          util::FormatBytes(c.memory.usable_flash),
                          c.memory.arena_bytes ? util::FormatBytes(*c.memory.arena_bytes) : "?",
                          util::FormatBytes(c.memory.usable_ram)),
              "shrink the model (INT8, pruning, a smaller input) or pick a larger target"});
}

nlohmann::json ScanToJson(const TargetScan& scan) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& s : scan.nodes) {
    nlohmann::json n = {{"index", s.index},
                        {"name", s.name},
                        {"op", s.op},
                        {"placement", PlacementName(s.placement)}};
    if (!s.parent.empty()) n["parent"] = s.parent;
    if (!s.reason.empty()) n["reason"] = s.reason;
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& f : s.failures) {
      failures.push_back(
          {{"constraint", f.id}, {"text", f.text}, {"source", f.source}, {"detail", f.detail}});
    }
    if (!failures.empty()) n["failed_constraints"] = failures;
    if (!s.unverified.empty()) n["unverified"] = s.unverified;
    if (s.undecided) n["undecided"] = true;
    if (s.lowering) {
      n["lowering"] = {{"id", s.lowering->id},
                       {"becomes", s.lowering->becomes},
                       {"text", s.lowering->text},
                       {"source", s.lowering->source}};
    }
    n["in_backbone"] = s.in_backbone;
    nodes.push_back(n);
  }
  nlohmann::json doc = {{"target", scan.target},
                        {"counts",
                         {{"accelerator", scan.accelerator},
                          {"cpu_fallback", scan.cpu_fallback},
                          {"unsupported", scan.unsupported},
                          {"lowered", scan.lowered},
                          {"constants_skipped", scan.constants_skipped},
                          {"static_folded", scan.static_folded}}},
                        {"findings", scan.findings},
                        {"nodes", nodes}};
  // Only when there is any: a pinned model's report stays as it was.
  if (scan.undecided > 0) doc["counts"]["undecided"] = scan.undecided;
  return doc;
}

nlohmann::json MemoryToJson(const MemoryFit& m) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"params_bytes", m.params_bytes},
          {"weight_bytes", m.weight_bytes},
          {"arena_bytes", opt(m.arena_bytes)},
          {"usable_ram_bytes", m.usable_ram},
          {"usable_flash_bytes", m.usable_flash},
          {"flash_fits", opt(m.flash_fits)},
          {"ram_fits", opt(m.ram_fits)},
          {"fits", opt(m.fits)},
          {"notes", m.notes}};
}

nlohmann::json TargetCheckToJson(const TargetCheck& c) {
  return {{"ok", c.ok}, {"scan", ScanToJson(c.scan)}, {"memory", MemoryToJson(c.memory)}};
}

std::string TargetCheckToText(const TargetCheck& c) {
  std::string out = fmt::format(
      "target {}: {} on accelerator{}, {} on CPU fallback, {} unsupported "
      "({} Constant and {} static-value nodes folded)\n",
      c.scan.target, c.scan.accelerator,
      c.scan.lowered ? fmt::format(" ({} through the converter's lowerings)", c.scan.lowered) : "",
      c.scan.cpu_fallback, c.scan.unsupported, c.scan.constants_skipped, c.scan.static_folded);
  for (const auto& f : c.scan.findings) out += "  finding: " + f + "\n";
  out += LoweringsText(c.scan);
  for (const auto& s : c.scan.nodes) {
    if (s.placement == Placement::kAccelerator) continue;
    out += fmt::format("  {:<12} {}: {}\n", PlacementName(s.placement),
                       ir::LabelWithOp(s.name, s.op), s.reason);
    for (const auto& f : s.failures) {
      out += fmt::format("      {} {} [{}; {}]\n", f.id, f.text, f.detail, f.source);
    }
  }
  const auto& m = c.memory;
  auto fit = [](const std::optional<bool>& v) {
    return v ? (*v ? "fits" : "DOES NOT FIT") : "unknown";
  };
  out += fmt::format(
      "  memory: weights {} vs usable flash {} ({}); arena {} vs usable RAM {} ({})\n",
      util::FormatBytes(m.weight_bytes), util::FormatBytes(m.usable_flash), fit(m.flash_fits),
      m.arena_bytes ? util::FormatBytes(*m.arena_bytes) : std::string("unknown"),
      util::FormatBytes(m.usable_ram), fit(m.ram_fits));
  for (const auto& n : m.notes) out += "      " + n + "\n";
  return out;
}

}  // namespace porttool::decide
