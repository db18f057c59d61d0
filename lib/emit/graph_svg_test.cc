// The placement graph picture: one <g class="node"> per box, clusters and cuts, the collapsing
// rule on chains, skip connections, Constants and cuts, escaping of hostile names (checked by
// parsing the SVG as XML with Debian's python and reading back the text a browser would show),
// identical bytes on every call, and rendering without Graphviz's plugin configuration file.
#include "lib/emit/graph_svg.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "lib/emit/html_text.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

using testing::RunShell;
using testing::TempDir;

PlacedNode Node(std::string name, std::string op, std::vector<int> inputs, int segment = 0,
                Placement placement = Placement::kAccelerator) {
  return {std::move(name), std::move(op), placement, segment, std::move(inputs)};
}

// A chain of `n` nodes in segment 0, each reading the previous one.
PlacementGraph Chain(int n) {
  PlacementGraph g;
  g.segments = {{0, "accelerator", ""}};
  for (int i = 0; i < n; ++i) {
    g.nodes.push_back(Node("n" + std::to_string(i), i % 2 ? "Relu" : "Conv",
                           i ? std::vector<int>{i - 1} : std::vector<int>{}));
  }
  return g;
}

// Box index of each node.
std::vector<int> BoxOf(const GraphSvg& svg, int n) {
  std::vector<int> box_of(n, -1);
  for (size_t b = 0; b < svg.boxes.size(); ++b) {
    for (int v : svg.boxes[b].members) box_of[v] = static_cast<int>(b);
  }
  return box_of;
}

void ExpectWellFormedBoxes(const GraphSvg& svg) {
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"node\""), svg.boxes.size());
  size_t members = 0;
  for (size_t b = 0; b < svg.boxes.size(); ++b) {
    const SvgBox& box = svg.boxes[b];
    EXPECT_EQ(box.id, "pt_box_" + std::to_string(b));
    EXPECT_EQ(testing::CountOf(svg.svg, "id=\"" + box.id + "\""), 1u) << box.id;
    EXPECT_TRUE(std::is_sorted(box.members.begin(), box.members.end()));
    EXPECT_EQ(box.member_names.size(), box.members.size());
    members += box.members.size();
  }
  EXPECT_EQ(members, static_cast<size_t>(svg.node_count));
  EXPECT_EQ(svg.svg.rfind("<svg", 0), 0u) << svg.svg.substr(0, 200);
  EXPECT_EQ(svg.svg.find("<?xml"), std::string::npos);
  EXPECT_EQ(svg.svg.find("<!DOCTYPE"), std::string::npos);
  EXPECT_EQ(svg.svg.find("<!--"), std::string::npos);
}

// The text content of every <text> and <title> element of `svg` as an XML parser reads it
// ("text:..." / "title:..."): what a browser shows.
std::set<std::string> ShownText(const std::string& svg) {
  TempDir dir;
  testing::WriteFile(dir / "g.svg", svg);
  testing::WriteFile(dir / "read.py", R"(
import sys, xml.etree.ElementTree as ET
for el in ET.parse(sys.argv[1]).getroot().iter():
    tag = el.tag.split('}')[-1]
    if tag in ('text', 'title'):
        sys.stdout.write(tag + ':' + (el.text or '') + '\x1e')
)");
  auto r = RunShell("PYTHONIOENCODING=utf-8 " + std::string(testing::kSystemPython) + " " +
                    (dir / "read.py").string() + " " + (dir / "g.svg").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> out;
  size_t at = 0;
  for (size_t end = r.out.find('\x1e'); end != std::string::npos; end = r.out.find('\x1e', at)) {
    out.insert(r.out.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

TEST(GraphSvg, SmallGraphOneBoxPerNodeClustersAndCuts) {
  PlacementGraph g;
  g.segments = {{0, "accelerator", ""}, {1, "host", "segment 1 · host (cpu)"}};
  g.nodes = {Node("conv0", "Conv", {}), Node("relu0", "Relu", {0}),
             Node("nms", "NonMaxSuppression", {1, 1}, 1, Placement::kHost),
             Node("custom", "com.microsoft:Gelu", {2}, 1, Placement::kUnsupported)};
  g.edge_labels[{1, 2}] = "1x64x80x80 float · 1.6 MB";
  GraphSvg svg = RenderPlacementSvg(g);
  ASSERT_EQ(svg.boxes.size(), 4u);
  ExpectWellFormedBoxes(svg);
  EXPECT_EQ(svg.cut_count, 1);
  EXPECT_EQ(testing::CountOf(svg.svg, "data-cut=\"1\""), 1u);
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"cluster\""), 2u);
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"edge\""), 3u);  // the repeated input is one edge
  EXPECT_NE(svg.svg.find("segment 0 · accelerator"), std::string::npos);
  EXPECT_NE(svg.svg.find("segment 1 · host (cpu)"), std::string::npos);
  EXPECT_NE(svg.svg.find("1.6 MB"), std::string::npos);
  EXPECT_NE(svg.svg.find("stroke-dasharray"), std::string::npos);  // the cut is dashed
  EXPECT_NE(svg.svg.find(PlacementFill(Placement::kUnsupported)), std::string::npos);
  EXPECT_NE(svg.svg.find("data-placement=\"unsupported\""), std::string::npos);
  EXPECT_EQ(svg.boxes[3].label, "com.microsoft:Gelu custom");
  for (const char* path : {"/usr/", "/tmp/", "/work/", "/home/"}) {
    EXPECT_EQ(svg.svg.find(path), std::string::npos) << path;
  }
}

TEST(GraphSvg, SameBytesEveryTime) {
  PlacementGraph g = Chain(150);
  g.nodes[80].segment = 1;
  g.nodes[80].placement = Placement::kHost;
  for (int i = 81; i < 150; ++i) g.nodes[i].segment = 2;
  GraphSvg a = RenderPlacementSvg(g);
  GraphSvg b = RenderPlacementSvg(g);
  EXPECT_EQ(a.svg, b.svg);
}

TEST(GraphSvg, ChainCollapsesToOneBoxPerSegment) {
  PlacementGraph g = Chain(200);
  for (int i = 120; i < 200; ++i) g.nodes[i].segment = 1;
  g.segments.push_back({1, "accelerator", ""});
  GraphSvg svg = RenderPlacementSvg(g);
  ASSERT_EQ(svg.boxes.size(), 2u);
  ExpectWellFormedBoxes(svg);
  EXPECT_EQ(svg.boxes[0].members.size(), 120u);
  EXPECT_EQ(svg.boxes[0].label, "120 nodes: 60 Conv, 60 Relu");
  EXPECT_EQ(svg.cut_count, 1);
  EXPECT_NE(svg.svg.find("data-members=\"120\""), std::string::npos);
  // Below the threshold nothing collapses.
  GraphSvg plain = RenderPlacementSvg(g, {.collapse_above = 500});
  EXPECT_EQ(plain.boxes.size(), 200u);
  ExpectWellFormedBoxes(plain);
}

// Every Constant feeding a chain joins its consumer's box; short forks (a squeeze-excitation
// style block every 10 nodes) are swallowed; a long skip connection stays an edge between boxes.
TEST(GraphSvg, CollapseKeepsLongSkipsAndSwallowsConstantsAndShortForks) {
  PlacementGraph g;
  g.segments = {{0, "accelerator", ""}};
  auto add = [&](const std::string& op, std::vector<int> inputs) {
    g.nodes.push_back(Node("n" + std::to_string(g.nodes.size()), op, std::move(inputs)));
    return static_cast<int>(g.nodes.size()) - 1;
  };
  int x = add("Conv", {});
  int skip_from = -1;
  for (int block = 0; block < 30; ++block) {
    int k = add("Constant", {});
    int c = add("Conv", {x, k});
    int pool = add("GlobalAveragePool", {c});
    int s = add("HardSigmoid", {pool});
    x = add("Mul", {c, s});
    if (block == 5) skip_from = x;
  }
  int join = add("Add", {x, skip_from});
  GraphSvg svg = RenderPlacementSvg(g);
  ExpectWellFormedBoxes(svg);
  EXPECT_LE(svg.boxes.size(), 4u);
  std::vector<int> box_of = BoxOf(svg, static_cast<int>(g.nodes.size()));
  EXPECT_NE(box_of[skip_from], box_of[join]) << "the long skip must stay visible";
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    if (g.nodes[v].op == "Constant") {
      EXPECT_EQ(box_of[v], box_of[v + 1]) << "Constant " << v << " joins its consumer";
    }
  }
}

// Branches of a fork stay apart when the graph is too big for one box per branch region, and
// a box never mixes placements.
TEST(GraphSvg, BoxesNeverMixPlacementsOrSegments) {
  PlacementGraph g = Chain(300);
  for (int i = 0; i < 300; ++i) {
    if (i % 37 == 36) g.nodes[i].placement = Placement::kUnsupported;
  }
  GraphSvg svg = RenderPlacementSvg(g);
  ExpectWellFormedBoxes(svg);
  for (const SvgBox& box : svg.boxes) {
    for (int v : box.members) {
      EXPECT_EQ(g.nodes[v].placement, box.placement);
      EXPECT_EQ(g.nodes[v].segment, box.segment);
    }
  }
  EXPECT_EQ(svg.boxes.size(), 17u);  // 8 unsupported nodes split the chain into 9 runs
}

// Structure the rule cannot fold stays cheap: a ladder (every node also reads the one two back)
// is one box; a hub reading every node is folded without a quadratic scan; placements that
// alternate at every node are more boxes than can be drawn, and the picture is left out.
TEST(GraphSvg, PathologicalGraphsStayCheap) {
  PlacementGraph ladder = Chain(20000);
  for (int i = 2; i < 20000; ++i) ladder.nodes[i].inputs.push_back(i - 2);
  PlacementGraph hub = Chain(20000);
  for (int k = 0; k < 19998; ++k) hub.nodes.back().inputs.push_back(k);
  for (PlacementGraph* g : {&ladder, &hub}) {
    auto start = std::chrono::steady_clock::now();
    GraphSvg svg = RenderPlacementSvg(*g);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LE(svg.boxes.size(), 4u);
    EXPECT_LT(s, 2.0);
    ExpectWellFormedBoxes(svg);
  }
  PlacementGraph alternating = Chain(kMaxDrawnBoxes + 10);
  for (size_t i = 1; i < alternating.nodes.size(); i += 2) {
    alternating.nodes[i].placement = Placement::kHost;
  }
  GraphSvg svg = RenderPlacementSvg(alternating);
  EXPECT_TRUE(svg.boxes.empty());
  EXPECT_NE(svg.omitted.find("not drawn"), std::string::npos);
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"node\""), 0u);
  EXPECT_EQ(svg.svg.rfind("<svg", 0), 0u);
}

TEST(GraphSvg, RejectsInputsThatAreNotEarlier) {
  PlacementGraph g = Chain(3);
  g.nodes[1].inputs = {2};
  EXPECT_THROW(RenderPlacementSvg(g), Error);
  g.nodes[1].inputs = {-1};
  EXPECT_THROW(RenderPlacementSvg(g), Error);
}

TEST(GraphSvg, EmptyGraphIsAnEmptyPicture) {
  GraphSvg svg = RenderPlacementSvg(PlacementGraph{});
  EXPECT_TRUE(svg.boxes.empty());
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"node\""), 0u);
  EXPECT_EQ(svg.svg.rfind("<svg", 0), 0u);
}

// Names that break naive escaping. The SVG must parse as XML, and the text a browser shows must
// be each name's DisplayText (Graphviz's \N, \n, \l and entity processing must not apply).
TEST(GraphSvg, HostileNamesAreShownAsWritten) {
  const std::vector<std::string> names = {"a<b>c",
                                          "x & y",
                                          "a&lt;b",
                                          "q\"u'o`te",
                                          "back\\slash",
                                          "\\N\\G\\n\\l",
                                          "line\nbreak",
                                          "bad\xff\xfe utf8",
                                          "emoji \xF0\x9F\x98\x80 €",
                                          "]]></text><script>alert(1)</script>",
                                          "&#45;&amp;"};
  PlacementGraph g;
  g.segments = {{0, "accelerator", "seg <0> & \"one\""}};
  for (size_t i = 0; i < names.size(); ++i) {
    g.nodes.push_back(Node(names[i], i == 1 ? "op&<>" : "Op",
                           i ? std::vector<int>{static_cast<int>(i) - 1} : std::vector<int>{}));
  }
  g.edge_labels[{0, 1}] = "label <&> \\n";
  GraphSvg svg = RenderPlacementSvg(g);
  ExpectWellFormedBoxes(svg);
  EXPECT_EQ(svg.svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.svg.find("\xff"), std::string::npos);

  std::set<std::string> shown = ShownText(svg.svg);
  for (const auto& name : names) {
    std::string text = "text:" + TruncateDisplay(DisplayText(name), 40);
    EXPECT_TRUE(shown.count(text)) << text << " not drawn as written";
  }
  EXPECT_TRUE(shown.count("text:op&<>"));
  EXPECT_TRUE(shown.count("text:seg <0> & \"one\""));
  EXPECT_TRUE(shown.count("text:label <&> \\n"));
  EXPECT_TRUE(shown.count("title:Op a&lt;b\naccelerator"));
  EXPECT_TRUE(shown.count("title:Op \\N\\G\\n\\l\naccelerator"));
}

// gvContextPlugins with the linked-in plugins does not read Graphviz's plugin configuration:
// pointing Graphviz at an empty plugin directory changes nothing.
TEST(GraphSvg, RendersWithoutGraphvizPluginConfiguration) {
  TempDir empty;
  const char* old = std::getenv("GVBINDIR");
  std::string saved = old ? old : "";
  ::setenv("GVBINDIR", empty.path().c_str(), 1);
  GraphSvg svg = RenderPlacementSvg(Chain(5));
  if (old) {
    ::setenv("GVBINDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("GVBINDIR");
  }
  EXPECT_EQ(svg.boxes.size(), 5u);
  EXPECT_EQ(testing::CountOf(svg.svg, "<g class=\"node\""), 5u);
  // Built-in font metrics, not pango's: Helvetica as requested, no font-dependent measurement.
  EXPECT_NE(svg.svg.find("font-family=\"Helvetica,sans-Serif\""), std::string::npos);
}

TEST(HtmlText, DisplayTextMakesEveryByteVisible) {
  EXPECT_EQ(DisplayText("plain/name:0"), "plain/name:0");
  EXPECT_EQ(DisplayText("a\nb\tc\rd\x01\x7f"), "a␊b␉c␍d␁␡");
  EXPECT_EQ(DisplayText("bad\xff\xc3"), "bad⟨0xFF⟩⟨0xC3⟩");
  EXPECT_EQ(DisplayText("\xc0\xaf"), "⟨0xC0⟩⟨0xAF⟩");                 // overlong '/'
  EXPECT_EQ(DisplayText("\xed\xa0\x80"), "⟨0xED⟩⟨0xA0⟩⟨0x80⟩");  // surrogate
  EXPECT_EQ(DisplayText("é€😀"), "é€😀");
  EXPECT_EQ(DisplayText("x\u202Ey"), "x⟨U+202E⟩y");  // right-to-left override
  EXPECT_EQ(DisplayText("\xEE\x80\xA6"), "⟨U+E026⟩");
  EXPECT_EQ(DisplayText("back\\slash"), "back\\slash");
  EXPECT_EQ(EscapeHtml("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  EXPECT_EQ(TruncateDisplay("ééééé", 3), "ééé…");
  EXPECT_EQ(TruncateDisplay("abc", 3), "abc");
}

}  // namespace
}  // namespace porttool::emit
