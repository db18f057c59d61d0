// DiffJson, DiffText and DiffHtml (lib/stages/diff.h): three views of one ModelDiff.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "lib/emit/graph_svg.h"
#include "lib/emit/report_html.h"
#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/stages/diff.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

nlohmann::json NodeJson(const DiffNode& n) {
  return {{"node", n.label}, {"op", n.op}, {"index", n.index}};
}

nlohmann::json ValueJson(const ValueChange& v) {
  nlohmann::json j = {{"a", v.a_name}, {"b", v.b_name}, {"a_type", v.a_type}, {"b_type", v.b_type}};
  j["max_abs_diff"] =
      v.max_abs && std::isfinite(*v.max_abs) ? nlohmann::json(*v.max_abs) : nlohmann::json();
  return j;
}

nlohmann::json ChangedJson(const ChangedNode& c) {
  nlohmann::json j = {{"a", NodeJson(c.a)}, {"b", NodeJson(c.b)}};
  j["attributes"] = nlohmann::json::array();
  for (const auto& a : c.attributes)
    j["attributes"].push_back({{"name", a.name}, {"a", a.a}, {"b", a.b}});
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : c.inputs) {
    nlohmann::json i = {{"position", in.position}, {"a", in.a}, {"b", in.b}};
    if (in.value) i["value"] = ValueJson(*in.value);
    j["inputs"].push_back(std::move(i));
  }
  return j;
}

nlohmann::json NumericJson(const NumericDiff& n) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  auto row = [&](const runtime::TensorComparison& c) {
    auto it = n.a_names.find(c.name);
    nlohmann::json j = {{"a", it == n.a_names.end() ? c.name : it->second},
                        {"b", c.name},
                        {"max_abs", num(c.stats.max_abs)},
                        {"max_rel", num(c.stats.max_rel)},
                        {"within_tolerance", c.stats.within_tolerance}};
    if (!c.node.empty()) j["node"] = c.node;
    if (!c.op.empty()) j["op"] = c.op;
    if (!c.stats.comparable) j["note"] = c.stats.note;
    return j;
  };
  nlohmann::json j = {{"inputs", n.inputs},
                      {"within_tolerance", n.comparison.within_tolerance},
                      {"outputs", nlohmann::json::array()},
                      {"tensors", nlohmann::json::array()},
                      {"unmatched_outputs", n.comparison.unmatched_outputs}};
  for (const auto& c : n.comparison.outputs) j["outputs"].push_back(row(c));
  for (const auto& c : n.comparison.intermediates) j["tensors"].push_back(row(c));
  return j;
}

std::string Bounded(const std::vector<std::string>& lines, size_t limit, const std::string& what) {
  std::string out;
  for (size_t i = 0; i < lines.size() && i < limit; ++i) out += lines[i];
  if (lines.size() > limit) {
    out += fmt::format("  and {} more {} (--json lists all)\n", lines.size() - limit, what);
  }
  return out;
}

std::string MaxAbs(const std::optional<double>& v) {
  return v ? fmt::format("max abs diff {:.3g}", *v) : std::string("not comparable");
}

// "Constant 342, Add 30, Mul 28": removed or added nodes by op, most first.
template <class Items, class OpOf>
std::string OpCounts(const Items& items, OpOf op_of) {
  std::map<std::string, int> counts;
  for (const auto& i : items) ++counts[op_of(i)];
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::vector<std::string> parts;
  for (const auto& p : sorted) parts.push_back(fmt::format("{} {}", p.first, p.second));
  return util::Join(parts, ", ");
}

std::string ChangedText(const ChangedNode& c) {
  std::string out = fmt::format("  {} '{}'", c.a.op, c.a.label);
  if (c.b.label != c.a.label) out += fmt::format(" (B: '{}')", c.b.label);
  out += "\n";
  for (const auto& a : c.attributes) out += fmt::format("    {}: {} -> {}\n", a.name, a.a, a.b);
  for (const auto& in : c.inputs) {
    out += fmt::format("    input {}: {} -> {}", in.position, in.a, in.b);
    if (in.value) out += ", " + MaxAbs(in.value->max_abs);
    out += "\n";
  }
  return out;
}

std::string NumericText(const NumericDiff& n, size_t limit) {
  std::string out = fmt::format("numeric ({} inputs):\n", n.inputs);
  auto row = [&](const runtime::TensorComparison& c) {
    auto it = n.a_names.find(c.name);
    std::string name = it == n.a_names.end() || it->second == c.name
                           ? c.name
                           : fmt::format("{} (A: {})", c.name, it->second);
    if (!c.stats.comparable) return fmt::format("  {}  NOT COMPARABLE: {}\n", name, c.stats.note);
    return fmt::format("  {}  max_abs {:.3g}  max_rel {:.3g}{}\n", name, c.stats.max_abs,
                       c.stats.max_rel, c.stats.within_tolerance ? "" : "  OVER TOLERANCE");
  };
  for (const auto& c : n.comparison.outputs) out += row(c);
  for (const auto& name : n.comparison.unmatched_outputs) {
    out += fmt::format("  {}  no matched output in B\n", name);
  }
  std::vector<std::string> lines;
  for (const auto& c : n.comparison.intermediates) lines.push_back(row(c));
  out += fmt::format("matched tensors ({}, execution order of B):\n", lines.size());
  return out + Bounded(lines, limit, "tensors");
}

}  // namespace

nlohmann::json DiffJson(const ModelDiff& d) {
  nlohmann::json j = {{"same", d.Same()},
                      {"summary",
                       {{"nodes_a", d.nodes_a},
                        {"nodes_b", d.nodes_b},
                        {"matched", d.matched},
                        {"matched_by_name", d.by_name},
                        {"matched_by_structure", d.by_structure},
                        {"matched_by_neighbours", d.by_neighbours},
                        {"removed", d.removed.size()},
                        {"added", d.added.size()},
                        {"changed", d.changed.size()},
                        {"values_changed", d.values.size()}}},
                      {"header", d.header}};
  j["io"] = nlohmann::json::array();
  for (const auto& c : d.io) {
    j["io"].push_back({{"kind", c.kind},
                       {"change", c.change},
                       {"a", c.a_name},
                       {"b", c.b_name},
                       {"a_type", c.a_type},
                       {"b_type", c.b_type}});
  }
  j["removed"] = nlohmann::json::array();
  for (const auto& r : d.removed) {
    nlohmann::json n = NodeJson(r.node);
    n["fate"] = r.fate;
    j["removed"].push_back(std::move(n));
  }
  j["added"] = nlohmann::json::array();
  for (const auto& a : d.added) j["added"].push_back(NodeJson(a));
  j["changed"] = nlohmann::json::array();
  for (const auto& c : d.changed) j["changed"].push_back(ChangedJson(c));
  j["values"] = nlohmann::json::array();
  for (const auto& v : d.values) j["values"].push_back(ValueJson(v));
  if (d.numeric) j["numeric"] = NumericJson(*d.numeric);
  return j;
}

std::string DiffText(const ModelDiff& d, size_t limit) {
  std::string out =
      fmt::format("nodes: A {}, B {}; matched {} ({} by name, {} by structure, {} by neighbours)\n",
                  d.nodes_a, d.nodes_b, d.matched, d.by_name, d.by_structure, d.by_neighbours);
  for (const auto& h : d.header) out += "header  " + h + "\n";
  for (const auto& c : d.io) {
    out += fmt::format("graph {} {}: {}{}{}\n", c.kind, c.change,
                       c.a_name.empty() ? "" : fmt::format("'{}' {}", c.a_name, c.a_type),
                       c.change == "changed" ? " -> " : "",
                       c.b_name.empty() ? "" : fmt::format("'{}' {}", c.b_name, c.b_type));
  }
  std::vector<std::string> lines;
  if (!d.removed.empty()) {
    out += fmt::format("removed ({} nodes only in A: {}):\n", d.removed.size(),
                       OpCounts(d.removed, [](const RemovedNode& r) { return r.node.op; }));
    for (const auto& r : d.removed) {
      lines.push_back(fmt::format("  {} '{}': {}\n", r.node.op, r.node.label, r.fate));
    }
    out += Bounded(lines, limit, "removed nodes");
  }
  if (!d.added.empty()) {
    out += fmt::format("added ({} nodes only in B: {}):\n", d.added.size(),
                       OpCounts(d.added, [](const DiffNode& n) { return n.op; }));
    lines.clear();
    for (const auto& a : d.added) lines.push_back(fmt::format("  {} '{}'\n", a.op, a.label));
    out += Bounded(lines, limit, "added nodes");
  }
  if (!d.changed.empty()) {
    out += fmt::format("changed ({} matched nodes):\n", d.changed.size());
    lines.clear();
    for (const auto& c : d.changed) lines.push_back(ChangedText(c));
    out += Bounded(lines, limit, "changed nodes");
  }
  if (!d.values.empty()) {
    out += fmt::format("weights changed ({}):\n", d.values.size());
    lines.clear();
    for (const auto& v : d.values) {
      lines.push_back(fmt::format("  '{}' {} -> '{}' {}: {}\n", v.a_name, v.a_type, v.b_name,
                                  v.b_type, MaxAbs(v.max_abs)));
    }
    out += Bounded(lines, limit, "weights");
  }
  if (d.numeric) out += NumericText(*d.numeric, limit);
  if (d.StructureSame()) out += "no structural differences (names ignored)\n";
  out += d.Same() ? "same\n" : "different\n";
  return out;
}

namespace {

emit::Placement Colour(int state) {
  return state == 0   ? emit::Placement::kAccelerator
         : state == 1 ? emit::Placement::kHost
                      : emit::Placement::kUnsupported;
}

// Both graphs as two clusters of one picture, Constant nodes left out (they are values here;
// the tables list the ones that changed).
void AddSide(emit::PlacementGraph& g, const io::Model& model, const std::vector<int>& state,
             int segment, const std::string& label) {
  const auto& graph = model.proto.graph();
  g.segments.push_back({segment, "accelerator", label});
  std::map<std::string, int> producer;
  for (int i : ir::GraphView(graph).TopoOrder()) {
    const auto& node = graph.node(i);
    if (ir::IsConstantNode(node)) continue;
    emit::PlacedNode p;
    p.name = node.name().empty() ? fmt::format("#{}", i) : node.name();
    p.op = node.op_type();
    p.placement = Colour(state[i]);
    p.segment = segment;
    for (const auto& in : node.input()) {
      auto from = producer.find(in);
      if (from != producer.end()) p.inputs.push_back(from->second);
    }
    for (const auto& out : node.output()) producer[out] = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(p));
  }
}

emit::HtmlSection SummarySection(const ModelDiff& d, const std::string& a, const std::string& b) {
  emit::HtmlSection s{"Summary", {}, {}, {}, {}};
  emit::HtmlTable t{"", {"", "A", "B"}, {}};
  t.rows.push_back({"model", a, b});
  t.rows.push_back({"nodes", std::to_string(d.nodes_a), std::to_string(d.nodes_b)});
  t.rows.push_back({"only here", std::to_string(d.removed.size()) + " removed",
                    std::to_string(d.added.size()) + " added"});
  s.tables.push_back(std::move(t));
  s.paragraphs.push_back(fmt::format(
      "{} node pairs matched: {} by name, {} by structure, {} by neighbours; {} of them changed.",
      d.matched, d.by_name, d.by_structure, d.by_neighbours, d.changed.size()));
  s.items = d.header;
  for (const auto& c : d.io) {
    s.items.push_back(fmt::format("graph {} {}: '{}' {} / '{}' {}", c.kind, c.change, c.a_name,
                                  c.a_type, c.b_name, c.b_type));
  }
  return s;
}

std::vector<emit::HtmlSection> ListSections(const ModelDiff& d) {
  emit::HtmlSection changes{"Changes", {}, {}, {}, {}};
  emit::HtmlTable removed{"Removed (only in A)", {"node", "op", "what became of it"}, {}};
  for (const auto& r : d.removed) removed.rows.push_back({r.node.label, r.node.op, r.fate});
  emit::HtmlTable added{"Added (only in B)", {"node", "op"}, {}};
  for (const auto& a : d.added) added.rows.push_back({a.label, a.op});
  emit::HtmlTable changed{"Changed", {"node (A)", "node (B)", "op", "what changed"}, {}};
  for (const auto& c : d.changed) {
    std::vector<std::string> what;
    for (const auto& a : c.attributes)
      what.push_back(fmt::format("{}: {} -> {}", a.name, a.a, a.b));
    for (const auto& in : c.inputs) {
      what.push_back(fmt::format("input {}: {} -> {}{}", in.position, in.a, in.b,
                                 in.value ? ", " + MaxAbs(in.value->max_abs) : ""));
    }
    changed.rows.push_back({c.a.label, c.b.label, c.a.op, util::Join(what, "\n")});
  }
  emit::HtmlTable values{"Weights changed", {"A", "B", "difference"}, {}};
  for (const auto& v : d.values) {
    values.rows.push_back(
        {v.a_name + " " + v.a_type, v.b_name + " " + v.b_type, MaxAbs(v.max_abs)});
  }
  changes.tables = {removed, added, changed, values};
  if (d.StructureSame()) changes.paragraphs.push_back("No structural differences (names ignored).");
  std::vector<emit::HtmlSection> out = {changes};
  if (d.numeric) {
    emit::HtmlSection n{"Numeric", {"Inputs: " + d.numeric->inputs + "."}, {}, {}, {}};
    emit::HtmlTable t{"", {"tensor (B)", "tensor (A)", "max abs", "max rel", ""}, {}};
    auto row = [&](const runtime::TensorComparison& c) {
      auto it = d.numeric->a_names.find(c.name);
      t.rows.push_back({c.name, it == d.numeric->a_names.end() ? c.name : it->second,
                        fmt::format("{:.3g}", c.stats.max_abs),
                        fmt::format("{:.3g}", c.stats.max_rel),
                        c.stats.within_tolerance ? "ok" : "over tolerance"});
    };
    for (const auto& c : d.numeric->comparison.outputs) row(c);
    for (const auto& c : d.numeric->comparison.intermediates) row(c);
    n.tables.push_back(std::move(t));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

std::string DiffHtml(const ModelDiff& d, const io::Model& a, const io::Model& b,
                     const std::string& name_a, const std::string& name_b) {
  emit::HtmlReport r;
  r.title = fmt::format("porttool diff: {} → {}", name_a, name_b);
  r.verdict = d.Same() ? "no differences (names ignored)"
                       : fmt::format("different: {} removed, {} added, {} changed",
                                     d.removed.size(), d.added.size(), d.changed.size());
  r.verdict_kind = d.Same() ? "ok" : "warn";
  r.lead.push_back(SummarySection(d, name_a, name_b));
  emit::PlacementGraph g;
  AddSide(g, a, d.state_a, 0, "A: " + name_a);
  AddSide(g, b, d.state_b, 1, "B: " + name_b);
  r.graph = emit::RenderPlacementSvg(g);
  r.legend = {"The two graphs", "unchanged", "changed (attributes, inputs or weights)",
              "removed (in A) or added (in B)", false};
  r.sections = ListSections(d);
  return emit::RenderReportHtml(r);
}

}  // namespace porttool::stages
