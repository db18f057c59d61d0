#include "lib/decide/patterns.h"

#include <algorithm>
#include <set>

#include "lib/decide/effective_attr.h"

namespace porttool::decide {
namespace {

const onnx::NodeProto& NodeAt(const AnalyzedModel& m, int index) { return m.graph().node(index); }

// The reader of `tensor` with op `op` whose input `slot` is `tensor`; -1 when none.
int ReaderWith(const AnalyzedModel& m, const std::string& tensor, const char* op, int slot) {
  for (int c : m.view().Consumers(tensor)) {
    const auto& n = NodeAt(m, c);
    if (n.op_type() == op && n.input_size() > slot && n.input(slot) == tensor) return c;
  }
  return -1;
}

bool IsScalarConstant(const AnalyzedModel& m, const std::string& tensor, double* value) {
  auto values = m.ConstantValues(tensor);
  if (!values || values->size() != 1) return false;
  if (value) *value = values->front();
  return true;
}

// A mean over trailing axes (ending at the last one) that keeps dims: the axes, else nullopt.
std::optional<std::vector<int64_t>> TrailingMeanAxes(const AnalyzedModel& m, int index) {
  const auto& n = NodeAt(m, index);
  if (n.op_type() != "ReduceMean" || n.output_size() != 1) return std::nullopt;
  auto keep = EffectiveAttr(n, m.facts().opset, "keepdims");
  if (!keep || !keep->is_number_integer() || keep->get<int64_t>() != 1) return std::nullopt;
  auto axes = ReducedAxes(m, n);
  const TensorInfo* in = m.Info(n.input(0));
  if (!axes || axes->empty() || !in || !in->has_shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in->dims.size());
  for (size_t i = 0; i < axes->size(); ++i) {
    if ((*axes)[i] != rank - static_cast<int64_t>(axes->size()) + static_cast<int64_t>(i)) {
      return std::nullopt;
    }
  }
  return axes;
}

// The pattern read forward from its first ReduceMean `head` (see LayerNormMembers).
std::optional<std::vector<int>> MatchFromHead(const AnalyzedModel& m, int head) {
  auto axes = TrailingMeanAxes(m, head);
  if (!axes) return std::nullopt;
  const std::string& x = NodeAt(m, head).input(0);
  const std::string& mean = NodeAt(m, head).output(0);
  int sub = ReaderWith(m, mean, "Sub", 1);
  if (sub < 0 || NodeAt(m, sub).input(0) != x) return std::nullopt;
  const std::string& d = NodeAt(m, sub).output(0);
  int square = ReaderWith(m, d, "Pow", 0);
  double exponent = 0;
  if (square >= 0 &&
      !(IsScalarConstant(m, NodeAt(m, square).input(1), &exponent) && exponent == 2.0)) {
    square = -1;
  }
  if (square < 0) {
    square = ReaderWith(m, d, "Mul", 0);
    if (square >= 0 && NodeAt(m, square).input(1) != d) square = -1;
  }
  if (square < 0) return std::nullopt;
  int var = ReaderWith(m, NodeAt(m, square).output(0), "ReduceMean", 0);
  if (var < 0 || TrailingMeanAxes(m, var) != axes) return std::nullopt;
  const std::string& v = NodeAt(m, var).output(0);
  int add = ReaderWith(m, v, "Add", 0);
  if (add < 0) add = ReaderWith(m, v, "Add", 1);
  if (add < 0) return std::nullopt;
  const auto& add_node = NodeAt(m, add);
  const std::string& eps = add_node.input(add_node.input(0) == v ? 1 : 0);
  if (!IsScalarConstant(m, eps, nullptr)) return std::nullopt;
  int sqrt = ReaderWith(m, add_node.output(0), "Sqrt", 0);
  if (sqrt < 0) return std::nullopt;
  int div = ReaderWith(m, NodeAt(m, sqrt).output(0), "Div", 1);
  if (div < 0 || NodeAt(m, div).input(0) != d) return std::nullopt;
  return std::vector<int>{head, sub, square, var, add, sqrt, div};
}

}  // namespace

std::optional<std::vector<int64_t>> ReducedAxes(const AnalyzedModel& m, const onnx::NodeProto& n) {
  const TensorInfo* in = m.Info(n.input_size() ? n.input(0) : std::string());
  if (!in || !in->has_shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(in->dims.size());
  std::vector<int64_t> axes;
  bool given = false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "axes") {
      axes.assign(a.ints().begin(), a.ints().end());
      given = true;
    }
  }
  if (!given && n.input_size() > 1 && !n.input(1).empty()) {
    auto values = m.ConstantValues(n.input(1));
    if (!values) return std::nullopt;  // axes computed at run time
    for (double v : *values) axes.push_back(static_cast<int64_t>(v));
    given = true;
  }
  if (!given || axes.empty()) {
    auto noop = EffectiveAttr(n, m.facts().opset, "noop_with_empty_axes");
    if (noop && noop->is_number() && noop->get<int64_t>() == 1) return std::vector<int64_t>{};
    axes.clear();
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  std::set<int64_t> normalized;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    normalized.insert(a < 0 ? a + rank : a);
  }
  return std::vector<int64_t>(normalized.begin(), normalized.end());
}

std::optional<std::vector<int>> LayerNormMembers(const AnalyzedModel& m, int index) {
  // The pattern spans at most five producers back from any member (Sqrt -> Add -> ReduceMean ->
  // Pow -> Sub -> ReduceMean): try every ReduceMean that close as its head.
  std::vector<int> frontier = {index};
  std::set<int> seen = {index};
  for (int depth = 0; depth <= 5 && !frontier.empty(); ++depth) {
    std::vector<int> next;
    for (int n : frontier) {
      if (NodeAt(m, n).op_type() == "ReduceMean") {
        auto members = MatchFromHead(m, n);
        if (members && std::find(members->begin(), members->end(), index) != members->end()) {
          return members;
        }
      }
      for (const auto& in : NodeAt(m, n).input()) {
        int p = in.empty() ? -1 : m.view().Producer(in);
        if (p >= 0 && seen.insert(p).second) next.push_back(p);
      }
    }
    frontier = std::move(next);
  }
  return std::nullopt;
}

}  // namespace porttool::decide
