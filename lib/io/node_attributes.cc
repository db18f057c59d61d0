#include "lib/io/node_attributes.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/util/error.h"

namespace porttool::io {
namespace {

// Dims of the tensors whose shape the file declares (-1: unknown dim); absent: unknown rank.
using DimsByName = std::unordered_map<std::string, std::vector<int64_t>>;
using ConstsByName = std::unordered_map<std::string, const onnx::TensorProto*>;

struct GraphFacts {
  DimsByName dims;
  ConstsByName consts;
  const GraphFacts* outer = nullptr;  // the enclosing graph, for subgraphs

  const std::vector<int64_t>* Dims(const std::string& name) const {
    for (const GraphFacts* g = this; g; g = g->outer) {
      if (auto it = g->dims.find(name); it != g->dims.end()) return &it->second;
    }
    return nullptr;
  }
  const onnx::TensorProto* Const(const std::string& name) const {
    for (const GraphFacts* g = this; g; g = g->outer) {
      if (auto it = g->consts.find(name); it != g->consts.end()) return it->second;
    }
    return nullptr;
  }
};

void AddDeclared(const onnx::ValueInfoProto& vi, DimsByName& dims) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  std::vector<int64_t> d;
  for (const auto& dim : vi.type().tensor_type().shape().dim()) {
    d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  dims.emplace(vi.name(), std::move(d));
}

GraphFacts FactsOf(const onnx::GraphProto& graph, const GraphFacts* outer) {
  GraphFacts facts;
  facts.outer = outer;
  for (const auto& vi : graph.input()) AddDeclared(vi, facts.dims);
  for (const auto& vi : graph.value_info()) AddDeclared(vi, facts.dims);
  for (const auto& vi : graph.output()) AddDeclared(vi, facts.dims);
  for (const auto& t : graph.initializer()) {
    facts.dims[t.name()] = {t.dims().begin(), t.dims().end()};
    facts.consts[t.name()] = &t;
  }
  for (const auto& node : graph.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) facts.consts[node.output(0)] = &a.t();
    }
  }
  return facts;
}

// Values of a small constant held in the file itself (external or large ones are not read here).
std::optional<std::vector<double>> ConstValues(const onnx::TensorProto* t) {
  constexpr int64_t kMaxRead = 4096;
  if (!t || t->data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  int64_t count = 1;
  for (int64_t d : t->dims()) {
    if (d < 0 || d > kMaxRead) return std::nullopt;
    count *= d;
    if (count > kMaxRead) return std::nullopt;
  }
  std::vector<double> out;
  const std::string& raw = t->raw_data();
  auto from_raw = [&](auto sample) -> bool {
    using T = decltype(sample);
    if (raw.size() != static_cast<size_t>(count) * sizeof(T)) return false;
    for (int64_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      out.push_back(static_cast<double>(v));
    }
    return true;
  };
  bool ok = false;
  switch (t->data_type()) {
    case onnx::TensorProto::FLOAT:
      ok = t->has_raw_data() ? from_raw(float{})
                             : (out.assign(t->float_data().begin(), t->float_data().end()), true);
      break;
    case onnx::TensorProto::INT64:
      ok = t->has_raw_data() ? from_raw(int64_t{})
                             : (out.assign(t->int64_data().begin(), t->int64_data().end()), true);
      break;
    default:
      return std::nullopt;
  }
  if (!ok || out.size() != static_cast<size_t>(count)) return std::nullopt;
  return out;
}

std::string ShowValues(const std::vector<int64_t>& v) {
  constexpr size_t kShown = 8;
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < kShown; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > kShown) s += fmt::format(", ... ({} values)", v.size());
  return s + "]";
}

// One node under validation: its attributes by name and what the file says about its inputs.
class NodeCheck {
 public:
  NodeCheck(const onnx::NodeProto& node, int index, int opset, const GraphFacts& facts)
      : node_(node), index_(index), opset_(opset), facts_(facts) {
    for (const auto& a : node.attribute()) attrs_[a.name()] = &a;
  }

  const std::string& op() const { return node_.op_type(); }
  int opset() const { return opset_; }
  const onnx::AttributeProto* Attr(const std::string& name) const {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : it->second;
  }
  // The values of an int or ints attribute (an int is a list of one). An attribute of another
  // type under a name the rules interpret is refused: inference would read it as an int anyway.
  std::optional<std::vector<int64_t>> Ints(const std::string& name) const {
    const auto* a = Attr(name);
    if (!a) return std::nullopt;
    bool is_int = a->type() == onnx::AttributeProto::INT ||
                  (a->type() == onnx::AttributeProto::UNDEFINED && a->has_i());
    bool is_ints = a->type() == onnx::AttributeProto::INTS ||
                   (a->type() == onnx::AttributeProto::UNDEFINED && !a->has_i());
    if (is_int) return std::vector<int64_t>{a->i()};
    if (!is_ints) {
      Reject(name, "has type {}: the op reads an int or a list of ints",
             onnx::AttributeProto::AttributeType_Name(a->type()));
    }
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  // One int: an int attribute, or a list holding exactly one value.
  std::optional<int64_t> Int(const std::string& name) const {
    auto v = Ints(name);
    if (!v) return std::nullopt;
    if (v->size() != 1) Reject(name, "= {}: must be a single int", ShowValues(*v));
    return v->front();
  }
  const std::vector<int64_t>* InputDims(int i) const {
    if (i >= node_.input_size() || node_.input(i).empty()) return nullptr;
    return facts_.Dims(node_.input(i));
  }
  int InputRank(int i) const {
    const auto* d = InputDims(i);
    return d ? static_cast<int>(d->size()) : -1;
  }
  std::optional<std::vector<double>> InputConst(int i) const {
    if (i >= node_.input_size() || node_.input(i).empty()) return std::nullopt;
    return ConstValues(facts_.Const(node_.input(i)));
  }
  int input_count() const { return node_.input_size(); }
  bool HasInput(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }

  template <typename... Args>
  [[noreturn]] void RejectInput(int i, fmt::format_string<Args...> rule, Args&&... args) const {
    std::string label = node_.name().empty() ? fmt::format("#{}", index_) : node_.name();
    throw Error(ErrorKind::kBadInput,
                fmt::format("node '{}' ({}): input {} ('{}') {}", label, node_.op_type(), i,
                            node_.input(i), fmt::format(rule, std::forward<Args>(args)...)),
                node_.name(), node_.input(i));
  }
  template <typename... Args>
  [[noreturn]] void Reject(const std::string& attr, fmt::format_string<Args...> rule,
                           Args&&... args) const {
    std::string label = node_.name().empty() ? fmt::format("#{}", index_) : node_.name();
    throw Error(ErrorKind::kBadInput,
                fmt::format("node '{}' ({}): attribute '{}' {}", label, node_.op_type(), attr,
                            fmt::format(rule, std::forward<Args>(args)...)),
                node_.name());
  }

 private:
  const onnx::NodeProto& node_;
  int index_;
  int opset_;
  const GraphFacts& facts_;
  std::unordered_map<std::string, const onnx::AttributeProto*> attrs_;
};

void RequireEach(const NodeCheck& c, const std::string& attr, int64_t min, const char* what) {
  auto v = c.Ints(attr);
  if (!v) return;
  for (size_t i = 0; i < v->size(); ++i) {
    if ((*v)[i] < min) {
      c.Reject(attr, "= {}: {} must be >= {} (index {} is {})", ShowValues(*v), what, min, i,
               (*v)[i]);
    }
  }
}

void RequireCount(const NodeCheck& c, const std::string& attr, int expected, const char* why) {
  auto v = c.Ints(attr);
  if (!v || expected < 0 || static_cast<int>(v->size()) == expected) return;
  c.Reject(attr, "= {}: has {} values, {} needs {}", ShowValues(*v), v->size(), why, expected);
}

// Convolution and pooling geometry: spatial rank from kernel_shape, the weight or the input.
void CheckWindow(const NodeCheck& c) {
  RequireEach(c, "kernel_shape", 1, "every kernel size");
  RequireEach(c, "strides", 1, "every stride");
  RequireEach(c, "dilations", 1, "every dilation");
  RequireEach(c, "output_padding", 0, "every output padding");
  RequireEach(c, "output_shape", 0, "every output size");
  if (c.op() != "Pad") RequireEach(c, "pads", 0, "every pad");
  int spatial = -1;
  const char* from = "";
  if (auto k = c.Ints("kernel_shape")) {
    spatial = static_cast<int>(k->size());
    from = "'kernel_shape'";
    if (spatial == 0) c.Reject("kernel_shape", "is empty: a window needs at least one axis");
  } else if (int w = c.InputRank(1); w >= 3 && (c.op() == "Conv" || c.op() == "ConvTranspose")) {
    spatial = w - 2;
    from = "the weight's rank";
  } else if (int x = c.InputRank(0); x >= 3 && c.Attr("strides")) {
    spatial = x - 2;
    from = "the input's rank";
  }
  if (c.op() == "Pad") return;
  if (auto pads = c.Ints("pads"); pads && pads->size() % 2 != 0) {
    c.Reject("pads", "= {}: needs a begin and an end per axis (an even count)", ShowValues(*pads));
  }
  if (spatial < 0) return;
  std::string why = fmt::format("one per spatial axis (from {})", from);
  for (const char* a : {"strides", "dilations", "output_padding"}) {
    RequireCount(c, a, spatial, why.c_str());
  }
  RequireCount(c, "pads", 2 * spatial,
               fmt::format("a begin and an end per spatial axis (from {})", from).c_str());
}

// Convolutions and pools read the spatial dims from the input and the weight side by side:
// libonnx's inference indexes one by the other's rank unchecked (a rank-3 input with a rank-4
// weight read past the dims).
// Op -> its weight input (-1: pools, no weight).
const std::unordered_map<std::string, int>& WindowOps() {
  static const std::unordered_map<std::string, int> kWeightInput = {
      {"Conv", 1},           {"ConvTranspose", 1}, {"ConvInteger", 1},
      {"QLinearConv", 3},    {"MaxPool", -1},      {"AveragePool", -1},
      {"LpPool", -1},        {"MaxUnpool", -1},    {"GlobalAveragePool", -1},
      {"GlobalMaxPool", -1}, {"GlobalLpPool", -1}};
  return kWeightInput;
}

std::optional<InputRankProblem> WindowRankProblem(const std::string& op,
                                                  const std::function<int(int)>& rank) {
  auto it = WindowOps().find(op);
  if (it == WindowOps().end()) return std::nullopt;
  int x = rank(0);
  if (x >= 0 && x < 3) {
    return InputRankProblem{
        0, fmt::format("has rank {}: the op needs N, C and at least one spatial axis", x)};
  }
  int w = it->second >= 0 ? rank(it->second) : -1;
  if (x >= 0 && w >= 0 && w != x) {
    return InputRankProblem{
        it->second, fmt::format("has rank {} for an input of rank {}: the ranks must match", w, x)};
  }
  return std::nullopt;
}

// Ops whose libonnx inference reads fixed dims of an input without checking its rank: RNN, GRU
// and LSTM read X[0..2], W[0..2] and R[0..2]; STFT reads the signal's [batch, length, 1|2].
// Op -> (input, rank) pairs.
const std::unordered_map<std::string, std::vector<std::pair<int, int>>>& FixedRankOps() {
  static const std::unordered_map<std::string, std::vector<std::pair<int, int>>> kRanks = {
      {"RNN", {{0, 3}, {1, 3}, {2, 3}}},
      {"GRU", {{0, 3}, {1, 3}, {2, 3}}},
      {"LSTM", {{0, 3}, {1, 3}, {2, 3}}},
      {"STFT", {{0, 3}}}};
  return kRanks;
}

std::optional<InputRankProblem> FixedRankProblem(const std::string& op,
                                                 const std::function<int(int)>& rank) {
  auto it = FixedRankOps().find(op);
  if (it == FixedRankOps().end()) return std::nullopt;
  for (auto [input, want] : it->second) {
    int r = rank(input);
    if (r >= 0 && r != want) {
      return InputRankProblem{input, fmt::format("has rank {}: the op reads rank {}", r, want)};
    }
  }
  return std::nullopt;
}

// Ops whose output has one axis per element of a 1-D input: libonnx's inference creates that
// many dims from the input's length alone (a ConstantOfShape of a [2^32] shape allocated 2^32
// dims: a fuzz_check out-of-memory of issue 27).
// Op -> its shape input.
const std::unordered_map<std::string, int>& ShapeInputOps() {
  static const std::unordered_map<std::string, int> kShapeInput = {
      {"ConstantOfShape", 0}, {"Expand", 1}, {"Reshape", 1}};
  return kShapeInput;
}

std::optional<InputRankProblem> ShapeLengthProblem(const std::string& op,
                                                   const std::function<int64_t(int)>& length) {
  auto it = ShapeInputOps().find(op);
  if (it == ShapeInputOps().end()) return std::nullopt;
  int64_t n = length(it->second);
  if (n <= kMaxRank) return std::nullopt;
  return InputRankProblem{
      it->second, fmt::format("has {} elements: that many output axes, over the {} porttool "
                              "accepts",
                              n, kMaxRank)};
}

// Where the file declares the ranks.
void CheckInputRanks(const NodeCheck& c) {
  auto problem = FindInputRankProblem(
      c.op(), [&](int i) { return c.InputRank(i); },
      [&](int i) {
        const auto* d = c.InputDims(i);
        return d && d->size() == 1 ? d->front() : int64_t{-1};
      });
  if (problem) c.RejectInput(problem->input, "{}", problem->rule);
}

void CheckGroup(const NodeCheck& c) {
  auto g = c.Int("group");
  if (!g) return;
  int64_t group = *g;
  if (group < 1) c.Reject("group", "= {}: must be >= 1", group);
  const auto* w = c.InputDims(1);
  if ((c.op() == "Conv" || c.op() == "ConvInteger") && w && !w->empty() && w->at(0) > 0 &&
      w->at(0) % group != 0) {
    c.Reject("group", "= {}: must divide the weight's {} output channels", group, w->at(0));
  }
  const auto* x = c.InputDims(0);
  if (x && x->size() >= 2 && x->at(1) > 0 && x->at(1) % group != 0) {
    c.Reject("group", "= {}: must divide the input's {} channels", group, x->at(1));
  }
}

void CheckBlocksize(const NodeCheck& c) {
  auto b = c.Int("blocksize");
  if (!b) return;
  int64_t size = *b;
  if (size < 1 || size > kMaxBlocksize) {
    c.Reject("blocksize", "= {}: must be between 1 and {}", size, kMaxBlocksize);
  }
  const auto* x = c.InputDims(0);
  if (c.op() == "DepthToSpace" && x && x->size() == 4 && x->at(1) > 0 &&
      x->at(1) % (size * size) != 0) {
    c.Reject("blocksize", "= {}: its square must divide the input's {} channels", size, x->at(1));
  }
}

// How an op's axis attribute relates to its first input's rank r: the valid range is
// [-(r + extra), r + extra - 1 + inclusive].
struct AxisRange {
  int extra = 0;
  int inclusive = 0;
};

std::optional<AxisRange> AxisRangeFor(const std::string& op) {
  static const std::unordered_map<std::string, AxisRange> kOps = {
      {"Concat", {}},
      {"Softmax", {}},
      {"LogSoftmax", {}},
      {"Hardmax", {}},
      {"Gather", {}},
      {"GatherElements", {}},
      {"ScatterElements", {}},
      {"Scatter", {}},
      {"Split", {}},
      {"ArgMax", {}},
      {"ArgMin", {}},
      {"TopK", {}},
      {"Compress", {}},
      {"LayerNormalization", {}},
      {"LpNormalization", {}},
      {"Unique", {}},
      {"Flatten", {0, 1}},
      {"OneHot", {1, 0}},
      {"Squeeze", {}},
      {"ReduceSum", {}},
      {"ReduceMean", {}},
      {"ReduceMax", {}},
      {"ReduceMin", {}},
      {"ReduceProd", {}},
      {"ReduceL1", {}},
      {"ReduceL2", {}},
      {"ReduceLogSum", {}},
      {"ReduceLogSumExp", {}},
      {"ReduceSumSquare", {}},
      {"Unsqueeze", {}},
      {"MeanVarianceNormalization", {}},
  };
  auto it = kOps.find(op);
  return it == kOps.end() ? std::nullopt : std::optional<AxisRange>(it->second);
}

// The rank of the first input whose shape the file declares (Concat's inputs share one rank).
int FirstKnownRank(const NodeCheck& c, int inputs) {
  for (int i = 0; i < inputs; ++i) {
    if (int r = c.InputRank(i); r >= 0) return r;
  }
  return -1;
}

void CheckAxes(const NodeCheck& c, int input_count) {
  constexpr int64_t kInt32 = int64_t{1} << 31;
  for (const char* name : {"axis", "axes"}) {
    auto v = c.Ints(name);
    if (!v) continue;
    for (int64_t a : *v) {
      if (a < -kInt32 || a >= kInt32) c.Reject(name, "= {}: out of any tensor's rank", a);
    }
    auto range = AxisRangeFor(c.op());
    int rank = range ? FirstKnownRank(c, c.op() == "Concat" ? input_count : 1) : -1;
    if (rank < 0) continue;
    // Unsqueeze's axes index the output, which has one more axis per entry.
    int r = rank + range->extra + (c.op() == "Unsqueeze" ? static_cast<int>(v->size()) : 0);
    std::vector<int64_t> seen;
    for (int64_t a : *v) {
      if (a < -r || a > r - 1 + range->inclusive) {
        c.Reject(name, "= {}: out of range for rank {} (valid: {} to {})", ShowValues(*v), r, -r,
                 r - 1 + range->inclusive);
      }
      int64_t normal = a < 0 ? a + r : a;
      if (std::find(seen.begin(), seen.end(), normal) != seen.end()) {
        c.Reject(name, "= {}: names axis {} twice", ShowValues(*v), normal);
      }
      seen.push_back(normal);
    }
  }
}

void CheckPerm(const NodeCheck& c) {
  auto perm = c.Ints("perm");
  if (!perm) return;
  int n = static_cast<int>(perm->size());
  std::vector<bool> used(n, false);
  for (int64_t p : *perm) {
    if (p < 0 || p >= n || used[p]) {
      c.Reject("perm", "= {}: must be a permutation of 0..{}", ShowValues(*perm), n - 1);
    }
    used[p] = true;
  }
  if (int rank = c.InputRank(0); rank >= 0 && rank != n) {
    c.Reject("perm", "= {}: has {} entries for an input of rank {}", ShowValues(*perm), n, rank);
  }
}

void CheckSplit(const NodeCheck& c) {
  if (c.op() != "Split") return;
  std::optional<std::vector<int64_t>> sizes = c.Ints("split");
  std::string name = "split";
  if (!sizes && c.opset() >= 13) {
    if (auto v = c.InputConst(1)) sizes = std::vector<int64_t>(v->begin(), v->end());
    name = "split (input)";
  }
  if (!sizes) return;
  int64_t total = 0;
  for (int64_t s : *sizes) {
    if (s < 0) c.Reject(name, "= {}: every size must be >= 0", ShowValues(*sizes));
    if (s > (int64_t{1} << 50)) c.Reject(name, "= {}: a size is out of range", ShowValues(*sizes));
    total += s;
  }
  const auto* x = c.InputDims(0);
  int64_t axis = c.Int("axis").value_or(0);
  if (!x) return;
  int rank = static_cast<int>(x->size());
  if (axis < -rank || axis >= rank) return;  // CheckAxes says so
  int64_t length = x->at(axis < 0 ? axis + rank : axis);
  if (length >= 0 && total != length) {
    c.Reject(name, "= {}: sums to {}, the axis has {}", ShowValues(*sizes), total, length);
  }
}

void RequirePositiveFinite(const NodeCheck& c, const std::string& what,
                           const std::vector<double>& v, bool allow_zero) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]) || v[i] < 0 || (!allow_zero && v[i] == 0)) {
      c.Reject(what, "has {} at index {}: every value must be finite and {}", v[i], i,
               allow_zero ? ">= 0" : "> 0");
    }
  }
}

// Resize and Upsample: scales (attribute before opset 9, then an input) and sizes.
void CheckScales(const NodeCheck& c) {
  if (c.op() != "Resize" && c.op() != "Upsample") return;
  if (const auto* a = c.Attr("scales")) {
    RequirePositiveFinite(c, "scales", {a->floats().begin(), a->floats().end()}, false);
  }
  int scales_input = c.op() == "Upsample" ? 1 : (c.opset() >= 11 ? 2 : 1);
  if (auto v = c.InputConst(scales_input)) RequirePositiveFinite(c, "scales (input)", *v, false);
  if (c.op() == "Resize" && c.opset() >= 11) {
    if (auto v = c.InputConst(3)) RequirePositiveFinite(c, "sizes (input)", *v, false);
  }
}

void CheckScalars(const NodeCheck& c) {
  if (c.op() == "TopK" && c.opset() < 10) RequireEach(c, "k", 0, "k");
  if (c.op() == "TopK" && c.opset() >= 10) {
    if (auto v = c.InputConst(1)) RequirePositiveFinite(c, "k (input)", *v, true);
  }
  if (c.op() == "OneHot") {
    if (auto v = c.InputConst(1)) RequirePositiveFinite(c, "depth (input)", *v, true);
  }
  if (c.op() == "LRN") RequireEach(c, "size", 1, "size");
  if (c.op() == "Scan") {  // libonnx sizes vectors by it before looking at the inputs
    if (auto n = c.Int("num_scan_inputs"); n && (*n < 1 || *n > c.input_count())) {
      c.Reject("num_scan_inputs", "= {}: must be between 1 and the node's {} inputs", *n,
               c.input_count());
    }
  }
  if (c.op() == "RoiAlign" || c.op() == "MaxRoiPool") {
    RequireEach(c, "output_height", 1, "output_height");
    RequireEach(c, "output_width", 1, "output_width");
    RequireEach(c, "sampling_ratio", 0, "sampling_ratio");
    RequireEach(c, "pooled_shape", 1, "every pooled size");
    if (const auto* a = c.Attr("spatial_scale")) {
      RequirePositiveFinite(c, "spatial_scale", {a->f()}, false);
    }
  }
}

// Inputs and outputs against the op's schema: libonnx's inference functions read the type of
// every input the schema calls required without checking it is there (a Conv without its weight,
// a Relu without input dereferenced a null type). The checker would say so, but inference runs
// first in most stages.
void CheckArity(const onnx::NodeProto& node, int index, int opset) {
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, domain);
  if (!schema) return;  // unknown ops are the checker's and the executor's to refuse
  std::string label = node.name().empty() ? fmt::format("#{}", index) : node.name();
  auto refuse = [&](const std::string& what) {
    throw Error(ErrorKind::kBadInput,
                fmt::format("node '{}' ({}, opset {}): {}", label, node.op_type(), opset, what),
                node.name());
  };
  if (node.input_size() < schema->min_input() || node.input_size() > schema->max_input()) {
    refuse(fmt::format("has {} inputs; the op takes {} to {}", node.input_size(),
                       schema->min_input(), schema->max_input()));
  }
  if (node.output_size() < schema->min_output() || node.output_size() > schema->max_output()) {
    refuse(fmt::format("has {} outputs; the op gives {} to {}", node.output_size(),
                       schema->min_output(), schema->max_output()));
  }
  const auto& formal = schema->inputs();
  for (int i = 0; i < node.input_size() && i < static_cast<int>(formal.size()); ++i) {
    if (node.input(i).empty() && formal[i].GetOption() == onnx::OpSchema::Single) {
      refuse(fmt::format("its required input {} ('{}') is empty", i, formal[i].GetName()));
    }
  }
}

bool InterpretedDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx" || domain == "com.microsoft";
}

struct Opsets {
  int onnx = 0;
  int microsoft = 0;
};

void ValidateGraph(const onnx::GraphProto& graph, const Opsets& opsets, const GraphFacts* outer) {
  GraphFacts facts = FactsOf(graph, outer);
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (InterpretedDomain(node.domain())) {
      int opset = node.domain() == "com.microsoft" ? opsets.microsoft : opsets.onnx;
      if (opset > 0) CheckArity(node, i, opset);
      NodeCheck c(node, i, opset, facts);
      CheckWindow(c);
      CheckInputRanks(c);
      CheckGroup(c);
      CheckBlocksize(c);
      CheckAxes(c, node.input_size());
      CheckPerm(c);
      CheckSplit(c);
      CheckScales(c);
      CheckScalars(c);
    }
    for (const auto& a : node.attribute()) {
      if (a.has_g()) ValidateGraph(a.g(), opsets, &facts);
      for (const auto& g : a.graphs()) ValidateGraph(g, opsets, &facts);
    }
  }
}

}  // namespace

const std::vector<std::string>& OpsWithInputRankRules() {
  // The keys of the rule tables, so the guarded ops cannot drift from the rules.
  static const std::vector<std::string> kOps = [] {
    std::vector<std::string> ops;
    for (const auto& [op, _] : WindowOps()) ops.push_back(op);
    for (const auto& [op, _] : FixedRankOps()) ops.push_back(op);
    for (const auto& [op, _] : ShapeInputOps()) ops.push_back(op);
    return ops;
  }();
  return kOps;
}

std::optional<InputRankProblem> FindInputRankProblem(const std::string& op,
                                                     const std::function<int(int)>& rank,
                                                     const std::function<int64_t(int)>& length) {
  if (auto p = WindowRankProblem(op, rank)) return p;
  if (auto p = ShapeLengthProblem(op, length)) return p;
  return FixedRankProblem(op, rank);
}

void ValidateNodeAttributes(const onnx::ModelProto& model) {
  Opsets opsets;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opsets.onnx = static_cast<int>(o.version());
    if (o.domain() == "com.microsoft") opsets.microsoft = static_cast<int>(o.version());
  }
  ValidateGraph(model.graph(), opsets, nullptr);
}

}  // namespace porttool::io
