// DiffStage: `porttool diff A B` as one call. Matches the nodes of two models
// (lib/analysis/graph_match.h: by name, then by structure, so renamed and re-ordered graphs still
// match) and reports what differs: IR version and opsets, graph inputs and outputs (dtype,
// shape), nodes only in A (removed, each with what became of it: folded into a constant, fused
// into or bypassed by the node that now feeds its consumer), nodes only in B (added), matched
// nodes whose attributes or inputs differ (changed), and the weights those inputs read, by value
// (dtype, dims, max abs difference). Names alone never make a difference. Optionally both models
// run on the same inputs and every matched tensor is compared (runtime::CompareModels with the
// matching's name map). DiffJson, DiffText and DiffHtml present the result; the page is laid out
// like port's report.html, with the two graphs side by side and changed nodes coloured.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/compare.h"
#include "lib/shape/input_shapes.h"

namespace porttool::stages {

struct DiffOptions {
  shape::InputShapes input_shapes;  // pinned on both models before anything else
  // Run both models and compare every matched tensor. Inputs: the first sample of `data_dir`
  // (`<id>.<input>.npy`, port's layout) when given, else random from `seed`.
  bool numeric = false;
  std::filesystem::path data_dir;
  uint64_t seed = 0;
  runtime::CompareOptions compare;  // tolerances, session, scratch directory
};

struct DiffNode {
  int index = -1;
  std::string label;  // the node's name, or "#N (Op)" when it has none
  std::string op;     // "Conv", "com.microsoft:Gelu"
};

struct AttributeChange {
  std::string name, a, b;  // values as text; "(absent)" on the side that lacks it
};

// A weight read at the same input of two matched nodes, whose value differs.
struct ValueChange {
  std::string a_name, b_name;
  std::string a_type, b_type;     // "float32[16,3,3,3]"
  std::optional<double> max_abs;  // when dtype and dims agree
};

struct InputChange {
  int position = 0;
  std::string a, b;  // where the input comes from, in words
  std::optional<ValueChange> value;
};

struct ChangedNode {
  DiffNode a, b;
  std::vector<AttributeChange> attributes;
  std::vector<InputChange> inputs;
};

struct RemovedNode {
  DiffNode node;
  std::string fate;  // "fused into 'conv' (Conv)", "folded into constant 'w'", ...
};

struct IoChange {
  std::string kind;    // "input" | "output"
  std::string change;  // "added" | "removed" | "changed"
  std::string a_name, b_name, a_type, b_type;
};

struct NumericDiff {
  runtime::ModelComparison comparison;         // tensors under B's names
  std::map<std::string, std::string> a_names;  // B's tensor name -> A's
  std::string inputs;                          // "random (seed 0)" | "sample 'x' of DIR"
};

struct ModelDiff {
  std::vector<std::string> header;  // "ir_version: 7 -> 8", "opset ai.onnx: 11 -> 13"
  std::vector<IoChange> io;
  int nodes_a = 0, nodes_b = 0;
  int matched = 0, by_name = 0, by_structure = 0, by_neighbours = 0;
  std::vector<RemovedNode> removed;  // A's topological order
  std::vector<DiffNode> added;       // B's topological order
  std::vector<ChangedNode> changed;  // A's topological order
  std::vector<ValueChange> values;   // each pair of weights once
  std::optional<NumericDiff> numeric;
  // Per node of A and of B: 0 unchanged, 1 changed, 2 removed (A) or added (B); for the page.
  std::vector<int> state_a, state_b;

  bool StructureSame() const;
  // Structure the same and, when the models ran, every output within tolerance.
  bool Same() const;
};

// Error(kBadInput) for a graph with a cycle; the executor's errors when numeric.
ModelDiff DiffStage(const io::Model& a, const io::Model& b, const DiffOptions& options);

// {"same", "summary": {...}, "header", "io", "removed", "added", "changed", "values",
//  "numeric"?}: the `diff --json` shape (docs/cli/diff.md).
nlohmann::json DiffJson(const ModelDiff& diff);

// The text report: summary, then each list up to `limit` entries ("and N more").
std::string DiffText(const ModelDiff& diff, size_t limit);

// The self-contained HTML page (lib/emit/report_html.h) with both graphs, Constant nodes left
// out of the picture, coloured by state. `name_a`, `name_b` label the two sides.
std::string DiffHtml(const ModelDiff& diff, const io::Model& a, const io::Model& b,
                     const std::string& name_a, const std::string& name_b);

}  // namespace porttool::stages
