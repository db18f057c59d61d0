// inline-if: an If whose condition is a constant becomes the nodes of the branch it takes.
//
// Before: c = Equal(sr, 16000)        [sr: an initializer once its value is given]
//         out = If(c) then={ y = Relu(x); return y } else={ ... }
// After:  c = Equal(sr, 16000)        (folded and removed by fold-constants)
//         out = Relu(x)               [the branch's nodes in the If's place]
//
// Every name the branch defines (node outputs, its initializers) is renamed to a fresh name
// prefixed with the If's name ("sr_if/y"), so it collides with nothing in the model, nested
// bodies included, and two inlined branches that both define "y" stay apart; the branch output
// that a node of the branch produces is renamed to the If's output itself, the others (an outer
// tensor, a branch initializer, one tensor returned twice) are wired through an Identity. Names
// the branch reads from the outer scope stay as they are; captures inside the branch's own nested
// bodies are renamed with it (unless a body defines the name itself). The branch's initializers
// and value_info move to the main graph.
//
// Preconditions (otherwise the If is kept and the reason noted, naming what the condition depends
// on): ONNX domain; the condition is a one-element constant (an initializer or Constant node, as
// fold-constants leaves it); the branch has no inputs, no sparse initializers and as many outputs
// as the If. Only the main graph's Ifs are looked at: a nested If reaches the main graph when its
// parent is inlined, and is inlined in the same run when its condition is constant already, or in
// the next round of simplify's fixed point once fold-constants has made it constant (a condition
// computed from shapes: Shape/Size/Equal/Not chains after the input shapes are pinned).
// Why: NPU converters take If only on a constant condition (rknn-toolkit2) or not at all, and a
// branch that is never taken still blocks static shapes; voice-activity models (Silero VAD) branch
// on a sample-rate input and on shapes, two dozen Ifs deep.
#include "passes/inline_if.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "lib/ir/constants.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/rewrite.h"
#include "lib/util/strings.h"

namespace porttool::passes {
namespace {

// The If's name for notes and the prefix of renamed tensors: unnamed Ifs by their first output.
std::string IfLabel(const onnx::NodeProto& node) {
  if (!node.name().empty()) return node.name();
  return "If_" + (node.output_size() ? node.output(0) : std::string("?"));
}

const onnx::GraphProto* Branch(const onnx::NodeProto& node, const char* name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// The graph inputs a tensor is computed from, split by whether their value or only their shape
// reaches it (through Shape/Size): what the user must give to make the condition constant.
struct Dependencies {
  std::set<std::string> values, shapes;
};

Dependencies DependenciesOf(const ir::GraphView& view, const std::string& tensor) {
  Dependencies deps;
  std::set<std::pair<std::string, bool>> seen;
  std::vector<std::pair<std::string, bool>> work = {{tensor, false}};
  while (!work.empty()) {
    auto [name, shape_only] = work.back();
    work.pop_back();
    if (name.empty() || !seen.insert({name, shape_only}).second) continue;
    if (view.GraphInput(name) && !view.Initializer(name)) {
      (shape_only ? deps.shapes : deps.values).insert(name);
      continue;
    }
    int producer = view.Producer(name);
    if (producer < 0) continue;
    const auto& node = view.node(producer);
    bool through_shape = node.op_type() == "Shape" || node.op_type() == "Size";
    for (const auto& read : view.NodeReads(producer)) {
      work.push_back({read, shape_only || through_shape});
    }
  }
  return deps;
}

// Inputs small enough to be settings rather than data (a sample rate, a mode flag, a window
// length): giving their value is a reasonable fix; for a larger input the branch is data-driven.
constexpr int64_t kSettingElements = 64;

bool LooksLikeASetting(const ir::GraphView& view, const std::string& input) {
  const auto* vi = view.GraphInput(input);
  auto dims = vi ? ir::StaticShape(vi->type()) : std::nullopt;
  return dims && ir::ElementCount(*dims) <= kSettingElements;
}

std::string NotConstantReason(const ir::GraphView& view, const std::string& cond) {
  Dependencies deps = DependenciesOf(view, cond);
  std::vector<std::string> parts;
  if (!deps.values.empty()) {
    bool settings = std::all_of(deps.values.begin(), deps.values.end(),
                                [&](const auto& name) { return LooksLikeASetting(view, name); });
    parts.push_back("the value of graph input(s) " +
                    util::Join({deps.values.begin(), deps.values.end()}, ", ") +
                    (settings ? " (give the value to inline it)"
                              : " (the data decides the branch at run time)"));
  }
  if (!deps.shapes.empty()) {
    // A static shape folds in fold-constants' next sweep (simplify runs it again after
    // inlining); only a dynamic one needs the user.
    bool all_static = std::all_of(deps.shapes.begin(), deps.shapes.end(), [&](const auto& name) {
      const auto* vi = view.GraphInput(name);
      return vi && ir::StaticShape(vi->type());
    });
    parts.push_back("the shape of graph input(s) " +
                    util::Join({deps.shapes.begin(), deps.shapes.end()}, ", ") +
                    (all_static ? " (static: constant once folded)" : " (pin the input shape)"));
  }
  std::string on = parts.empty() ? "nodes that are not constant" : util::Join(parts, " and ");
  return fmt::format("its condition '{}' is computed at run time from {}", cond, on);
}

// Which branch a constant-condition If takes, or why it is kept.
std::variant<bool, std::string> TakenBranch(const io::Model& model, const ir::GraphView& view,
                                            const ir::ConstantLookup& constants,
                                            const onnx::NodeProto& node) {
  if (node.input_size() != 1 || node.input(0).empty()) return std::string("it has no condition");
  const std::string& cond = node.input(0);
  const auto* value = constants.Find(cond);
  if (!value) return NotConstantReason(view, cond);
  auto numbers = ir::ConstantAsDoubles(model, *value);
  if (!numbers || numbers->size() != 1) {
    return fmt::format("its condition '{}' is a constant of {} elements, not one", cond,
                       numbers ? numbers->size() : 0);
  }
  bool taken = numbers->front() != 0;
  const auto* branch = Branch(node, taken ? "then_branch" : "else_branch");
  if (!branch) return std::string("it has no ") + (taken ? "then_branch" : "else_branch");
  if (branch->input_size() > 0) return std::string("its branch declares inputs");
  if (branch->sparse_initializer_size() > 0) {
    return std::string("its branch has sparse initializers");
  }
  if (branch->output_size() != node.output_size()) {
    return fmt::format("its branch has {} outputs and the If {}", branch->output_size(),
                       node.output_size());
  }
  return taken;
}

// The taken branch, renamed and wired to the If's outputs: the nodes that replace the If.
class BranchInliner {
 public:
  BranchInliner(onnx::GraphProto& graph, ir::NameGenerator& names) : graph_(graph), names_(names) {}

  std::vector<onnx::NodeProto> Inline(const onnx::NodeProto& node, onnx::GraphProto branch) {
    std::string prefix = IfLabel(node) + "/";
    std::unordered_map<std::string, std::string> renames;
    std::unordered_set<std::string> produced;
    for (const auto& t : branch.initializer()) renames[t.name()] = names_.Tensor(prefix + t.name());
    for (const auto& n : branch.node()) {
      for (const auto& out : n.output()) {
        if (out.empty()) continue;
        produced.insert(out);
        renames[out] = names_.Tensor(prefix + out);
      }
    }
    // A branch output its own node produces becomes the If's output name; the rest need an
    // Identity (outer tensors keep their name, and one tensor cannot carry two names).
    std::vector<std::pair<std::string, std::string>> identities;  // (source in branch, If output)
    std::unordered_set<std::string> wired;
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& b = branch.output(i).name();
      const std::string& o = node.output(i);
      if (o.empty()) continue;
      if (produced.count(b) && wired.insert(b).second) {
        renames[b] = o;
      } else {
        identities.push_back({b, o});
      }
    }
    ir::RenameReads(branch, renames);
    std::vector<onnx::NodeProto> nodes;
    for (auto& n : *branch.mutable_node()) {
      for (auto& out : *n.mutable_output()) {
        if (!out.empty()) out = renames.at(out);
      }
      if (!n.name().empty()) n.set_name(names_.Node(prefix + n.name()));
      nodes.push_back(std::move(n));
    }
    for (const auto& [source, output] : identities) {
      auto it = renames.find(source);
      onnx::NodeProto identity;
      identity.set_op_type("Identity");
      identity.set_name(names_.Node(prefix + "output_" + output));
      identity.add_input(it == renames.end() ? source : it->second);
      identity.add_output(output);
      nodes.push_back(std::move(identity));
    }
    MoveInitializersAndTypes(branch, renames, node);
    return nodes;
  }

 private:
  void MoveInitializersAndTypes(onnx::GraphProto& branch,
                                const std::unordered_map<std::string, std::string>& renames,
                                const onnx::NodeProto& node) {
    std::unordered_set<std::string> if_outputs(node.output().begin(), node.output().end());
    for (auto& t : *branch.mutable_initializer()) {
      std::string name = renames.at(t.name());
      ir::AddInitializer(graph_, std::move(t), name);
    }
    for (auto& vi : *branch.mutable_value_info()) {
      auto it = renames.find(vi.name());
      if (it == renames.end() || if_outputs.count(it->second)) continue;  // the outer graph's
      vi.set_name(it->second);
      *graph_.add_value_info() = std::move(vi);
    }
  }

  onnx::GraphProto& graph_;
  ir::NameGenerator& names_;
};

// One sweep: every main-graph If with a constant condition is inlined. Returns how many were, each
// described in `notes`; `kept` receives the reason for each If left in place.
int InlineSweep(io::Model& model, std::map<std::string, std::string>& kept,
                std::vector<std::string>& notes) {
  auto& graph = *model.proto.mutable_graph();
  if (!ir::HasOnnxOp(graph, {"If"})) return 0;
  std::map<int, bool> taken;  // node index -> then_branch
  {
    ir::GraphView view(graph);
    ir::ConstantLookup constants(view);
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& node = graph.node(i);
      if (node.op_type() != "If" || !ir::IsOnnxDomain(node.domain())) continue;
      auto branch = TakenBranch(model, view, constants, node);
      if (auto* reason = std::get_if<std::string>(&branch)) {
        kept[IfLabel(node)] = *reason;
      } else {
        taken[i] = std::get<bool>(branch);
      }
    }
  }
  if (taken.empty()) return 0;
  ir::NameGenerator names(graph);
  BranchInliner inliner(graph, names);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < graph.node_size(); ++i) {
    auto it = taken.find(i);
    if (it == taken.end()) {
      nodes.Add()->Swap(graph.mutable_node(i));
      continue;
    }
    const auto& node = graph.node(i);
    const char* branch = it->second ? "then_branch" : "else_branch";
    std::vector<onnx::NodeProto> inlined = inliner.Inline(node, *Branch(node, branch));
    notes.push_back(fmt::format("inlined If '{}': its condition '{}' is constant {}, {} ({} nodes)",
                                IfLabel(node), node.input(0), it->second ? "true" : "false", branch,
                                inlined.size()));
    for (auto& n : inlined) nodes.Add()->Swap(&n);
  }
  graph.mutable_node()->Swap(&nodes);
  return static_cast<int>(taken.size());
}

}  // namespace

PassResult InlineIfPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  PassResult result;
  std::map<std::string, std::string> kept;
  // Each sweep removes one level of If: the Ifs of an inlined branch whose conditions are already
  // constant go in the next sweep. The total number of Ifs falls with every sweep, so this ends.
  for (int inlined; (inlined = InlineSweep(model, kept, result.notes)) > 0;) {
    result.changes += inlined;
    kept.clear();
  }
  for (const auto& [node, reason] : kept) {
    result.notes.push_back(fmt::format("kept If '{}': {}", node, reason));
  }
  return result;
}

}  // namespace porttool::passes
