// port's report: the decision report on the ported model (DecideStage) extended with what port
// did automatically (the steps) and what is left to a person, as report.json, report.md and a
// self-contained report.html with the placement graph. Everything here is derived from the run's
// state without timings or paths, so the same inputs give the same bytes.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "lib/emit/graph_svg.h"
#include "lib/emit/report_html.h"
#include "lib/io/atomic_file.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/stages/decide.h"
#include "lib/stages/port_steps.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

std::string Db(double v) { return std::isfinite(v) ? fmt::format("{:.1f} dB", v) : "exact"; }

std::string BytesText(const nlohmann::json& bytes) {
  return bytes.is_number() ? util::FormatBytes(bytes.get<uint64_t>()) : "?";
}

nlohmann::json StepsJson(const std::vector<PortStep>& steps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : steps) {
    out.push_back(
        {{"id", s.id}, {"title", s.title}, {"outcome", s.outcome}, {"details", s.details}});
  }
  return out;
}

nlohmann::json AccuracyJson(const quant::AccuracyReport& a) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : a.outputs) {
    outputs.push_back({{"name", o.name},
                       {"sqnr_db", Num(o.sqnr_db)},
                       {"cosine", Num(o.cosine)},
                       {"max_abs", Num(o.max_abs)}});
  }
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : a.tasks) tasks.push_back(quant::TaskJson(t));
  return {{"samples", a.samples}, {"outputs", outputs}, {"tasks", tasks}};
}

// The float16 check of a float port on an fp16 target: random inputs, and the evaluation samples
// when given.
nlohmann::json Float16Json(const PortState& s) {
  if (!s.fp16) return nullptr;
  nlohmann::json outputs = nlohmann::json::array(), overflows = nlohmann::json::array();
  for (const auto& o : s.fp16->outputs) {
    outputs.push_back({{"name", o.name},
                       {"sqnr_db", Num(o.sqnr_db)},
                       {"cosine", Num(o.cosine)},
                       {"max_abs", Num(o.max_abs)},
                       {"finite", o.finite}});
  }
  for (const auto& o : s.fp16->overflows) {
    overflows.push_back({{"tensor", o.tensor}, {"node", o.node}, {"max_abs", Num(o.max_abs)}});
  }
  return {{"random_inputs", s.fp16->samples},
          {"outputs", outputs},
          {"overflows", overflows},
          {"evaluation", s.fp16->evaluation ? AccuracyJson(*s.fp16->evaluation) : nullptr}};
}

nlohmann::json QuantizationJson(const PortState& s) {
  if (!s.quant) return nullptr;
  const PortQuantization& q = *s.quant;
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [segment, file] : q.qdq_files) files[std::to_string(segment)] = file;
  return {{"table", "calibration.json"},
          {"method", q.table.method},
          {"per_channel", q.whole.final_qdq.per_channel},
          {"equalized", s.equalized},
          {"bias_correction", q.whole.final_qdq.bias_correction != nullptr},
          {"calibration_samples", q.whole.calibration_samples},
          {"tensors", q.table.tensors.size()},
          {"kept_float", q.kept_float},
          {"qdq_segments", files},
          {"accuracy", q.chain_accuracy ? AccuracyJson(*q.chain_accuracy) : nullptr},
          {"whole_model_accuracy",
           q.whole.accuracy ? AccuracyJson(*q.whole.accuracy) : nlohmann::json(nullptr)}};
}

nlohmann::json LeftJson(const std::vector<LeftItem>& left) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : left) {
    nlohmann::json j = {
        {"kind", item.kind}, {"op", item.op}, {"nodes", item.nodes}, {"text", item.text}};
    if (!item.package.empty()) j["package"] = item.package;
    if (!item.signature.is_null()) j["signature"] = item.signature;
    out.push_back(j);
  }
  return out;
}

// The estimate of the chosen partition, per segment (the cost model's figures, not measured).
std::vector<std::string> EstimateLines(const PortState& s) {
  std::vector<std::string> lines;
  if (!s.plan || !s.plan->partition) return lines;
  const auto& chosen = s.plan->partition->chosen;
  for (size_t i = 0; i < chosen.segments.size(); ++i) {
    const auto& e = chosen.segments[i];
    lines.push_back(fmt::format("segment {} ({}, {} nodes): {:.3f} ms estimated", i,
                                e.host ? "host" : "accelerator", e.nodes, e.total_ms()));
  }
  return lines;
}

// The converter's lowerings the accelerator nodes run through ("Gemm as Conv: 3 node(s)"), each
// with the source that documents it: a placement that rests on a lowering says so.
std::vector<std::string> LoweringLines(const PortState& s) {
  std::vector<std::string> lines;
  if (!s.scan) return lines;
  std::map<std::string, std::pair<const decide::Lowering*, int>> used;
  for (const auto& n : s.scan->scan.nodes) {
    if (!n.lowering) continue;
    auto& entry = used[n.lowering->id];
    entry.first = &*n.lowering;
    ++entry.second;
  }
  for (const auto& [id, entry] : used) {
    const decide::Lowering& l = *entry.first;
    lines.push_back(fmt::format("{} runs on the accelerator as {} ({} node(s), lowering {}): {}",
                                l.op, util::Join(l.becomes, ", "), entry.second, id, l.source));
  }
  return lines;
}

// ---- the placement graph ----------------------------------------------------------------------

emit::GraphSvg PlacementSvg(const PortState& s) {
  const SplitPlan& plan = *s.plan;
  const onnx::GraphProto& graph = plan.model.proto.graph();
  std::map<int, decide::Placement> placement;
  for (const auto& n : s.scan->scan.nodes) {
    if (n.parent.empty()) placement[n.index] = n.placement;
  }
  emit::PlacementGraph g;
  std::map<int, int> drawn;  // source node index -> drawn index
  std::map<std::string, int> producer;
  for (size_t si = 0; si < plan.split.segments.size(); ++si) {
    const ir::Segment& seg = plan.split.segments[si];
    bool host = seg.role == ir::SegmentRole::kHost;
    g.segments.push_back({static_cast<int>(si), host ? "host" : "accelerator",
                          fmt::format("segment {} · {}", si, host ? "host" : "accelerator")});
    for (int i : seg.nodes) {
      const onnx::NodeProto& node = graph.node(i);
      if (ir::IsConstantNode(node)) continue;
      emit::PlacedNode p;
      p.name = node.name().empty() ? fmt::format("#{}", i) : node.name();
      p.op = decide::OpKey(node);
      auto it = placement.find(i);
      p.placement = !host ? emit::Placement::kAccelerator
                    : it != placement.end() && it->second == decide::Placement::kUnsupported
                        ? emit::Placement::kUnsupported
                        : emit::Placement::kHost;
      p.segment = static_cast<int>(si);
      for (const auto& in : node.input()) {
        auto from = producer.find(in);
        if (from != producer.end()) p.inputs.push_back(from->second);
      }
      int index = static_cast<int>(g.nodes.size());
      for (const auto& out : node.output()) producer[out] = index;
      drawn[i] = index;
      g.nodes.push_back(std::move(p));
    }
  }
  for (const auto& b : plan.split.bridges) {
    auto from = producer.find(b.tensor);
    if (from == producer.end()) continue;
    for (size_t to = 0; to < g.nodes.size(); ++to) {
      const auto& inputs = g.nodes[to].inputs;
      if (g.nodes[to].segment != g.nodes[from->second].segment &&
          std::find(inputs.begin(), inputs.end(), from->second) != inputs.end()) {
        g.edge_labels[{from->second, static_cast<int>(to)}] =
            b.bytes ? util::FormatBytes(*b.bytes) : b.tensor;
      }
    }
  }
  return emit::RenderPlacementSvg(g);
}

// ---- tables shared by the markdown and the HTML -----------------------------------------------

emit::HtmlTable StepsTable(const std::vector<PortStep>& steps) {
  emit::HtmlTable t{"What port did", {"step", "outcome", "details"}, {}};
  for (const auto& s : steps) {
    t.rows.push_back({s.id, s.outcome, util::Join(s.details, "\n")});
  }
  return t;
}

emit::HtmlTable SegmentsTable(const PortState& s) {
  emit::HtmlTable t{"Segments", {"#", "file", "role", "nodes", "inputs", "outputs"}, {}};
  if (!s.plan) return t;
  const nlohmann::json& m = s.written.manifest;
  for (const auto& seg : m.value("segments", nlohmann::json::array())) {
    auto names = [](const nlohmann::json& list) {
      std::vector<std::string> out;
      for (const auto& t : list) {
        out.push_back(fmt::format("{} ({})", t["name"].get<std::string>(), BytesText(t["bytes"])));
      }
      return util::Join(out, ", ");
    };
    t.rows.push_back({seg["index"].dump(), seg["file"].get<std::string>(),
                      seg["role"].get<std::string>(), seg["nodes"].dump(), names(seg["inputs"]),
                      names(seg["outputs"])});
  }
  return t;
}

emit::HtmlTable BridgesTable(const PortState& s) {
  emit::HtmlTable t{"Bridges (tensors crossing a cut)", {"tensor", "bytes", "from", "to"}, {}};
  for (const auto& b : s.written.manifest.value("bridges", nlohmann::json::array())) {
    t.rows.push_back({b["tensor"].get<std::string>(), BytesText(b["bytes"]), b["producer"].dump(),
                      b["consumers"].dump()});
  }
  return t;
}

emit::HtmlTable AccuracyTable(const PortState& s) {
  emit::HtmlTable t{"Accuracy, int8 pipeline against the float model",
                    {"output", "SQNR", "cosine", "max abs"},
                    {}};
  if (!s.quant || !s.quant->chain_accuracy) return t;
  for (const auto& o : s.quant->chain_accuracy->outputs) {
    t.rows.push_back(
        {o.name, Db(o.sqnr_db), fmt::format("{:.6f}", o.cosine), fmt::format("{:.4g}", o.max_abs)});
  }
  return t;
}

// ---- the gates
// -----------------------------------------------------------------------------------

nlohmann::json GatesJson(const std::vector<Gate>& gates) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : gates) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : g.rows) {
      rows.push_back({{"what", r.what},
                      {"measured", r.measured},
                      {"needed", r.needed},
                      {"status", GateStatusName(r.status)}});
    }
    out.push_back({{"id", g.id},
                   {"title", g.title},
                   {"status", GateStatusName(g.status)},
                   {"blocking", g.blocking},
                   {"measured", g.measured},
                   {"needed", g.needed},
                   {"finding", g.finding},
                   {"rows", rows},
                   {"notes", g.notes},
                   {"figures", g.figures.is_null() ? nlohmann::json::object() : g.figures}});
  }
  return out;
}

emit::HtmlTable GatesTable(const std::vector<Gate>& gates) {
  emit::HtmlTable t{"", {"gate", "status", "measured", "needed"}, {}};
  for (const auto& g : gates) {
    std::string status = GateStatusName(g.status);
    if (g.status == GateStatus::kNotEvaluated && !g.blocking) status += " (does not block)";
    t.rows.push_back({g.id, status, g.measured, g.needed});
  }
  return t;
}

emit::HtmlTable GateRowsTable(const Gate& g) {
  emit::HtmlTable t{g.title, {"", "status", "measured", "needed"}, {}};
  for (const auto& r : g.rows) {
    t.rows.push_back({r.what, GateStatusName(r.status), r.measured, r.needed});
  }
  return t;
}

std::string MarkdownTable(const emit::HtmlTable& t) {
  if (t.rows.empty()) return "";
  std::string md = "| " + util::Join(t.headers, " | ") + " |\n|";
  for (size_t i = 0; i < t.headers.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (std::string c : row) {
      for (auto& ch : c) ch = ch == '\n' ? ' ' : ch == '|' ? '/' : ch;
      cells.push_back(c);
    }
    md += "| " + util::Join(cells, " | ") + " |\n";
  }
  return md + "\n";
}

std::string QuantizationText(const PortState& s, const std::vector<PortStep>& steps) {
  if (s.quant) {
    return fmt::format(
        "Calibrated with {} on {} sample(s); table in calibration.json; {} node(s) "
        "kept float.",
        s.quant->table.method, s.quant->whole.calibration_samples, s.quant->kept_float.size());
  }
  for (const auto& st : steps) {
    if (st.id == "quantize" && !st.details.empty()) return st.details.front();
  }
  return "Not calibrated.";
}

// What is left to a person: the items port found (custom operators, host ops) and every gate
// that does not pass; "Nothing" only when the verdict is ready and nothing was found.
std::vector<std::string> LeftItems(const PortState& s) {
  std::vector<std::string> items;
  for (const auto& item : s.left) items.push_back(item.text);
  for (const auto& g : s.verdict.gates) {
    if (g.status == GateStatus::kFail) items.push_back(g.id + " gate: " + g.finding);
  }
  if (items.empty() && s.verdict.status == "ready") {
    items.push_back("Nothing: every gate passes and every op runs on the target's accelerator.");
  }
  return items;
}

// The fit gate as bars: each segment's weights and arena, and the totals, against the budgets.
emit::HtmlSection MemorySection(const PortState& s) {
  emit::HtmlSection section{"Memory", {}, {}, {}, {}};
  for (const auto& g : s.verdict.gates) {
    if (g.id != "fit") continue;
    const nlohmann::json& f = g.figures;
    if (!f.contains("usable_ram_bytes")) {
      section.paragraphs.push_back(g.measured.empty() ? g.finding
                                                      : g.measured + ". " + g.notes.front());
      return section;
    }
    const double flash = f["usable_flash_bytes"].get<double>(),
                 ram = f["usable_ram_bytes"].get<double>();
    auto bar = [&](const std::string& label, double value, double limit, const char* budget) {
      section.bars.push_back({label, value, limit,
                              fmt::format("{} of {} usable {}", util::FormatBytes(uint64_t(value)),
                                          util::FormatBytes(uint64_t(limit)), budget)});
    };
    for (const auto& seg : f.value("segments", nlohmann::json::array())) {
      std::string name = fmt::format("segment {} ({})", seg["index"].get<int>(),
                                     seg["arithmetic"].get<std::string>());
      bar(name + " weights", seg["weight_bytes"].get<double>(), flash, "flash");
      bar(name + " arena", seg["arena_bytes"].get<double>(), ram, "RAM");
    }
    bar("bridges", f["bridge_bytes"].get<double>(), ram, "RAM");
    bar("total weights", f["weight_bytes"].get<double>(), flash, "flash");
    bar("total RAM", f["ram_bytes"].get<double>(), ram, "RAM");
    section.paragraphs.push_back(fmt::format("{}: {}", GateStatusName(g.status), g.needed));
    section.tables.push_back(GateRowsTable(g));
    for (const auto& n : g.notes) section.items.push_back(n);
  }
  return section;
}

}  // namespace

nlohmann::json PortReportJson(const PortState& s, const std::vector<PortStep>& steps) {
  const PortVerdict& v = s.verdict;
  nlohmann::json pins = nlohmann::json::object();
  for (const auto& [name, dims] : s.pins) pins[name] = dims;
  return {{"format", "porttool-port-report/1"},
          {"source", {{"file", s.model_file}, {"sha256", s.source_sha256}}},
          {"target", {{"name", s.target.name}, {"title", s.target.title}}},
          {"input_shapes", pins},
          {"input_values", s.values.empty() ? "" : shape::InputValuesText(s.values)},
          {"status", v.status},
          {"verdict", {{"text", v.text}, {"kind", v.kind}}},
          {"gates", GatesJson(v.gates)},
          {"steps", StepsJson(steps)},
          {"pipeline", "pipeline.json"},
          {"segments", s.written.manifest.value("segments", nlohmann::json::array())},
          {"bridges", s.written.manifest.value("bridges", nlohmann::json::array())},
          {"estimate", EstimateLines(s)},
          {"lowerings", LoweringLines(s)},
          {"quantization", QuantizationJson(s)},
          {"float16", Float16Json(s)},
          {"headers", s.headers},
          {"runners", s.runners},
          {"left", LeftJson(s.left)},
          {"decision", s.decision ? s.decision->ToJson() : nlohmann::json(nullptr)}};
}

std::string PortReportMarkdown(const PortState& s, const std::vector<PortStep>& steps) {
  std::string md = fmt::format("# porttool port: {} → {}\n\n**{}**\n\n", s.model_file,
                               s.target.name, s.verdict.text);
  md += "## Gates\n\n" + MarkdownTable(GatesTable(s.verdict.gates));
  for (const auto& g : s.verdict.gates) {
    if (!g.finding.empty()) md += fmt::format("- **{}**: {}\n", g.id, g.finding);
  }
  md += "\n";
  for (const auto& g : s.verdict.gates) {
    if (g.rows.empty()) continue;
    md += fmt::format("### {}: {}\n\n", g.id, g.title) + MarkdownTable(GateRowsTable(g));
    for (const auto& n : g.notes) md += "- " + n + "\n";
    if (!g.notes.empty()) md += "\n";
  }
  md += "## What port did\n\n" + MarkdownTable(StepsTable(steps));
  md += "## Segments\n\n" + MarkdownTable(SegmentsTable(s)) + MarkdownTable(BridgesTable(s));
  for (const auto& line : EstimateLines(s)) md += "- " + line + "\n";
  for (const auto& line : LoweringLines(s)) md += "- " + line + "\n";
  md += "\n## Quantization\n\n" + QuantizationText(s, steps) + "\n\n" +
        MarkdownTable(AccuracyTable(s));
  md += "## What is left\n\n";
  for (const auto& item : LeftItems(s)) md += "- " + item + "\n";
  md += "\n---\n\n";
  if (s.decision) md += s.decision->ToMarkdown();
  return md;
}

std::string PortReportHtml(const PortState& s, const std::vector<PortStep>& steps) {
  emit::HtmlReport page;
  page.title = fmt::format("porttool port: {} → {}", s.model_file, s.target.name);
  page.verdict = s.verdict.text;
  page.verdict_kind = s.verdict.kind;
  page.verdict_details = {fmt::format("target: {} ({})", s.target.name, s.target.title)};
  std::vector<std::string> findings;
  for (const auto& g : s.verdict.gates) {
    if (!g.finding.empty()) findings.push_back(g.id + ": " + g.finding);
  }
  page.lead.push_back({"Gates", {}, {}, {GatesTable(s.verdict.gates)}, findings});
  std::vector<emit::HtmlTable> gate_tables;
  std::vector<std::string> gate_notes;
  for (const auto& g : s.verdict.gates) {
    if (g.id != "fit") gate_tables.push_back(GateRowsTable(g));
    for (const auto& n : g.notes) gate_notes.push_back(g.id + ": " + n);
  }
  page.lead.push_back(MemorySection(s));
  if (s.plan && s.scan) page.graph = PlacementSvg(s);
  page.sections.push_back({"Gate details", {}, {}, gate_tables, gate_notes});
  page.sections.push_back(
      {"Segments", EstimateLines(s), {}, {SegmentsTable(s), BridgesTable(s)}, LoweringLines(s)});
  page.sections.push_back({"What port did", {}, {}, {StepsTable(steps)}, {}});
  page.sections.push_back(
      {"Quantization", {QuantizationText(s, steps)}, {}, {AccuracyTable(s)}, {}});
  page.sections.push_back({"What is left", {}, {}, {}, LeftItems(s)});
  if (s.decision) {
    page.sections.push_back(
        {"Decision report",
         {fmt::format("Verdict: {} — {}", decide::OutcomeName(s.decision->verdict.verdict),
                      s.decision->verdict.reason)},
         {},
         {},
         s.decision->next_steps});
  }
  return emit::RenderReportHtml(page);
}

void ReportStep(PortState& s, PortStep& step, const std::vector<PortStep>& steps) {
  decide::DecideOptions d;
  d.rules_dir = s.options.rules_dir;
  d.target = s.options.target;
  d.facts_file = s.options.facts_file;
  d.flag_facts = s.options.flag_facts;
  s.decision = DecideStage(s.model, d);
  step.details.push_back(fmt::format("decision: {} ({})",
                                     decide::OutcomeName(s.decision->verdict.verdict),
                                     s.decision->verdict.reason));
  s.report_json = PortReportJson(s, steps);
  io::WriteFileAtomic(s.dir / "report.json", util::DumpJson(s.report_json, 2) + "\n");
  io::WriteFileAtomic(s.dir / "report.md", PortReportMarkdown(s, steps));
  io::WriteFileAtomic(s.dir / "report.html", PortReportHtml(s, steps));
  step.details.push_back("wrote report.md, report.json and report.html");
}

}  // namespace porttool::stages
