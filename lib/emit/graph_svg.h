// The placement graph as an SVG picture for the port report: every node of the model coloured by
// where it runs (accelerator, host, unsupported), each pipeline segment drawn as a labelled
// cluster, and the cuts (edges between segments) drawn bold, red and dashed with their labels
// (bridge sizes). Graphviz's dot library lays it out in memory, with its dot layout and core
// (SVG) plugins linked in rather than found through the plugin configuration file: the library
// then works on a machine where that file was never written, and text is measured with
// Graphviz's built-in font metrics, so the same graph gives the same bytes on every machine.
// Large graphs are collapsed into boxes (rule below) so a 1000-node model stays readable; the
// page lists each collapsed box's members (report_html.h).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace porttool::emit {

enum class Placement { kAccelerator, kHost, kUnsupported };

// "accelerator", "host", "unsupported".
const char* PlacementName(Placement placement);
// Box fill and outline colours ("#rrggbb"); the page's legend uses the same values.
const char* PlacementFill(Placement placement);
const char* PlacementStroke(Placement placement);

struct PlacedNode {
  std::string name;  // node name: any bytes (shown through DisplayText, html_text.h)
  std::string op;    // "Conv", "com.microsoft:Gelu"
  Placement placement = Placement::kAccelerator;
  int segment = -1;         // PlacedSegment::index of the segment it runs in; -1: none
  std::vector<int> inputs;  // indices of the nodes producing its inputs; may repeat
};

struct PlacedSegment {
  int index = 0;
  std::string role;   // "accelerator" | "host"
  std::string label;  // cluster title; empty: "segment <index> · <role>"
};

struct PlacementGraph {
  std::vector<PlacedNode> nodes;  // topological order: every input index is below the node's own
  std::vector<PlacedSegment> segments;
  // Text drawn on an edge, keyed by (producer node, consumer node), e.g. a bridge size on a cut.
  // When several node edges become one box edge, their distinct labels are joined with "; ".
  std::map<std::pair<int, int>, std::string> edge_labels;
};

// Collapsing, applied only when the graph has more than `collapse_above` nodes:
//  1. Source nodes (no input produced by another node: Constants, the first op after a graph
//     input) are set aside. Each one later joins the box that holds all of its consumers when
//     that box has its segment and placement; otherwise it is a box of its own.
//  2. The other nodes are put in a depth-first topological order (a branch is followed to its
//     end before its sibling starts), so every branch is one stretch of that order.
//  3. Scanning the order, each box is the longest stretch starting at the first node not yet in
//     a box such that (a) its nodes share segment and placement, (b) edges enter it only at its
//     first node and leave it only from its last (a fork or join is hidden only when all of its
//     paths are inside), (c) no edge inside it spans more than S positions of the order, and
//     (d) it holds at most kMaxBoxMembers nodes (a bound on the scan, not on real models).
//  4. S is the smallest of 1, 2, 4, 8, ... for which there are at most `max_boxes` boxes (or the
//     one giving the fewest boxes when none does). S = 1 merges plain chains; a larger S also
//     swallows short forks such as squeeze-excitation and residual blocks, while long skip
//     connections (the feature maps a backbone sends to a neck, U-Net skips) span more than S and
//     so stay edges between boxes; a cut always ends a box.
//  5. If that still leaves more than kMaxStructuredBoxFactor * max_boxes boxes (structure the
//     rule cannot fold, such as a long ladder of criss-crossing edges), the boxes become the
//     plain runs of one segment and placement in that order instead: what they hide is then
//     listed, not drawn, but the picture stays small enough to lay out and read.
// Constants are listed last in a box's op histogram. On PP-OCRv4 det (672 nodes, 342 of them
// Constants, faked into 3 segments) this settles at S = 8 with 17 boxes: the backbone stages,
// the neck's blocks and the cuts (lib/emit/report_html_test.cc measures it).
inline constexpr int kMaxBoxMembers = 1 << 16;
inline constexpr int kMaxStructuredBoxFactor = 4;
// Past this many boxes dot takes seconds and the picture says nothing; it is not drawn.
inline constexpr int kMaxDrawnBoxes = 2000;

struct GraphSvgOptions {
  int collapse_above = 60;  // collapse when the graph has more nodes than this
  int max_boxes = 40;       // and aim for at most this many boxes
};

// One Graphviz node of the picture: a single model node, or a collapsed run of them.
struct SvgBox {
  std::string id;  // id of its <g class="node"> element: "pt_box_<k>" (k = position in boxes)
  Placement placement = Placement::kAccelerator;
  int segment = -1;
  std::vector<int> members;               // node indices, ascending
  std::vector<std::string> member_names;  // PlacedNode::name of each member (raw bytes)
  std::vector<std::string> member_ops;    // PlacedNode::op of each member
  std::string label;                      // plain text: "Conv conv_3" or "37 nodes: 20 Conv, ..."
  bool collapsed() const { return members.size() > 1; }
};

struct GraphSvg {
  // An <svg> element ready to inline in HTML: no XML prolog, DOCTYPE or comments; a <style>
  // inside it sets the fonts its text is drawn in. Each box is one `<g class="node"
  // id="pt_box_<k>" data-box="<k>" data-placement="..." data-segment="..." [data-members="N"]>`
  // whose <title> (the browser's tooltip) holds its label, up to 12 member names and its
  // placement; clusters are `<g class="cluster" id="pt_seg_<k>" data-segment="<index>">`, edges
  // `<g class="edge" id="pt_edge_<k>">` (a cut also has data-cut="1").
  std::string svg;
  std::vector<SvgBox> boxes;  // in the order of their first member
  int node_count = 0;         // PlacementGraph::nodes.size()
  int cut_count = 0;          // box edges drawn as cuts
  // Why there is no picture (more than kMaxDrawnBoxes boxes); svg is then a one-line note and
  // boxes is empty. Empty when the graph was drawn.
  std::string omitted;
};

// Lays out and renders the graph. Throws Error(kInternal) when an input index is not below its
// node's own or Graphviz fails (its messages are in the error; it never prints). Graphviz keeps
// process-wide state, so calls are serialised by a mutex.
GraphSvg RenderPlacementSvg(const PlacementGraph& graph, const GraphSvgOptions& options = {});

}  // namespace porttool::emit
