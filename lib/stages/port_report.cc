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
  return {{"samples", a.samples}, {"outputs", outputs}};
}

nlohmann::json QuantizationJson(const PortState& s) {
  if (!s.quant) return nullptr;
  const PortQuantization& q = *s.quant;
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [segment, file] : q.qdq_files) files[std::to_string(segment)] = file;
  return {{"table", "calibration.json"},
          {"method", q.table.method},
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

}  // namespace

std::pair<std::string, std::string> PortVerdict(const PortState& s) {
  if (!s.plan) return {"", "fail"};
  int accel = 0, host = 0;
  for (const auto& seg : s.plan->split.segments) {
    (seg.role == ir::SegmentRole::kHost ? host : accel)++;
  }
  int custom = 0;
  std::vector<std::string> ops;
  for (const auto& item : s.left) {
    if (item.kind == "custom-op") {
      ++custom;
      ops.push_back(item.op);
    }
  }
  std::string precision = "float";
  if (s.quant && s.quant->qdq_files.empty()) {
    precision = "float (no accelerator segment to quantize)";
  } else if (s.quant && s.quant->chain_accuracy) {
    double worst = INFINITY;
    for (const auto& o : s.quant->chain_accuracy->outputs) worst = std::min(worst, o.sqnr_db);
    precision = fmt::format("int8, worst output {} end to end", Db(worst));
  } else if (s.quant) {
    precision = "int8";
  }
  if (custom > 0) {
    return {fmt::format("work left: {} custom operator(s) to write ({}); {} accelerator and {} "
                        "host segment(s), {}",
                        custom, util::Join(ops, ", "), accel, host, precision),
            "warn"};
  }
  if (accel == 0) {
    return {fmt::format("host only: the whole model runs on the CPU of {} (the accelerator cannot "
                        "run some ops, and the cost model found the rest not worth the "
                        "transfers), {}",
                        s.target.name, precision),
            "warn"};
  }
  if (host > 0) {
    return {
        fmt::format("ready, with host segments: {} accelerator and {} host segment(s), the host "
                    "ones on the target's CPU, {}",
                    accel, host, precision),
        "warn"};
  }
  return {fmt::format("ready: one accelerator segment runs the whole model on {}, {}",
                      s.target.name, precision),
          "ok"};
}

nlohmann::json PortReportJson(const PortState& s, const std::vector<PortStep>& steps) {
  auto [verdict, kind] = PortVerdict(s);
  nlohmann::json pins = nlohmann::json::object();
  for (const auto& [name, dims] : s.pins) pins[name] = dims;
  return {{"format", "porttool-port-report/1"},
          {"source", {{"file", s.model_file}, {"sha256", s.source_sha256}}},
          {"target", {{"name", s.target.name}, {"title", s.target.title}}},
          {"input_shapes", pins},
          {"verdict", {{"text", verdict}, {"kind", kind}}},
          {"steps", StepsJson(steps)},
          {"pipeline", "pipeline.json"},
          {"segments", s.written.manifest.value("segments", nlohmann::json::array())},
          {"bridges", s.written.manifest.value("bridges", nlohmann::json::array())},
          {"estimate", EstimateLines(s)},
          {"quantization", QuantizationJson(s)},
          {"headers", s.headers},
          {"runners", s.runners},
          {"left", LeftJson(s.left)},
          {"decision", s.decision ? s.decision->ToJson() : nlohmann::json(nullptr)}};
}

std::string PortReportMarkdown(const PortState& s, const std::vector<PortStep>& steps) {
  auto [verdict, kind] = PortVerdict(s);
  std::string md =
      fmt::format("# porttool port: {} → {}\n\n**{}**\n\n", s.model_file, s.target.name, verdict);
  md += "## What port did\n\n" + MarkdownTable(StepsTable(steps));
  md += "## Segments\n\n" + MarkdownTable(SegmentsTable(s)) + MarkdownTable(BridgesTable(s));
  for (const auto& line : EstimateLines(s)) md += "- " + line + "\n";
  md += "\n## Quantization\n\n" + QuantizationText(s, steps) + "\n\n" +
        MarkdownTable(AccuracyTable(s));
  md += "## What is left\n\n";
  if (s.left.empty()) md += "Nothing: every op runs on the target's accelerator.\n";
  for (const auto& item : s.left) md += "- " + item.text + "\n";
  md += "\n---\n\n";
  if (s.decision) md += s.decision->ToMarkdown();
  return md;
}

std::string PortReportHtml(const PortState& s, const std::vector<PortStep>& steps) {
  auto [verdict, kind] = PortVerdict(s);
  emit::HtmlReport page;
  page.title = fmt::format("porttool port: {} → {}", s.model_file, s.target.name);
  page.verdict = verdict;
  page.verdict_kind = kind;
  page.verdict_details = {fmt::format("target: {} ({})", s.target.name, s.target.title)};
  if (s.plan && s.scan) page.graph = PlacementSvg(s);
  page.sections.push_back({"Segments", EstimateLines(s), {SegmentsTable(s), BridgesTable(s)}, {}});
  page.sections.push_back({"What port did", {}, {StepsTable(steps)}, {}});
  page.sections.push_back({"Quantization", {QuantizationText(s, steps)}, {AccuracyTable(s)}, {}});
  std::vector<std::string> left;
  for (const auto& item : s.left) left.push_back(item.text);
  if (left.empty()) left.push_back("Nothing: every op runs on the target's accelerator.");
  page.sections.push_back({"What is left", {}, {}, left});
  if (s.decision) {
    page.sections.push_back(
        {"Decision report",
         {fmt::format("Verdict: {} — {}", decide::OutcomeName(s.decision->verdict.verdict),
                      s.decision->verdict.reason)},
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
