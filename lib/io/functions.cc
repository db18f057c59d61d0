#include "lib/io/functions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::io {
namespace {

using Key = std::pair<std::string, std::string>;  // (domain, name)

Key KeyOf(const std::string& domain, const std::string& name) {
  return {domain == "ai.onnx" ? std::string() : domain, name};
}

std::string Label(const onnx::FunctionProto& f) {
  return f.domain().empty() ? f.name() : f.domain() + "." + f.name();
}

struct Call {
  int callee = 0;
  int level = 0;  // subgraph level of the calling node inside the caller's body
  std::string node;
};

// What one body (a function's or the main graph's) holds: the local functions its nodes call,
// at which subgraph level, and how deep its own subgraphs nest. Walked with an explicit stack.
struct Body {
  std::vector<Call> calls;
  int subgraph_depth = 0;
};

Body ScanBody(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
              const std::map<Key, int>& index) {
  Body body;
  std::vector<std::pair<const google::protobuf::RepeatedPtrField<onnx::NodeProto>*, int>> stack = {
      {&nodes, 0}};
  while (!stack.empty()) {
    auto [list, level] = stack.back();
    stack.pop_back();
    body.subgraph_depth = std::max(body.subgraph_depth, level);
    for (const auto& node : *list) {
      auto it = index.find(KeyOf(node.domain(), node.op_type()));
      if (it != index.end()) body.calls.push_back({it->second, level, node.name()});
      for (const auto& attr : node.attribute()) {
        if (attr.has_g()) stack.push_back({&attr.g().node(), level + 1});
        for (const auto& g : attr.graphs()) stack.push_back({&g.node(), level + 1});
      }
    }
  }
  return body;
}

// "f -> g -> f": the cycle found on the DFS path, from the first visit of `again` back to it.
[[noreturn]] void ThrowCycle(const std::string& where, const onnx::ModelProto& model,
                             const std::vector<int>& path, int again) {
  std::vector<std::string> names;
  for (auto it = std::find(path.begin(), path.end(), again); it != path.end(); ++it) {
    names.push_back(Label(model.functions(*it)));
  }
  names.push_back(Label(model.functions(again)));
  ThrowBadInput(
      "{}: model-local function '{}' calls itself ({}): a recursive function cannot be expanded "
      "(ONNX inlines every call by the function's body)",
      where, names.front(), util::Join(names, " -> "));
}

// The chain of calls under function `f` that reaches `depth`, for the message.
std::string DeepestChain(const onnx::ModelProto& model, int f, const std::vector<int>& next) {
  std::vector<std::string> names;
  for (int i = f; i >= 0 && names.size() < 8; i = next[i])
    names.push_back(Label(model.functions(i)));
  if (names.size() == 8 && next[f] >= 0) names.push_back("...");
  return util::Join(names, " -> ");
}

[[noreturn]] void ThrowTooDeep(const std::string& where, const std::string& what, int depth,
                               const std::string& chain) {
  ThrowBadInput(
      "{}: {}: subgraphs and model-local function calls nest {} levels deep ({}), deeper than "
      "the limit of {}",
      where, what, depth, chain, kMaxSubgraphDepth);
}

}  // namespace

void ValidateFunctions(const onnx::ModelProto& model, const std::string& where) {
  const int n = model.functions_size();
  if (n == 0) return;
  std::map<Key, int> index;
  for (int i = 0; i < n; ++i) {
    index.emplace(KeyOf(model.functions(i).domain(), model.functions(i).name()), i);
  }
  std::vector<Body> bodies;
  bodies.reserve(n);
  for (const auto& f : model.functions()) bodies.push_back(ScanBody(f.node(), index));

  // Depth-first over the call graph with an explicit stack: a grey function met again closes a
  // cycle; a function's depth is known once every callee's is (post-order).
  enum Color { kWhite, kGrey, kBlack };
  std::vector<Color> color(n, kWhite);
  std::vector<int> depth(n, 0), deepest_callee(n, -1);
  for (int root = 0; root < n; ++root) {
    if (color[root] != kWhite) continue;
    std::vector<std::pair<int, size_t>> stack = {{root, 0}};
    std::vector<int> path = {root};
    color[root] = kGrey;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next < bodies[f].calls.size()) {
        int callee = bodies[f].calls[next++].callee;
        if (color[callee] == kGrey) ThrowCycle(where, model, path, callee);
        if (color[callee] == kWhite) {
          color[callee] = kGrey;
          stack.push_back({callee, 0});
          path.push_back(callee);
        }
        continue;
      }
      int d = bodies[f].subgraph_depth;
      for (const auto& call : bodies[f].calls) {
        if (call.level + 1 + depth[call.callee] > d) {
          d = call.level + 1 + depth[call.callee];
          deepest_callee[f] = call.callee;
        }
      }
      depth[f] = d;
      if (d > kMaxSubgraphDepth) {
        ThrowTooDeep(where, "model-local function '" + Label(model.functions(f)) + "'", d,
                     DeepestChain(model, f, deepest_callee));
      }
      color[f] = kBlack;
      stack.pop_back();
      path.pop_back();
    }
  }
  for (const auto& call : ScanBody(model.graph().node(), index).calls) {
    int d = call.level + 1 + depth[call.callee];
    if (d > kMaxSubgraphDepth) {
      ThrowTooDeep(where, "node '" + call.node + "'", d,
                   "main graph -> " + DeepestChain(model, call.callee, deepest_callee));
    }
  }
}

}  // namespace porttool::io
