// The report page: structure checked in C++ (one <g class="node"> per box, a member list for
// every collapsed box holding every member, escaping, no external references, identical bytes),
// then, when Chromium is installed, the page opened in headless Chromium through
// scripts/render_html.sh: exit 0, a screenshot, no console errors, and the live DOM's box count.
// A broken page proves the checker sees errors. The last test builds the placement graph of the
// real PP-OCRv4 det model (from ../shared) and reports its box count and render time.
#include "lib/emit/report_html.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "lib/emit/html_text.h"
#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

using testing::RunShell;
using testing::TempDir;

constexpr const char* kChromium = "/usr/bin/chromium";

// A CNN-shaped graph of 6 stages x 25 blocks (Constant weight, Conv, HardSwish, a
// squeeze-excitation fork, a residual Add: 10 nodes each), each stage's output sent to a
// top-down neck (long skips). Stages 0-2 run in accelerator segment 0, stage 3 on the host
// (segment 1, one custom op unsupported), stages 4-5 and the neck in accelerator segment 2.
PlacementGraph BigGraph() {
  PlacementGraph g;
  g.segments = {{0, "accelerator", ""}, {1, "host", ""}, {2, "accelerator", ""}};
  int segment = 0;
  Placement placement = Placement::kAccelerator;
  auto add = [&](const std::string& name, const std::string& op, std::vector<int> inputs) {
    g.nodes.push_back({name, op, placement, segment, std::move(inputs)});
    return static_cast<int>(g.nodes.size()) - 1;
  };
  int x = add("stem/conv", "Conv", {});
  std::vector<int> stage_outputs;
  for (int s = 0; s < 6; ++s) {
    segment = s < 3 ? 0 : s == 3 ? 1 : 2;
    placement = s == 3 ? Placement::kHost : Placement::kAccelerator;
    for (int b = 0; b < 25; ++b) {
      std::string p = fmt::format("stage{}/block{}/", s, b);
      int w = add(p + "weight", "Constant", {});
      int c = add(p + "conv", "Conv", {x, w});
      int hs = add(p + "hardswish", "HardSwish", {c});
      int pool = add(p + "se/pool", "GlobalAveragePool", {hs});
      int c1 = add(p + "se/conv1", "Conv", {pool});
      int r = add(p + "se/relu", "Relu", {c1});
      int c2 = add(p + "se/conv2", "Conv", {r});
      bool custom = s == 3 && b == 12;
      if (custom) placement = Placement::kUnsupported;
      int sig = add(p + (custom ? "se/gate <custom & \"odd\">" : "se/gate"),
                    custom ? "com.example:FancyGate" : "HardSigmoid", {c2});
      placement = s == 3 ? Placement::kHost : Placement::kAccelerator;
      int mul = add(p + "se/scale", "Mul", {hs, sig});
      x = add(p + "residual", "Add", {x, mul});
    }
    stage_outputs.push_back(x);
  }
  int top = x;
  for (int s = 4; s >= 0; --s) {
    int up = add(fmt::format("neck/up{}", s), "Resize", {top});
    top = add(fmt::format("neck/add{}", s), "Add", {up, stage_outputs[s]});
  }
  add("head/sigmoid", "Sigmoid", {top});
  for (int v = 0; v < static_cast<int>(g.nodes.size()); ++v) {
    for (int u : g.nodes[v].inputs) {
      if (g.nodes[u].segment != g.nodes[v].segment) {
        g.edge_labels[{u, v}] = fmt::format("1x{}x40x40 int8 · {} KiB", 32 + u % 64, 50 + u % 7);
      }
    }
  }
  return g;
}

PlacementGraph SmallGraph() {
  PlacementGraph g;
  g.segments = {{0, "accelerator", "segment 0 · accelerator (rknn)"}, {1, "host", ""}};
  g.nodes = {{"images_conv", "Conv", Placement::kAccelerator, 0, {}},
             {"relu", "Relu", Placement::kAccelerator, 0, {0}},
             {"nms <&>", "NonMaxSuppression", Placement::kHost, 1, {1}},
             {"gelu", "com.microsoft:Gelu", Placement::kUnsupported, 1, {2}},
             {"out", "Identity", Placement::kHost, 1, {3, 1}}};
  g.edge_labels[{1, 2}] = "1x64x80x80 float · 1.6 MB";
  g.edge_labels[{1, 4}] = "1x64x80x80 float · 1.6 MB";
  return g;
}

HtmlReport Report(GraphSvg graph) {
  HtmlReport r;
  r.title = "porttool port: demo_detector.onnx → rknn-rk3588";
  r.verdict = "work left: 1 custom operator";
  r.verdict_kind = "warn";
  r.verdict_details = {"2 segments: 1 accelerator, 1 host", "Gelu has no kernel on the target"};
  r.graph = std::move(graph);
  HtmlSection segments{"Segments", {"Bridges are the tensors that cross a cut."}, {}, {}, {}};
  segments.tables.push_back(
      {"Segments",
       {"segment", "runs on", "nodes", "bridge in", "bridge out"},
       {{"0", "accelerator", "2", "", "1.6 MB"}, {"1", "host", "3", "1.6 MB"}}});
  HtmlSection steps{"Steps", {}, {}, {}, {"check: ok", "split: 1 cut", "quantize: skipped"}};
  steps.tables.push_back({"What port did",
                          {"step", "outcome", "details"},
                          {{"simplify", "ok", "16 -> 13 nodes\nverified: 1 output(s)"}}});
  steps.tables.push_back({"Nothing to show", {"a", "b"}, {}});
  HtmlSection gates{"Gates", {}, {}, {}, {}};
  gates.bars = {{"arena", 3, 2, "3 MB of 2 MB usable RAM"}, {"weights", 1, 4, "1 MB of 4 MB"}};
  gates.tables.push_back(
      {"Gates", {"gate", "status"}, {{"fit", "fail"}, {"arithmetic", "not evaluated"}}});
  r.lead = {gates};
  HtmlSection left{"What is left to a person",
                   {"<script>alert('not markup')</script> & friends"},
                   {},
                   {},
                   {"write a kernel for com.microsoft:Gelu (node \"gelu\")", "bad byte \xff"}};
  r.sections = {segments, steps, left};
  return r;
}

// Structure every page must have, whatever the browser does.
void ExpectSelfContainedPage(const std::string& html, const GraphSvg& graph) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(testing::CountOf(html, "<g class=\"node\""), graph.boxes.size());
  EXPECT_EQ(testing::CountOf(html, "<svg class=\"pt-graph\""), 1u);
  for (size_t k = 0; k < graph.boxes.size(); ++k) {
    const SvgBox& box = graph.boxes[k];
    std::string id = MembersId(static_cast<int>(k));
    if (!box.collapsed()) {
      EXPECT_EQ(html.find("id=\"" + id + "\""), std::string::npos);
      continue;
    }
    size_t at = html.find("<details class=\"pt-members\" id=\"" + id + "\">");
    ASSERT_NE(at, std::string::npos) << id;
    size_t end = html.find("</details>", at);
    std::string list = html.substr(at, end - at);
    EXPECT_NE(list.find("href=\"#" + box.id + "\""), std::string::npos);
    EXPECT_EQ(testing::CountOf(list, "<tr><td>"), box.members.size()) << id;
    for (const auto& name : box.member_names) {
      std::string cell = name.empty() ? "<span class=\"pt-note\">(no name)</span>" : HtmlText(name);
      EXPECT_NE(list.find("<td class=\"pt-mono\">" + cell + "</td>"), std::string::npos) << name;
    }
  }
  // Nothing fetched: no external URL (the SVG namespace names are not requests), no stylesheet,
  // font, image or script from elsewhere.
  std::string stripped = html;
  for (const char* ns : {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}) {
    for (size_t at; (at = stripped.find(ns)) != std::string::npos;) stripped.erase(at, strlen(ns));
  }
  for (const char* bad : {"http:", "https:", "//cdn", "url(", "@import", "<link", "<img",
                          " src=", "<iframe", "file:"}) {
    EXPECT_EQ(stripped.find(bad), std::string::npos) << bad;
  }
  EXPECT_EQ(testing::CountOf(html, "<script>"), 2u);
  EXPECT_EQ(testing::CountOf(html, "<script"), 2u);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  for (const char* path : {"/usr/", "/tmp/", "/work/", "/home/"}) {
    EXPECT_EQ(html.find(path), std::string::npos) << path;
  }
}

struct BrowserResult {
  int exit_code = -1;
  std::string out;
  size_t png_bytes = 0;
};

BrowserResult OpenInChromium(const std::string& html, const std::string& name) {
  TempDir dir;
  testing::WriteFile(dir / (name + ".html"), html);
  auto png = dir / (name + ".png");
  auto r = RunShell((testing::SourceDir() / "scripts" / "render_html.sh").string() + " " +
                    (dir / (name + ".html")).string() + " " + png.string());
  BrowserResult b{r.exit_code, r.out + r.err, 0};
  if (std::filesystem::exists(png)) b.png_bytes = std::filesystem::file_size(png);
  if (const char* keep = std::getenv("PORTTOOL_KEEP_RENDERS")) {
    std::filesystem::copy_file(png, std::filesystem::path(keep) / (name + ".png"),
                               std::filesystem::copy_options::overwrite_existing);
    testing::WriteFile(std::filesystem::path(keep) / (name + ".html"), html);
  }
  return b;
}

void ExpectCleanInChromium(const std::string& html, const GraphSvg& graph,
                           const std::string& name) {
  BrowserResult b = OpenInChromium(html, name);
  if (b.exit_code == 77) PORTTOOL_SKIP_MISSING(b.out);
  EXPECT_EQ(b.exit_code, 0) << b.out;
  EXPECT_GT(b.png_bytes, 1000u) << b.out;
  EXPECT_NE(b.out.find("console errors 0\n"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find(fmt::format("boxes {}\n", graph.boxes.size())), std::string::npos) << b.out;
  std::cout << name << ": " << b.out;
}

bool HaveChromium() { return std::filesystem::exists(kChromium); }

TEST(ReportHtml, SmallGraphPage) {
  GraphSvg graph = RenderPlacementSvg(SmallGraph());
  ASSERT_EQ(graph.boxes.size(), 5u);
  std::string html = RenderReportHtml(Report(graph));
  ExpectSelfContainedPage(html, graph);
  EXPECT_EQ(html, RenderReportHtml(Report(graph)));
  EXPECT_NE(html.find("<header class=\"pt-verdict pt-verdict-warn\">"), std::string::npos);
  EXPECT_NE(html.find("work left: 1 custom operator"), std::string::npos);
  EXPECT_NE(html.find("demo_detector.onnx → rknn-rk3588"), std::string::npos);
  // Caller text is never markup.
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;not markup&#39;)&lt;/script&gt; &amp; friends"),
            std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("bad byte ⟨0xFF⟩"), std::string::npos);
  EXPECT_EQ(html.find("\xff"), std::string::npos);
  EXPECT_NE(html.find("(node &quot;gelu&quot;)"), std::string::npos);
  // A cell's lines are lines of the page, never a literal backslash escape anywhere (scripts
  // included); a table without rows is left out; bars show the share used, red when over.
  EXPECT_NE(html.find("16 -&gt; 13 nodes<br>verified: 1 output(s)"), std::string::npos);
  EXPECT_EQ(html.find('\\'), std::string::npos) << "a backslash in the page";
  EXPECT_EQ(html.find("Nothing to show"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"pt-bar pt-bar-over\" role=\"img\" aria-label=\"3 MB of 2 MB "
                      "usable RAM\"><span style=\"width:100.0%\">"),
            std::string::npos);
  EXPECT_NE(html.find("<div class=\"pt-bar\" role=\"img\" aria-label=\"1 MB of 4 MB\"><span "
                      "style=\"width:25.0%\">"),
            std::string::npos);
  EXPECT_NE(html.find("<span class=\"pt-status-fail\">fail</span>"), std::string::npos);
  EXPECT_LT(html.find("id=\"pt_lead_0\""), html.find("id=\"pt_graph_section\""));
  // The short row is padded to the header's width.
  EXPECT_NE(html.find("<td>1.6 MB</td><td></td></tr>"), std::string::npos);
  EXPECT_NE(html.find(".pt-swatch-unsupported { background: #f7a1a1;"), std::string::npos);
  if (!HaveChromium()) PORTTOOL_SKIP_MISSING("no " << kChromium << " (apt-get install chromium)");
  ExpectCleanInChromium(html, graph, "small");
}

TEST(ReportHtml, CollapsedGraphOf1500Nodes) {
  PlacementGraph g = BigGraph();
  ASSERT_GE(g.nodes.size(), 1500u);
  auto start = std::chrono::steady_clock::now();
  GraphSvg graph = RenderPlacementSvg(g);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("synthetic: {} nodes -> {} boxes, {} cuts, {:.0f} ms\n", g.nodes.size(),
                           graph.boxes.size(), graph.cut_count, ms);
  EXPECT_LE(graph.boxes.size(), 60u);
  EXPECT_GE(graph.boxes.size(), 10u);
  // The unsupported node is a box of its own, and the host segment's boxes are all host.
  int unsupported = 0;
  for (const SvgBox& box : graph.boxes) {
    if (box.placement == Placement::kUnsupported) {
      ++unsupported;
      EXPECT_EQ(box.members.size(), 1u);
    }
    for (int v : box.members) EXPECT_EQ(g.nodes[v].segment, box.segment);
  }
  EXPECT_EQ(unsupported, 1);
  EXPECT_GE(graph.cut_count, 3);
  std::string html = RenderReportHtml(Report(graph));
  ExpectSelfContainedPage(html, graph);
  EXPECT_NE(html.find("se/gate &lt;custom &amp; &quot;odd&quot;&gt;"), std::string::npos);
  EXPECT_EQ(html, RenderReportHtml(Report(RenderPlacementSvg(g))));
  if (!HaveChromium()) PORTTOOL_SKIP_MISSING("no " << kChromium << " (apt-get install chromium)");
  ExpectCleanInChromium(html, graph, "synthetic");
}

TEST(ReportHtml, PageWithoutGraphOrSections) {
  HtmlReport r;
  r.title = "t";
  r.verdict = "ready";
  r.verdict_kind = "ok";
  std::string html = RenderReportHtml(r);
  EXPECT_EQ(testing::CountOf(html, "<g class=\"node\""), 0u);
  EXPECT_EQ(html.find("<nav"), std::string::npos);
  EXPECT_NE(html.find("pt-verdict-ok"), std::string::npos);
  r.verdict_kind = "great";
  EXPECT_THROW(RenderReportHtml(r), Error);
}

// The checker itself: a script error and a blocked external image are both reported, and the
// page counts as failed.
TEST(ReportHtml, BrowserCheckReportsConsoleErrors) {
  if (!HaveChromium()) PORTTOOL_SKIP_MISSING("no " << kChromium << " (apt-get install chromium)");
  GraphSvg graph = RenderPlacementSvg(SmallGraph());
  std::string html = RenderReportHtml(Report(graph));
  size_t at = html.find("</main>");
  html.insert(at,
              "<img alt=\"\" src=\"https://example.invalid/x.png\"><script>noSuchFn();</script>");
  BrowserResult b = OpenInChromium(html, "broken");
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_EQ(b.out.find("console errors 0\n"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("noSuchFn"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("example.invalid"), std::string::npos) << b.out;
}

// Clicking a collapsed box opens its member list, and Enter on a focused box does too. A script
// added after the page's own clicks the first collapsed box and reports through console.error
// (which render_html.sh counts) if its <details> stayed closed.
TEST(ReportHtml, ClickingACollapsedBoxOpensItsMembers) {
  if (!HaveChromium()) PORTTOOL_SKIP_MISSING("no " << kChromium << " (apt-get install chromium)");
  GraphSvg graph = RenderPlacementSvg(BigGraph());
  std::string html = RenderReportHtml(Report(graph));
  size_t at = html.find("</body>");
  html.insert(at, R"(<script>
(function () {
  var boxes = document.querySelectorAll('svg.pt-graph g.node[data-members]');
  if (boxes.length < 2) { console.error('no collapsed boxes'); return; }
  var first = document.getElementById('pt_members_' + boxes[0].getAttribute('data-box'));
  var second = document.getElementById('pt_members_' + boxes[1].getAttribute('data-box'));
  if (first.open || second.open) console.error('member lists start open');
  boxes[0].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  if (!first.open) console.error('click did not open ' + first.id);
  boxes[1].dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  if (!second.open) console.error('Enter did not open ' + second.id);
  if (boxes[0].getAttribute('tabindex') !== '0') console.error('box is not focusable');
})();
</script>
)");
  BrowserResult b = OpenInChromium(html, "click");
  EXPECT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(b.out.find("console errors 0\n"), std::string::npos) << b.out;
}

// PP-OCRv4 det (672 nodes, 342 of them Constants) with the nodes from the first Resize to the
// second one faked onto the host, so there are three segments and cuts both ways.
TEST(ReportHtml, PpOcrDetPlacementGraph) {
  auto models = testing::SharedModelsDir();
  auto path = models.empty() ? models : models / "ch_PP-OCRv4_det_infer.onnx";
  if (path.empty() || !std::filesystem::exists(path)) {
    PORTTOOL_SKIP_MISSING("ch_PP-OCRv4_det_infer.onnx not in $PORTTOOL_SHARED/models");
  }
  io::Model model = io::Load(path);
  ir::GraphView view(model.proto.graph());
  std::vector<int> order = view.TopoOrder();
  std::vector<int> position(view.node_count(), -1);
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<int>(k);
  std::vector<int> resizes;
  for (int v : order) {
    if (view.node(v).op_type() == "Resize") resizes.push_back(position[v]);
  }
  ASSERT_GE(resizes.size(), 2u);
  // As a split would place them: a node by its position, a Constant (no node inputs) with its
  // first consumer.
  std::vector<int> segment_at(order.size());
  for (size_t p = order.size(); p-- > 0;) {
    int v = order[p];
    int s = static_cast<int>(p) < resizes[0] ? 0 : static_cast<int>(p) <= resizes[1] ? 1 : 2;
    bool source = true;
    for (const auto& tensor : view.NodeReads(v)) source = source && view.Producer(tensor) < 0;
    int first_consumer = -1;
    for (const auto& out : view.node(v).output()) {
      for (int c : view.Consumers(out)) {
        if (first_consumer < 0 || position[c] < first_consumer) first_consumer = position[c];
      }
    }
    segment_at[p] = source && first_consumer >= 0 ? segment_at[first_consumer] : s;
  }
  PlacementGraph g;
  g.segments = {{0, "accelerator", ""}, {1, "host", ""}, {2, "accelerator", ""}};
  for (int v : order) {
    const auto& node = view.node(v);
    int p = position[v];
    int segment = segment_at[p];
    PlacedNode placed{node.name(),
                      node.domain().empty() ? node.op_type() : node.domain() + ":" + node.op_type(),
                      segment == 1 ? Placement::kHost : Placement::kAccelerator,
                      segment,
                      {}};
    for (const auto& tensor : view.NodeReads(v)) {
      int producer = view.Producer(tensor);
      if (producer < 0) continue;
      placed.inputs.push_back(position[producer]);
      if (segment_at[position[producer]] != segment)
        g.edge_labels[{position[producer], p}] = tensor;
    }
    g.nodes.push_back(std::move(placed));
  }
  auto start = std::chrono::steady_clock::now();
  GraphSvg graph = RenderPlacementSvg(g);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int collapsed = 0;
  for (const auto& box : graph.boxes) collapsed += box.collapsed() ? 1 : 0;
  std::cout << fmt::format("det: {} nodes -> {} boxes ({} collapsed), {} cuts, {:.0f} ms\n",
                           g.nodes.size(), graph.boxes.size(), collapsed, graph.cut_count, ms);
  // For comparison: the same graph drawn node by node.
  start = std::chrono::steady_clock::now();
  GraphSvg plain = RenderPlacementSvg(g, {.collapse_above = 1 << 20});
  std::cout << fmt::format(
      "det uncollapsed: {} boxes, {:.0f} ms\n", plain.boxes.size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  RecordProperty("det_boxes", static_cast<int>(graph.boxes.size()));
  RecordProperty("det_render_ms", static_cast<int>(ms));
  EXPECT_LE(graph.boxes.size(), 40u);
  EXPECT_GE(graph.cut_count, 2);
  EXPECT_LT(ms, 1000.0);
  HtmlReport report = Report(graph);
  report.title = "porttool port: ch_PP-OCRv4_det_infer.onnx → rknn-rk3588 (segments faked)";
  std::string html = RenderReportHtml(report);
  ExpectSelfContainedPage(html, graph);
  if (!HaveChromium()) PORTTOOL_SKIP_MISSING("no " << kChromium << " (apt-get install chromium)");
  ExpectCleanInChromium(html, graph, "det");
}

}  // namespace
}  // namespace porttool::emit
