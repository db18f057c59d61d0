// The port bundle's report.html: one self-contained page a person opens in a browser, from file://
// or anywhere, with no network access (a Content-Security-Policy forbids every fetch), no external
// script, style or font. It shows the verdict banner, the placement graph (graph_svg.h) with its
// colour legend and, for each collapsed box, a <details> list of its members that clicking the box
// opens, then the caller's sections: paragraphs, bars, tables and bullet lists of plain text
// (a cell's '\n' starts a new line; a table without rows is left out). It knows
// nothing of porttool's stages; `port` fills the data. The page is a pure function of that data
// (no time, no paths of its own), so the same inputs give the same bytes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/emit/graph_svg.h"

namespace porttool::emit {

// All strings below are plain text, any bytes: the page shows them through DisplayText and
// escapes them (html_text.h). None is taken as markup.
struct HtmlTable {
  std::string caption;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;  // a row may be shorter than headers
};

// A used share of a budget, drawn as a bar (red when over): memory against the target's.
struct HtmlBar {
  std::string label;
  double value = 0, limit = 0;
  std::string text;  // the figures in words, also the bar's accessible label
};

struct HtmlSection {
  std::string title;
  std::vector<std::string> paragraphs;
  std::vector<HtmlBar> bars;  // before the tables
  std::vector<HtmlTable> tables;
  std::vector<std::string> items;  // bullet list, after the tables
};

// What the graph section calls itself and what its colours mean. The defaults are the port
// report's placement; another page (diff's unchanged / changed / added-or-removed) renames them.
struct GraphLegend {
  std::string title = "Placement graph";
  std::string accelerator = "runs on the accelerator";
  std::string host = "runs on the host CPU";
  std::string unsupported = "unsupported: left to a person";
  bool cuts = true;  // mention the cuts between segments (count and legend line)
};

struct HtmlReport {
  std::string title;         // "porttool port: demo_detector.onnx → rknn-rk3588"
  std::string verdict;       // headline: "ready: 1 accelerator segment"
  std::string verdict_kind;  // "ok" | "warn" | "fail": colours the banner
  std::vector<std::string> verdict_details;
  std::vector<HtmlSection> lead;  // right after the banner (the gates), before the graph
  std::optional<GraphSvg> graph;  // drawn after the lead sections
  GraphLegend legend;
  std::vector<HtmlSection> sections;
};

// Ids the page gives its parts, for its own script and for tests: the <details> listing the
// members of box k is "pt_members_<k>" (boxes of one node have none); section k is "pt_sec_<k>".
std::string MembersId(int box);

// The page. Its inline script wires each collapsed box (click or Enter: open and scroll to its
// member list; "show in graph" in the list scrolls back and highlights the box) and records
// every script error, failed load or blocked request in <html data-pt-errors="N"> and in
// <pre id="pt-diagnostics">; when it has run to the end it sets <html data-pt-ready="1">.
// scripts/render_html.sh reads both. Throws Error(kInternal) for a verdict_kind other than the
// three above.
std::string RenderReportHtml(const HtmlReport& report);

}  // namespace porttool::emit
