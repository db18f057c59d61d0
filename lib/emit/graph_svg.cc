#include "lib/emit/graph_svg.h"

#include <fmt/format.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "lib/emit/html_text.h"
#include "lib/util/error.h"

// The two plugin libraries, linked in (libgvplugin_dot_layout, libgvplugin_core). Handing them to
// gvContextPlugins with demand loading off means no config6a lookup (absent when libgvc6's
// postinst did not run) and no pango text-layout plugin (its font metrics depend on the fonts a
// machine has installed, which would change the layout from machine to machine).
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

namespace porttool::emit {
namespace {

const lt_symlist_t kPlugins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {nullptr, nullptr},
};

// Graphviz's own label processing turns "&name;" into the character it names and its SVG writer
// passes "&name;" through unescaped, so an '&' in a name cannot survive either step as itself.
// It travels through Graphviz as this private-use character (DisplayText escapes private-use
// characters, so no name contains it) and becomes "&amp;" in the finished SVG.
constexpr std::string_view kAmpersandStandIn = "\xEE\x80\xA6";  // U+E026

constexpr size_t kMaxLabelChars = 40;

// Graphviz sizes boxes with its built-in Helvetica (Arial) metrics at 12/13/10 points; browsers
// draw the text one point smaller, in a font with those metrics when the machine has one, or a
// narrow fallback, so labels stay inside their boxes whatever the fonts.
constexpr std::string_view kSvgStyle =
    "\n<style>svg.pt-graph text { font-family: Arimo, \"Liberation Sans\", Arial, Helvetica, "
    "\"DejaVu Sans Condensed\", sans-serif; } svg.pt-graph g.node text { font-size: 11px; } "
    "svg.pt-graph g.cluster text { font-size: 12px; } svg.pt-graph g.edge text { font-size: 9px; "
    "}</style>";

const char* CutColor() { return "#c62828"; }

// ---- collapsing -------------------------------------------------------------------------------

struct Key {
  int segment;
  Placement placement;
  bool operator==(const Key&) const = default;
};

Key KeyOf(const PlacedNode& node) { return {node.segment, node.placement}; }

// Producers and consumers of each node, each listed once, ascending.
struct Adjacency {
  std::vector<std::vector<int>> producers;
  std::vector<std::vector<int>> consumers;
};

Adjacency BuildAdjacency(const PlacementGraph& graph) {
  const int n = static_cast<int>(graph.nodes.size());
  Adjacency adj;
  adj.producers.resize(n);
  adj.consumers.resize(n);
  for (int v = 0; v < n; ++v) {
    auto& p = adj.producers[v];
    for (int u : graph.nodes[v].inputs) {
      if (u < 0 || u >= v) {
        ThrowInternal(
            "placement graph: node {} ('{}') reads node {}, which does not come before it", v,
            DisplayText(graph.nodes[v].name), u);
      }
      p.push_back(u);
    }
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (int u : p) adj.consumers[u].push_back(v);
  }
  return adj;
}

// Depth-first topological order of the core nodes (Kahn's algorithm with a stack: the node that
// became ready last goes next, so a branch runs to its end before its sibling starts; among nodes
// made ready together the lowest index goes first).
std::vector<int> DepthFirstOrder(const Adjacency& adj, const std::vector<bool>& core) {
  const int n = static_cast<int>(core.size());
  std::vector<int> pending(n, 0);
  for (int v = 0; v < n; ++v) {
    if (!core[v]) continue;
    for (int u : adj.producers[v]) pending[v] += core[u] ? 1 : 0;
  }
  std::vector<int> stack;
  for (int v = n - 1; v >= 0; --v) {
    if (core[v] && pending[v] == 0) stack.push_back(v);
  }
  std::vector<int> order;
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    order.push_back(u);
    const auto& cons = adj.consumers[u];
    for (auto it = cons.rbegin(); it != cons.rend(); ++it) {
      if (core[*it] && --pending[*it] == 0) stack.push_back(*it);
    }
  }
  return order;
}

struct Partition {
  std::vector<int> box_of;  // node -> box
  int box_count = 0;
};

// Steps 3 and 1 of the rule in graph_svg.h for one span limit; span < 0: step 5 (plain runs).
Partition Collapse(const PlacementGraph& graph, const Adjacency& adj, const std::vector<int>& order,
                   const std::vector<int>& position, const std::vector<bool>& core, int span) {
  const int n = static_cast<int>(graph.nodes.size());
  const int m = static_cast<int>(order.size());
  Partition part;
  part.box_of.assign(n, -1);
  // Last position of the run of equal keys each position starts.
  std::vector<int> run_end(m);
  for (int p = m - 1; p >= 0; --p) {
    bool same = p + 1 < m && KeyOf(graph.nodes[order[p]]) == KeyOf(graph.nodes[order[p + 1]]);
    run_end[p] = same ? run_end[p + 1] : p;
  }
  // A node that broke a scan from start i breaks the scan from every start between i and it
  // too (it reads from before them, or across more than `span`), so later scans stop there.
  int stop = m;
  int i = 0;
  while (i < m) {
    if (stop <= i) stop = m;
    const int limit = span < 0 ? std::min(run_end[i], i + kMaxBoxMembers - 1)
                               : std::min({run_end[i], i + kMaxBoxMembers - 1, stop - 1});
    int best = span < 0 ? limit : i;
    int reach = -1;  // furthest consumer position of the stretch's nodes before j
    for (int j = i + 1; j <= limit && span >= 0; ++j) {
      bool enters_inside = false;
      for (int u : adj.producers[order[j]]) {
        if (core[u] && (position[u] < i || j - position[u] > span)) enters_inside = true;
      }
      if (enters_inside) {
        stop = std::min(stop, j);
        break;
      }
      // An edge leaving past `limit`, or spanning more than `span`, can never end inside a box
      // that starts at i: no later end is valid, so the scan stops.
      bool hopeless = false;
      for (int w : adj.consumers[order[j - 1]]) {
        if (!core[w]) continue;
        reach = std::max(reach, position[w]);
        if (position[w] > limit || position[w] - (j - 1) > span) hopeless = true;
      }
      if (hopeless) break;
      if (reach <= j) best = j;
    }
    for (int k = i; k <= best; ++k) part.box_of[order[k]] = part.box_count;
    ++part.box_count;
    i = best + 1;
  }
  for (int v = 0; v < n; ++v) {
    if (core[v]) continue;
    int box = -1;
    bool one_box = !adj.consumers[v].empty();
    for (int w : adj.consumers[v]) {
      int b = part.box_of[w];
      if (b < 0 || !(KeyOf(graph.nodes[w]) == KeyOf(graph.nodes[v])) || (box >= 0 && b != box)) {
        one_box = false;
        break;
      }
      box = b;
    }
    part.box_of[v] = one_box ? box : part.box_count++;
  }
  return part;
}

// Node -> box for the whole graph (rule in graph_svg.h), boxes numbered by their first member.
std::vector<int> PlanBoxes(const PlacementGraph& graph, const Adjacency& adj,
                           const GraphSvgOptions& options) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> box_of(n);
  if (n <= options.collapse_above) {
    for (int v = 0; v < n; ++v) box_of[v] = v;
    return box_of;
  }
  std::vector<bool> core(n, true);
  for (int v = 0; v < n; ++v) {
    if (adj.producers[v].empty() && !adj.consumers[v].empty()) core[v] = false;
  }
  std::vector<int> order = DepthFirstOrder(adj, core);
  std::vector<int> position(n, -1);
  for (int k = 0; k < static_cast<int>(order.size()); ++k) position[order[k]] = k;

  Partition best;
  for (int span = 1;; span *= 2) {
    Partition part = Collapse(graph, adj, order, position, core, span);
    if (best.box_of.empty() || part.box_count < best.box_count) best = std::move(part);
    if (best.box_count <= options.max_boxes || span >= static_cast<int>(order.size())) break;
  }
  if (best.box_count > kMaxStructuredBoxFactor * std::max(options.max_boxes, 1)) {
    best = Collapse(graph, adj, order, position, core, -1);
  }
  // Renumber by first member so box ids follow the model's own order.
  std::vector<int> renumber(best.box_count, -1);
  int next = 0;
  for (int v = 0; v < n; ++v) {
    int& r = renumber[best.box_of[v]];
    if (r < 0) r = next++;
    box_of[v] = r;
  }
  return box_of;
}

// ---- labels -----------------------------------------------------------------------------------

std::string SingleLabel(const PlacedNode& node) {
  std::string op = DisplayText(node.op);
  std::string name = DisplayText(node.name);
  return name.empty() ? op : op + " " + name;
}

// "37 nodes: 20 Conv, 12 HardSwish, 5 Add" (most frequent first, then by name), and the same
// histogram cut into the lines drawn in the box.
struct Histogram {
  std::string text;
  std::vector<std::string> lines;
};

Histogram OpHistogram(const PlacementGraph& graph, const std::vector<int>& members) {
  std::map<std::string, int> counts;
  for (int v : members) ++counts[DisplayText(graph.nodes[v].op)];
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  // Constants (weights, shapes, scalars) outnumber the ops in exported models and say nothing
  // about what the box computes: they come last.
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    bool ca = a.first == "Constant", cb = b.first == "Constant";
    return ca != cb ? cb : a.second > b.second;
  });
  Histogram h;
  std::string head = fmt::format("{} nodes", members.size());
  h.text = head + ":";
  h.lines.push_back(head);
  constexpr size_t kShown = 4;
  std::string line;
  for (size_t k = 0; k < sorted.size(); ++k) {
    std::string entry = fmt::format("{} {}", sorted[k].second, sorted[k].first);
    h.text += (k ? ", " : " ") + entry;
    if (k >= kShown) continue;
    if (!line.empty() && line.size() + entry.size() > kMaxLabelChars) {
      h.lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + TruncateDisplay(entry, kMaxLabelChars);
  }
  if (sorted.size() > kShown) line += fmt::format(", +{} more", sorted.size() - kShown);
  if (!line.empty()) h.lines.push_back(line);
  return h;
}

// A Graphviz label from display-text lines: backslashes doubled (Graphviz reads \N, \n, \l...),
// '&' replaced by its stand-in, lines joined by Graphviz's centred line break.
std::string GraphvizLabel(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k) out += "\\n";
    for (char c : lines[k]) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '&') {
        out += kAmpersandStandIn;
      } else {
        out += c;
      }
    }
  }
  return out;
}

// ---- Graphviz ---------------------------------------------------------------------------------

std::mutex& GraphvizMutex() {
  static std::mutex mu;
  return mu;
}

std::string* graphviz_messages = nullptr;  // guarded by GraphvizMutex()

int CaptureGraphvizMessage(char* text) {
  if (graphviz_messages && text) *graphviz_messages += text;
  return 0;
}

// Object ids in creation order. Graphviz's default id discipline makes a named object's id the
// address of its interned name and orders subgraphs by id, so the segment clusters (and with
// them the layout) came out in a different order from one run to the next.
struct IdState {
  std::unordered_map<std::string, IDTYPE> ids;
  std::deque<std::string> names;  // name of id 2 * (k + 1); a deque keeps the strings in place
  IDTYPE next_anonymous = 1;      // anonymous objects get odd ids, as in the default discipline
};

void* IdOpen(Agraph_t*, Agdisc_t*) { return new IdState; }
long IdMap(void* state, int, char* name, IDTYPE* id, int create) {
  auto* s = static_cast<IdState*>(state);
  if (!name) {
    *id = s->next_anonymous;
    s->next_anonymous += 2;
    return 1;
  }
  auto it = s->ids.find(name);
  if (it != s->ids.end()) {
    *id = it->second;
    return 1;
  }
  if (!create) return 0;
  s->names.emplace_back(name);
  *id = 2 * s->names.size();
  s->ids.emplace(name, *id);
  return 1;
}
long IdAlloc(void*, int, IDTYPE) { return 0; }  // no caller-chosen ids
void IdFree(void*, int, IDTYPE) {}              // names live until IdClose
char* IdPrint(void* state, int, IDTYPE id) {
  auto* s = static_cast<IdState*>(state);
  if (id % 2 != 0 || id == 0 || id / 2 > s->names.size()) return nullptr;
  return s->names[id / 2 - 1].data();
}
void IdClose(void* state) { delete static_cast<IdState*>(state); }
void IdRegister(void*, int, void*) {}

Agiddisc_t kIdDiscipline = {IdOpen, IdMap, IdAlloc, IdFree, IdPrint, IdClose, IdRegister};
Agdisc_t kDiscipline = {&AgMemDisc, &kIdDiscipline, &AgIoDisc};

// Graphviz takes char* everywhere; these keep the casts in one place.
void Set(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), const_cast<char*>(value.c_str()),
            const_cast<char*>(""));
}
void Default(Agraph_t* g, int kind, const char* name, const char* value) {
  agattr(g, kind, const_cast<char*>(name), const_cast<char*>(value));
}

// Owns a Graphviz context and graph for one render; frees them in the right order on any exit.
class GraphvizSession {
 public:
  GraphvizSession() : previous_handler_(agseterrf(CaptureGraphvizMessage)) {
    previous_level_ = agseterr(AGWARN);  // every message to the handler, none to a tmpfile
    graphviz_messages = &messages_;
    gvc_ = gvContextPlugins(kPlugins, 0);
  }
  ~GraphvizSession() {
    if (graph_) {
      if (laid_out_) gvFreeLayout(gvc_, graph_);
      agclose(graph_);
    }
    if (gvc_) gvFreeContext(gvc_);
    graphviz_messages = nullptr;
    agseterr(previous_level_);
    agseterrf(previous_handler_);
  }
  GraphvizSession(const GraphvizSession&) = delete;
  GraphvizSession& operator=(const GraphvizSession&) = delete;

  GVC_t* gvc() const { return gvc_; }
  Agraph_t* Open(const char* name) {
    graph_ = agopen(const_cast<char*>(name), Agdirected, &kDiscipline);
    return graph_;
  }
  void Layout() {
    if (!gvc_ || gvLayout(gvc_, graph_, "dot") != 0) Fail("layout");
    laid_out_ = true;
  }
  std::string RenderSvg() {
    char* data = nullptr;
    unsigned int length = 0;
    if (gvRenderData(gvc_, graph_, "svg", &data, &length) != 0 || !data) Fail("SVG rendering");
    std::string svg(data, length);
    gvFreeRenderData(data);
    return svg;
  }

 private:
  [[noreturn]] void Fail(const char* what) {
    std::string detail = messages_;
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
    ThrowInternal("graph picture: Graphviz {} failed{}{}", what, detail.empty() ? "" : ": ",
                  DisplayText(detail));
  }

  agusererrf previous_handler_;
  agerrlevel_t previous_level_ = AGWARN;
  std::string messages_;
  GVC_t* gvc_ = nullptr;
  Agraph_t* graph_ = nullptr;
  bool laid_out_ = false;
};

struct BoxEdge {
  std::set<std::string> labels;
  bool cut = false;
};

std::string SegmentTitle(const PlacedSegment& s) {
  if (!s.label.empty()) return DisplayText(s.label);
  return fmt::format("segment {} · {}", s.index, DisplayText(s.role));
}

// What the page's SVG needs beyond what Graphviz writes: attribute order with class first (so
// `<g class="node"` finds every box), data attributes, tooltips in place of Graphviz's object
// names, no prolog or comments, and '&' restored.
struct Decoration {
  std::string attributes;  // appended after id
  std::string title;       // display text for <title>
};

std::string FinishSvg(const std::string& raw, const std::map<std::string, Decoration>& by_id) {
  size_t start = raw.find("<svg");
  if (start == std::string::npos) ThrowInternal("graph picture: Graphviz wrote no <svg> element");
  std::string out;
  out.reserve(raw.size() + raw.size() / 4);
  out += "<svg class=\"pt-graph\" role=\"img\" aria-label=\"placement graph\"";
  size_t i = start + 4;
  size_t open_end = raw.find('>', i);
  if (open_end == std::string::npos) ThrowInternal("graph picture: Graphviz wrote a broken <svg>");
  out.append(raw, i, open_end + 1 - i);
  out += kSvgStyle;
  i = open_end + 1;
  std::string pending_title;  // title for the <title> that follows the last <g> seen
  bool have_title = false;
  while (i < raw.size()) {
    if (raw.compare(i, 4, "<!--") == 0) {
      size_t end = raw.find("-->", i);
      i = end == std::string::npos ? raw.size() : end + 3;
      if (i < raw.size() && raw[i] == '\n') ++i;
      continue;
    }
    if (raw.compare(i, 7, "<g id=\"") == 0) {
      size_t id_end = raw.find('"', i + 7);
      std::string id = raw.substr(i + 7, id_end - (i + 7));
      constexpr std::string_view kClass = " class=\"";
      if (raw.compare(id_end + 1, kClass.size(), kClass) == 0) {
        size_t class_start = id_end + 1 + kClass.size();
        size_t class_end = raw.find('"', class_start);
        std::string cls = raw.substr(class_start, class_end - class_start);
        auto it = by_id.find(id);
        out += fmt::format("<g class=\"{}\" id=\"{}\"", cls, id);
        if (it != by_id.end()) out += it->second.attributes;
        have_title = it != by_id.end();
        if (have_title) pending_title = it->second.title;
        i = class_end + 1;
        continue;
      }
    }
    if (have_title && raw.compare(i, 7, "<title>") == 0) {
      size_t end = raw.find("</title>", i);
      out += "<title>" + EscapeHtml(pending_title) + "</title>";
      i = end == std::string::npos ? raw.size() : end + 8;
      have_title = false;
      continue;
    }
    if (raw.compare(i, kAmpersandStandIn.size(), kAmpersandStandIn) == 0) {
      out += "&amp;";
      i += kAmpersandStandIn.size();
      continue;
    }
    out += raw[i++];
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

const char* PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kAccelerator:
      return "accelerator";
    case Placement::kHost:
      return "host";
    case Placement::kUnsupported:
      return "unsupported";
  }
  return "?";
}

const char* PlacementFill(Placement placement) {
  switch (placement) {
    case Placement::kAccelerator:
      return "#b9e4a8";  // green
    case Placement::kHost:
      return "#a9cdf0";  // blue
    case Placement::kUnsupported:
      return "#f7a1a1";  // red
  }
  return "#dddddd";
}

const char* PlacementStroke(Placement placement) {
  switch (placement) {
    case Placement::kAccelerator:
      return "#2e7d32";
    case Placement::kHost:
      return "#1f5fa8";
    case Placement::kUnsupported:
      return "#b71c1c";
  }
  return "#555555";
}

GraphSvg RenderPlacementSvg(const PlacementGraph& graph, const GraphSvgOptions& options) {
  const int n = static_cast<int>(graph.nodes.size());
  Adjacency adj = BuildAdjacency(graph);
  std::vector<int> box_of = PlanBoxes(graph, adj, options);

  GraphSvg result;
  result.node_count = n;
  int box_count = 0;
  for (int b : box_of) box_count = std::max(box_count, b + 1);
  if (box_count > kMaxDrawnBoxes) {
    result.omitted = fmt::format(
        "{} nodes still make {} boxes after collapsing (segments and placements alternate too "
        "often); more than {} are not drawn",
        n, box_count, kMaxDrawnBoxes);
    result.svg = fmt::format(
        "<svg class=\"pt-graph\" role=\"img\" aria-label=\"placement graph\" width=\"640\" "
        "height=\"40\" viewBox=\"0 0 640 40\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"8\" "
        "y=\"24\" font-size=\"13\">{}</text></svg>",
        EscapeHtml(result.omitted));
    return result;
  }
  result.boxes.resize(box_count);
  for (int v = 0; v < n; ++v) {
    SvgBox& box = result.boxes[box_of[v]];
    if (box.members.empty()) {
      box.placement = graph.nodes[v].placement;
      box.segment = graph.nodes[v].segment;
    }
    box.members.push_back(v);
    box.member_names.push_back(graph.nodes[v].name);
    box.member_ops.push_back(graph.nodes[v].op);
  }

  std::map<std::pair<int, int>, BoxEdge> edges;
  for (int v = 0; v < n; ++v) {
    for (int u : adj.producers[v]) {
      int bu = box_of[u], bv = box_of[v];
      if (bu == bv) continue;
      BoxEdge& e = edges[{bu, bv}];
      e.cut = e.cut || graph.nodes[u].segment != graph.nodes[v].segment;
      auto label = graph.edge_labels.find({u, v});
      if (label != graph.edge_labels.end() && !label->second.empty()) {
        e.labels.insert(DisplayText(label->second));
      }
    }
  }

  std::lock_guard<std::mutex> lock(GraphvizMutex());
  GraphvizSession session;
  Agraph_t* g = session.Open("placement");
  Set(g, "id", "pt_graph");
  Set(g, "rankdir", "TB");
  Set(g, "newrank", "true");
  Set(g, "nodesep", "0.25");
  Set(g, "ranksep", "0.35");
  Set(g, "fontname", "Helvetica");
  Set(g, "fontsize", "13");
  Set(g, "outputorder", "edgesfirst");  // boxes drawn over edges, so clicks land on boxes
  Default(g, AGNODE, "shape", "box");
  Default(g, AGNODE, "style", "filled,rounded");
  Default(g, AGNODE, "fontname", "Helvetica");
  Default(g, AGNODE, "fontsize", "12");
  Default(g, AGNODE, "margin", "0.12,0.05");
  Default(g, AGNODE, "height", "0.3");
  Default(g, AGNODE, "peripheries", "1");
  Default(g, AGEDGE, "fontname", "Helvetica");
  Default(g, AGEDGE, "fontsize", "10");
  Default(g, AGEDGE, "color", "#666666");
  Default(g, AGEDGE, "arrowsize", "0.6");

  std::map<std::string, Decoration> decorations;
  decorations["pt_graph"] = {"", "placement graph"};

  // One cluster per segment that holds a box, in the order segments are listed (segments that
  // boxes name but the list lacks come after, by index).
  std::map<int, Agraph_t*> cluster_of;
  std::vector<PlacedSegment> segments = graph.segments;
  std::set<int> listed;
  for (const auto& s : segments) listed.insert(s.index);
  std::set<int> used;
  for (const auto& box : result.boxes) {
    if (box.segment >= 0) used.insert(box.segment);
  }
  for (int s : used) {
    if (!listed.count(s)) segments.push_back({s, "", ""});
  }
  int cluster_count = 0;
  for (const auto& s : segments) {
    if (!used.count(s.index) || cluster_of.count(s.index)) continue;
    std::string name = fmt::format("cluster_{}", cluster_count);
    std::string id = fmt::format("pt_seg_{}", cluster_count);
    ++cluster_count;
    Agraph_t* c = agsubg(g, name.data(), 1);
    cluster_of[s.index] = c;
    bool host = s.role == "host";
    std::string title = SegmentTitle(s);
    Set(c, "id", id);
    Set(c, "label", GraphvizLabel({TruncateDisplay(title, 60)}));
    Set(c, "labeljust", "l");
    Set(c, "style", "rounded,filled");
    Set(c, "fillcolor", host ? "#f1f6fc" : "#f3faf0");
    Set(c, "color", host ? "#1f5fa8" : "#2e7d32");
    decorations[id] = {fmt::format(" data-segment=\"{}\"", s.index), title};
  }

  std::vector<Agnode_t*> gv_nodes(box_count);
  for (int k = 0; k < box_count; ++k) {
    SvgBox& box = result.boxes[k];
    box.id = fmt::format("pt_box_{}", k);
    std::vector<std::string> lines;
    std::string title;
    if (box.collapsed()) {
      Histogram h = OpHistogram(graph, box.members);
      box.label = h.text;
      lines = h.lines;
      title = h.text;
      constexpr size_t kTitleNames = 12;
      for (size_t m = 0; m < box.members.size() && m < kTitleNames; ++m) {
        title += "\n" + SingleLabel(graph.nodes[box.members[m]]);
      }
      if (box.members.size() > kTitleNames) {
        title +=
            fmt::format("\n… {} more (listed below the picture)", box.members.size() - kTitleNames);
      }
    } else {
      const PlacedNode& node = graph.nodes[box.members[0]];
      box.label = SingleLabel(node);
      lines.push_back(TruncateDisplay(DisplayText(node.op), kMaxLabelChars));
      std::string name = DisplayText(node.name);
      if (!name.empty()) lines.push_back(TruncateDisplay(name, kMaxLabelChars));
      title = box.label;
    }
    title += fmt::format("\n{}", PlacementName(box.placement));
    auto cluster = cluster_of.find(box.segment);
    Agraph_t* parent = cluster == cluster_of.end() ? g : cluster->second;
    std::string name = fmt::format("b{}", k);
    Agnode_t* node = agnode(parent, name.data(), 1);
    gv_nodes[k] = node;
    Set(node, "id", box.id);
    Set(node, "label", GraphvizLabel(lines));
    Set(node, "fillcolor", PlacementFill(box.placement));
    Set(node, "color", PlacementStroke(box.placement));
    if (box.collapsed()) Set(node, "peripheries", "2");
    if (box.placement == Placement::kUnsupported) Set(node, "penwidth", "2");
    std::string attributes =
        fmt::format(" data-box=\"{}\" data-placement=\"{}\" data-segment=\"{}\"", k,
                    PlacementName(box.placement), box.segment);
    if (box.collapsed()) attributes += fmt::format(" data-members=\"{}\"", box.members.size());
    decorations[box.id] = {attributes, title};
  }

  int edge_count = 0;
  for (const auto& [ends, e] : edges) {
    std::string id = fmt::format("pt_edge_{}", edge_count);
    ++edge_count;
    Agedge_t* edge = agedge(g, gv_nodes[ends.first], gv_nodes[ends.second], nullptr, 1);
    Set(edge, "id", id);
    std::vector<std::string> labels(e.labels.begin(), e.labels.end());
    std::string joined;
    for (const auto& l : labels) joined += (joined.empty() ? "" : "; ") + l;
    if (!joined.empty()) Set(edge, "label", GraphvizLabel({TruncateDisplay(joined, 48)}));
    std::string attributes;
    if (e.cut) {
      ++result.cut_count;
      Set(edge, "color", CutColor());
      Set(edge, "fontcolor", CutColor());
      Set(edge, "style", "dashed,bold");
      Set(edge, "penwidth", "2");
      attributes = " data-cut=\"1\"";
    }
    std::string title = result.boxes[ends.first].label + " → " + result.boxes[ends.second].label;
    if (!joined.empty()) title += "\n" + joined;
    decorations[id] = {attributes, title};
  }

  session.Layout();
  result.svg = FinishSvg(session.RenderSvg(), decorations);
  return result;
}

}  // namespace porttool::emit
