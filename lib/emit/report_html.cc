#include "lib/emit/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "lib/emit/html_text.h"
#include "lib/util/error.h"

namespace porttool::emit {
namespace {

// Every fetch is refused, so a page that would try one fails visibly (a console error and a
// `securitypolicyviolation` the diagnostics record) instead of reaching the network.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

constexpr std::string_view kStyle = R"CSS(
:root { color-scheme: light; }
body { margin: 0; color: #1d1d1f; background: #fff;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 0 24px 48px; }
header.pt-verdict { padding: 18px 24px 14px; border-bottom: 5px solid; }
header.pt-verdict > * { max-width: 1320px; margin-left: auto; margin-right: auto; }
.pt-verdict-ok { background: #e8f5e9; border-color: #2e7d32; }
.pt-verdict-warn { background: #fff8e1; border-color: #f9a825; }
.pt-verdict-fail { background: #ffebee; border-color: #c62828; }
h1 { font-size: 17px; font-weight: 600; margin: 0 0 4px; color: #333; overflow-wrap: anywhere; }
.pt-headline { font-size: 26px; font-weight: 700; margin: 0 0 6px; overflow-wrap: anywhere; }
.pt-verdict ul { margin: 4px 0 0; padding-left: 20px; }
h2 { font-size: 20px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 16px; margin: 20px 0 6px; }
nav.pt-toc { margin: 16px 0 0; font-size: 14px; }
nav.pt-toc a { margin-right: 14px; }
a { color: #0b57d0; }
table { border-collapse: collapse; margin: 8px 0 18px; font-size: 14px; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: 2px 0 6px; }
th, td { border: 1px solid #d0d7de; padding: 4px 9px; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }
td:first-child { white-space: nowrap; }
.pt-status-pass { color: #1b5e20; font-weight: 600; }
.pt-status-fail { color: #b71c1c; font-weight: 600; }
.pt-status-not-evaluated { color: #8d6e00; font-weight: 600; }
.pt-bar { position: relative; width: 320px; height: 14px; background: #eef1f4;
  border: 1px solid #c9d1d9; border-radius: 3px; overflow: hidden; }
.pt-bar > span { position: absolute; left: 0; top: 0; bottom: 0; background: #2e7d32; }
.pt-bar-over > span { background: #c62828; }
th { background: #f6f8fa; font-weight: 600; }
tbody tr:nth-child(even) td { background: #fafbfc; }
.pt-mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas,
  monospace; font-size: 13px; }
.pt-legend { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap;
  gap: 6px 22px; font-size: 14px; }
.pt-legend li { display: flex; align-items: center; gap: 7px; }
.pt-swatch { display: inline-block; width: 20px; height: 13px; border: 2px solid;
  border-radius: 4px; }
.pt-swatch-collapsed { border: 4px double #555; background: #fff; width: 16px; height: 9px; }
.pt-graph-wrap { overflow: auto; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px;
  background: #fff; }
svg.pt-graph { display: block; max-width: 100%; height: auto; margin: 0 auto; }
svg.pt-graph g.node[data-members] { cursor: pointer; }
svg.pt-graph g.node[data-members]:hover > path { stroke-width: 2.5px; }
svg.pt-graph g.node:focus { outline: none; }
svg.pt-graph g.node:focus > path, svg.pt-graph g.node[data-flash] > path,
svg.pt-graph g.node[data-flash] > polygon { stroke: #ff6f00; stroke-width: 4px; }
details.pt-members { border: 1px solid #d0d7de; border-radius: 6px; margin: 6px 0; padding: 4px 10px; }
details.pt-members[data-flash] { outline: 3px solid #ff6f00; }
details.pt-members > summary { cursor: pointer; display: flex; align-items: center; gap: 8px; }
details.pt-members table { margin: 4px 0 10px; }
.pt-note { color: #555; font-size: 14px; }
footer { color: #666; font-size: 12px; margin-top: 40px; }
)CSS";

// Runs first, in <head>: records script errors, failed loads and blocked requests for
// scripts/render_html.sh (and for anyone debugging the page), without changing what the page
// shows.
constexpr std::string_view kDiagnosticsScript = R"JS(
(function () {
  'use strict';
  var root = document.documentElement, log = [];
  function note(message) {
    log.push(String(message));
    root.setAttribute('data-pt-errors', String(log.length));
    var out = document.getElementById('pt-diagnostics');
    if (out) out.textContent = log.join(String.fromCharCode(10));
  }
  window.addEventListener('error', function (e) {
    var t = e.target;
    note(t && t !== window && (t.src || t.href) ? 'failed to load ' + (t.src || t.href)
                                                : (e.message || 'error'));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { note('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) {
    note('blocked ' + e.violatedDirective + ': ' + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  root.setAttribute('data-pt-errors', '0');
  window.ptDiagnostics = log;
})();
)JS";

// Runs last: makes collapsed boxes open their member lists, and "show in graph" links flash the
// box they point at.
constexpr std::string_view kPageScript = R"JS(
(function () {
  'use strict';
  function flash(el) {
    el.setAttribute('data-flash', '');
    setTimeout(function () { el.removeAttribute('data-flash'); }, 1600);
  }
  function membersOf(box) { return document.getElementById('pt_members_' + box.getAttribute('data-box')); }
  function openMembers(box) {
    var list = membersOf(box);
    if (!list) return;
    list.open = true;
    list.scrollIntoView({block: 'start'});
    flash(list);
  }
  var boxes = document.querySelectorAll('svg.pt-graph g.node');
  for (var i = 0; i < boxes.length; i++) {
    if (!membersOf(boxes[i])) continue;
    boxes[i].setAttribute('tabindex', '0');
    boxes[i].setAttribute('role', 'button');
    boxes[i].addEventListener('click', function () { openMembers(this); });
    boxes[i].addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); openMembers(this); }
    });
  }
  var links = document.querySelectorAll('a.pt-show-box');
  for (var j = 0; j < links.length; j++) {
    links[j].addEventListener('click', function (e) {
      var box = document.getElementById(this.getAttribute('href').slice(1));
      if (!box) return;
      e.preventDefault();
      box.scrollIntoView({block: 'center'});
      flash(box);
    });
  }
  var out = document.getElementById('pt-diagnostics');
  if (out && window.ptDiagnostics) out.textContent = window.ptDiagnostics.join(String.fromCharCode(10));
  // The banner's colour as the browser drew it, for scripts/render_html.sh's readers.
  var banner = document.querySelector('header.pt-verdict');
  if (banner) {
    document.documentElement.setAttribute('data-pt-banner', getComputedStyle(banner).borderTopColor);
  }
  document.documentElement.setAttribute('data-pt-ready', '1');
})();
)JS";

// A cell's text: its lines (the caller's '\n') as lines of the page, each shown as written; a
// status word (pass, fail, not evaluated) coloured.
std::string CellHtml(const std::string& cell) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t end = cell.find('\n', start);
    out += HtmlText(std::string_view(cell).substr(start, end - start));
    if (end == std::string::npos) break;
    out += "<br>";
    start = end + 1;
  }
  for (const char* status : {"pass", "fail", "not evaluated"}) {
    if (cell.rfind(status, 0) != 0) continue;
    std::string cls = status;
    std::replace(cls.begin(), cls.end(), ' ', '-');
    return "<span class=\"pt-status-" + cls + "\">" + out + "</span>";
  }
  return out;
}

// A table with no rows is left out: headers over nothing say nothing.
void AppendTable(std::string& out, const HtmlTable& table) {
  if (table.rows.empty()) return;
  out += "<table>\n";
  if (!table.caption.empty()) out += "<caption>" + HtmlText(table.caption) + "</caption>\n";
  if (!table.headers.empty()) {
    out += "<thead><tr>";
    for (const auto& h : table.headers) out += "<th>" + HtmlText(h) + "</th>";
    out += "</tr></thead>\n";
  }
  out += "<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td>" + CellHtml(cell) + "</td>";
    // Short rows are padded so the grid stays whole.
    for (size_t k = row.size(); k < table.headers.size(); ++k) out += "<td></td>";
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
}

// Each bar: the label, a track as wide as the budget with the used share filled (red when over),
// and the figures in words.
void AppendBars(std::string& out, const std::vector<HtmlBar>& bars) {
  if (bars.empty()) return;
  out += "<table class=\"pt-bars\">\n<tbody>\n";
  for (const auto& b : bars) {
    const bool over = b.value > b.limit;
    const double share = b.limit > 0 ? std::min(1.0, b.value / b.limit) : 1.0;
    out += fmt::format(
        "<tr><td>{}</td><td><div class=\"pt-bar{}\" role=\"img\" aria-label=\"{}\"><span "
        "style=\"width:{:.1f}%\"></span></div></td><td>{}</td></tr>\n",
        HtmlText(b.label), over ? " pt-bar-over" : "", HtmlText(b.text), 100 * share,
        HtmlText(b.text));
  }
  out += "</tbody>\n</table>\n";
}

void AppendList(std::string& out, const std::vector<std::string>& items) {
  if (items.empty()) return;
  out += "<ul>\n";
  for (const auto& item : items) out += "<li>" + HtmlText(item) + "</li>\n";
  out += "</ul>\n";
}

// Exported models often leave Constants unnamed.
std::string MemberName(const std::string& name) {
  return name.empty() ? "<span class=\"pt-note\">(no name)</span>" : HtmlText(name);
}

std::string SwatchClass(Placement p) {
  return fmt::format("pt-swatch pt-swatch-{}", PlacementName(p));
}

void AppendGraph(std::string& out, const GraphSvg& graph, const GraphLegend& legend) {
  int collapsed = 0;
  for (const auto& box : graph.boxes) collapsed += box.collapsed() ? 1 : 0;
  out += "<section id=\"pt_graph_section\">\n<h2>" + HtmlText(legend.title) + "</h2>\n";
  if (!graph.omitted.empty()) {
    out += "<p class=\"pt-note\">Not drawn: " + HtmlText(graph.omitted) + ".</p>\n</section>\n";
    return;
  }
  out += fmt::format("<p class=\"pt-note\">{} nodes drawn as {} boxes{}{}.</p>\n", graph.node_count,
                     graph.boxes.size(),
                     collapsed ? fmt::format(" ({} of them collapsed runs)", collapsed) : "",
                     legend.cuts ? fmt::format("; {} cut{} between segments", graph.cut_count,
                                               graph.cut_count == 1 ? "" : "s")
                                 : "");
  out += "<ul class=\"pt-legend\">\n";
  for (Placement p : {Placement::kAccelerator, Placement::kHost, Placement::kUnsupported}) {
    out += fmt::format("<li><span class=\"{}\"></span>{}</li>\n", SwatchClass(p),
                       HtmlText(p == Placement::kAccelerator ? legend.accelerator
                                : p == Placement::kHost      ? legend.host
                                                             : legend.unsupported));
  }
  if (legend.cuts) {
    out +=
        "<li><svg width=\"36\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" "
        "x2=\"36\" y2=\"5\" stroke=\"#c62828\" stroke-width=\"2.5\" "
        "stroke-dasharray=\"5,2\"/></svg>cut (data crosses between segments)</li>\n";
  }
  if (collapsed) {
    out +=
        "<li><span class=\"pt-swatch pt-swatch-collapsed\"></span>collapsed run of nodes: "
        "click to list them</li>\n";
  }
  out += "</ul>\n<div class=\"pt-graph-wrap\">\n" + graph.svg + "\n</div>\n";
  if (collapsed) {
    out += "<h3>Collapsed boxes</h3>\n";
    for (size_t k = 0; k < graph.boxes.size(); ++k) {
      const SvgBox& box = graph.boxes[k];
      if (!box.collapsed()) continue;
      std::string where = box.segment >= 0 ? fmt::format("segment {}", box.segment) : "no segment";
      out += fmt::format(
          "<details class=\"pt-members\" id=\"{}\"><summary><span class=\"{}\"></span>box {} · "
          "{} · {}: {}</summary>\n",
          MembersId(static_cast<int>(k)), SwatchClass(box.placement), k, where,
          PlacementName(box.placement), HtmlText(box.label));
      out += fmt::format("<p><a class=\"pt-show-box\" href=\"#{}\">show in graph</a></p>\n",
                         EscapeHtml(box.id));
      out += "<table><thead><tr><th>#</th><th>node</th><th>op</th></tr></thead><tbody>\n";
      for (size_t m = 0; m < box.members.size(); ++m) {
        out += fmt::format("<tr><td>{}</td><td class=\"pt-mono\">{}</td><td>{}</td></tr>\n",
                           box.members[m], MemberName(box.member_names[m]),
                           HtmlText(box.member_ops[m]));
      }
      out += "</tbody></table>\n</details>\n";
    }
  }
  out += "</section>\n";
}

void AppendSection(std::string& out, const HtmlSection& s, const std::string& id) {
  out += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", id, HtmlText(s.title));
  for (const auto& p : s.paragraphs) out += "<p>" + HtmlText(p) + "</p>\n";
  AppendBars(out, s.bars);
  for (const auto& t : s.tables) AppendTable(out, t);
  AppendList(out, s.items);
  out += "</section>\n";
}

}  // namespace

std::string MembersId(int box) { return fmt::format("pt_members_{}", box); }

std::string RenderReportHtml(const HtmlReport& report) {
  const std::string& kind = report.verdict_kind;
  if (kind != "ok" && kind != "warn" && kind != "fail") {
    ThrowInternal("report page: verdict kind '{}' is not ok, warn or fail", DisplayText(kind));
  }
  std::string out;
  out.reserve(64 * 1024 + (report.graph ? report.graph->svg.size() * 2 : 0));
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += fmt::format("<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
                     kContentSecurityPolicy);
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + HtmlText(report.title) + "</title>\n";
  out += "<script>" + std::string(kDiagnosticsScript) + "</script>\n";
  out += "<style>" + std::string(kStyle);
  for (Placement p : {Placement::kAccelerator, Placement::kHost, Placement::kUnsupported}) {
    out += fmt::format(".pt-swatch-{} {{ background: {}; border-color: {}; }}\n", PlacementName(p),
                       PlacementFill(p), PlacementStroke(p));
  }
  out += "</style>\n</head>\n<body>\n";

  out += fmt::format("<header class=\"pt-verdict pt-verdict-{}\">\n", kind);
  out += "<h1>" + HtmlText(report.title) + "</h1>\n";
  out += "<p class=\"pt-headline\">" + HtmlText(report.verdict) + "</p>\n";
  AppendList(out, report.verdict_details);
  out += "</header>\n<main>\n";

  if (report.lead.size() + report.sections.size() + (report.graph ? 1 : 0) > 1) {
    out += "<nav class=\"pt-toc\">";
    for (size_t k = 0; k < report.lead.size(); ++k) {
      out += fmt::format("<a href=\"#pt_lead_{}\">{}</a>", k, HtmlText(report.lead[k].title));
    }
    if (report.graph) {
      out += "<a href=\"#pt_graph_section\">" + HtmlText(report.legend.title) + "</a>";
    }
    for (size_t k = 0; k < report.sections.size(); ++k) {
      out += fmt::format("<a href=\"#pt_sec_{}\">{}</a>", k, HtmlText(report.sections[k].title));
    }
    out += "</nav>\n";
  }
  for (size_t k = 0; k < report.lead.size(); ++k) {
    AppendSection(out, report.lead[k], fmt::format("pt_lead_{}", k));
  }
  if (report.graph) AppendGraph(out, *report.graph, report.legend);
  for (size_t k = 0; k < report.sections.size(); ++k) {
    AppendSection(out, report.sections[k], fmt::format("pt_sec_{}", k));
  }
  out += fmt::format("<footer>Written by porttool {}.</footer>\n", PORTTOOL_VERSION);
  out += "<pre id=\"pt-diagnostics\" hidden></pre>\n</main>\n";
  out += "<script>" + std::string(kPageScript) + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace porttool::emit
