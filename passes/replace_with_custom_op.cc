// replace-with-custom-op: the first step of the custom-operator path.
//
// Before: a = Div(x, c); b = Erf(a); y = Mul(b, x)        node='Div_0,Erf_0,Mul_0'
// After:  y = com.example.MyGelu(x, c)                    + opset_import com.example:1
//
// Preconditions: every node exists (a name, or "#N" for the node at position N of the graph as
// the pass sees it; Error kUsage with the closest names otherwise); the set is
// convex (no path leaves the set and comes back, which would make a cycle; Error kUsage); it is
// in the main graph. The new node reads the set's boundary inputs in first-use order and writes
// every tensor the rest of the graph (or the graph outputs) reads, keeping their names.
// Why: a custom kernel on the target replaces exactly this boundary; the model then says so.
// Numerics cannot be checked here: the executor has no kernel for the new op by construction.
#include "passes/replace_with_custom_op.h"

#include <fmt/format.h>

#include <set>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/node_names.h"
#include "lib/ir/rewrite.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::passes {
namespace {

std::set<int> ResolveNodes(const ir::GraphView& view, const std::string& spec) {
  std::set<int> nodes;
  for (auto name : util::Split(spec, ',')) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    nodes.insert(ir::ResolveNodeRef(view, name, "replace-with-custom-op: node"));
  }
  return nodes;
}

// Throws when a path leaves `set` and re-enters it.
void CheckConvex(const ir::GraphView& view, const std::set<int>& set) {
  std::vector<int> stack;
  std::set<int> seen;
  for (int n : set) {
    for (const auto& out : view.node(n).output()) {
      for (int c : view.Consumers(out)) {
        if (!set.count(c) && seen.insert(c).second) stack.push_back(c);
      }
    }
  }
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    for (const auto& out : view.node(n).output()) {
      for (int c : view.Consumers(out)) {
        if (set.count(c)) {
          ThrowUsage(
              "replace-with-custom-op: node '{}' leaves the set and feeds '{}' back into "
              "it; add it to the set or choose another boundary",
              ir::NodeLabel(view, n), ir::NodeLabel(view, c));
        }
        if (seen.insert(c).second) stack.push_back(c);
      }
    }
  }
}

}  // namespace

PassResult ReplaceWithCustomOpPass::Run(io::Model& model, const PassOptions& options,
                                        PassContext&) const {
  std::string domain = options.Get("domain"), op = options.Get("op");
  if (!options.Has("node") || domain.empty() || op.empty() || ir::IsOnnxDomain(domain)) {
    ThrowUsage("replace-with-custom-op needs node=NAME, domain=D (not the ONNX domain) and op=T");
  }
  auto& graph = *model.proto.mutable_graph();
  ir::GraphView view(graph);
  std::set<int> set = ResolveNodes(view, options.Get("node"));
  CheckConvex(view, set);
  std::set<std::string> produced;
  for (int n : set) produced.insert(view.node(n).output().begin(), view.node(n).output().end());
  onnx::NodeProto custom;
  custom.set_op_type(op);
  custom.set_domain(domain);
  custom.set_name(ir::NameGenerator(graph).Node(view.node(*set.begin()).name() + "/" + op));
  std::set<std::string> inputs;
  for (int n : set) {
    for (const auto& in : view.NodeReads(n)) {
      if (!in.empty() && !produced.count(in) && inputs.insert(in).second) custom.add_input(in);
    }
    for (const auto& out : view.node(n).output()) {
      bool outside = view.IsGraphOutput(out);
      for (int c : view.Consumers(out)) outside |= !set.count(c);
      if (outside) custom.add_output(out);
    }
  }
  int outputs = custom.output_size();
  std::vector<bool> remove(graph.node_size(), false);
  for (int n : set) remove[n] = true;
  ir::RemoveNodes(graph, remove);
  graph.add_node()->Swap(&custom);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int index : ir::GraphView(graph).TopoOrder()) sorted.Add()->CopyFrom(graph.node(index));
  graph.mutable_node()->Swap(&sorted);
  ir::EnsureOpsetImport(model.proto, domain, 1);
  PassResult result;
  result.changes = static_cast<int>(set.size());
  result.notes.push_back(fmt::format("replaced {} node(s) by {}::{} ({} inputs, {} outputs)",
                                     set.size(), domain, op, inputs.size(), outputs));
  return result;
}

}  // namespace porttool::passes
