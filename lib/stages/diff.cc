#include "lib/stages/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "lib/analysis/graph_match.h"
#include "lib/io/dtype.h"
#include "lib/ir/node_names.h"
#include "lib/quant/samples.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/strings.h"

namespace porttool::stages {
namespace {

using analysis::GraphMatch;
using analysis::MatchSide;
using analysis::TensorSource;

std::string OpName(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type()
                                                       : n.domain() + ":" + n.op_type();
}

DiffNode NodeOf(const MatchSide& side, int index) {
  const auto& n = side.graph().node(index);
  return {index, ir::NodeLabel(n, index), OpName(n)};
}

std::string TensorType(const onnx::TensorProto& t) {
  return fmt::format("{}[{}]", io::DtypeName(t.data_type()), fmt::join(t.dims(), ","));
}

std::string ValueInfoType(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type()) return "(not a tensor)";
  const auto& t = v.type().tensor_type();
  if (!t.has_shape()) return io::DtypeName(t.elem_type()) + "[?]";
  std::vector<std::string> dims;
  for (const auto& d : t.shape().dim()) {
    dims.push_back(d.has_dim_value()   ? std::to_string(d.dim_value())
                   : d.has_dim_param() ? d.dim_param()
                                       : "?");
  }
  return fmt::format("{}[{}]", io::DtypeName(t.elem_type()), util::Join(dims, ","));
}

template <class List>
std::string ListText(const List& list, bool quote) {
  std::vector<std::string> items;
  for (const auto& v : list) {
    if (items.size() == 16) {
      items.push_back(fmt::format("... {} values", list.size()));
      break;
    }
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
      items.push_back(quote ? "'" + v + "'" : v);
    } else {
      items.push_back(fmt::format("{}", v));
    }
  }
  return "[" + util::Join(items, ", ") + "]";
}

std::string AttributeText(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
      return fmt::format("{}", a.f());
    case onnx::AttributeProto::INT:
      return fmt::format("{}", a.i());
    case onnx::AttributeProto::STRING:
      return "'" + a.s() + "'";
    case onnx::AttributeProto::FLOATS:
      return ListText(a.floats(), false);
    case onnx::AttributeProto::INTS:
      return ListText(a.ints(), false);
    case onnx::AttributeProto::STRINGS:
      return ListText(a.strings(), true);
    case onnx::AttributeProto::TENSOR:
      return "tensor " + TensorType(a.t());
    case onnx::AttributeProto::GRAPH:
      return fmt::format("graph of {} nodes", a.g().node_size());
    default:
      return fmt::format("(attribute type {})", static_cast<int>(a.type()));
  }
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Header: IR version and the opset of every domain either side imports.
std::vector<std::string> HeaderChanges(const onnx::ModelProto& a, const onnx::ModelProto& b) {
  std::vector<std::string> out;
  if (a.ir_version() != b.ir_version()) {
    out.push_back(fmt::format("ir_version: {} -> {}", a.ir_version(), b.ir_version()));
  }
  std::map<std::string, std::pair<int64_t, int64_t>> opsets;  // 0: not imported
  for (const auto& o : a.opset_import()) opsets[o.domain()].first = o.version();
  for (const auto& o : b.opset_import()) opsets[o.domain()].second = o.version();
  for (const auto& [domain, v] : opsets) {
    if (v.first == v.second) continue;
    auto text = [](int64_t x) { return x ? std::to_string(x) : std::string("(none)"); };
    out.push_back(fmt::format("opset {}: {} -> {}", domain.empty() ? "ai.onnx" : domain,
                              text(v.first), text(v.second)));
  }
  return out;
}

void DiffIoList(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& a,
                const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& b,
                const std::vector<int>& a_to_b, const std::vector<int>& b_to_a,
                const MatchSide& side_a, const MatchSide& side_b, const std::string& kind,
                std::vector<IoChange>& out) {
  const bool inputs = kind == "input";
  for (int i = 0; i < a.size(); ++i) {
    if (inputs && side_a.GraphInputIndex(a[i].name()) < 0) continue;  // an initializer
    if (a_to_b[i] < 0) {
      out.push_back({kind, "removed", a[i].name(), "", ValueInfoType(a[i]), ""});
    } else if (ValueInfoType(a[i]) != ValueInfoType(b[a_to_b[i]])) {
      const auto& y = b[a_to_b[i]];
      out.push_back(
          {kind, "changed", a[i].name(), y.name(), ValueInfoType(a[i]), ValueInfoType(y)});
    }
  }
  for (int j = 0; j < b.size(); ++j) {
    if (inputs && side_b.GraphInputIndex(b[j].name()) < 0) continue;
    if (b_to_a[j] < 0) out.push_back({kind, "added", "", b[j].name(), "", ValueInfoType(b[j])});
  }
}

// Builds the report from the match: one object, so the helpers share the two sides.
class Differ {
 public:
  Differ(const MatchSide& a, const MatchSide& b, const GraphMatch& m) : a_(a), b_(b), m_(m) {}

  ModelDiff Build() {
    ModelDiff d;
    d.header = HeaderChanges(a_.model().proto, b_.model().proto);
    DiffIoList(a_.graph().input(), b_.graph().input(), m_.inputs_a_to_b, m_.inputs_b_to_a, a_, b_,
               "input", d.io);
    DiffIoList(a_.graph().output(), b_.graph().output(), m_.outputs_a_to_b, m_.outputs_b_to_a, a_,
               b_, "output", d.io);
    d.nodes_a = a_.graph().node_size();
    d.nodes_b = b_.graph().node_size();
    d.state_a.assign(d.nodes_a, 0);
    d.state_b.assign(d.nodes_b, 0);
    Count(d);
    std::set<std::pair<std::string, std::string>> seen_values;
    for (int i : a_.view().TopoOrder()) {
      int j = m_.a_to_b[i];
      if (j < 0) continue;
      ChangedNode c = Compare(i, j);
      if (c.attributes.empty() && c.inputs.empty()) continue;
      d.state_a[i] = d.state_b[j] = 1;
      for (const auto& in : c.inputs) {
        if (in.value && seen_values.insert({in.value->a_name, in.value->b_name}).second) {
          d.values.push_back(*in.value);
        }
      }
      d.changed.push_back(std::move(c));
    }
    for (int i : a_.view().TopoOrder()) {
      if (m_.a_to_b[i] >= 0) continue;
      d.state_a[i] = 2;
      d.removed.push_back({NodeOf(a_, i), Fate(i, d.state_b)});
    }
    for (int j : b_.view().TopoOrder()) {
      if (m_.b_to_a[j] >= 0) continue;
      d.state_b[j] = 2;
      d.added.push_back(NodeOf(b_, j));
    }
    return d;
  }

 private:
  void Count(ModelDiff& d) const {
    for (size_t i = 0; i < m_.how.size(); ++i) {
      d.by_name += m_.how[i] == analysis::MatchedBy::kName;
      d.by_structure += m_.how[i] == analysis::MatchedBy::kStructure;
      d.by_neighbours += m_.how[i] == analysis::MatchedBy::kNeighbours;
    }
    d.matched = d.by_name + d.by_structure + d.by_neighbours;
  }

  ChangedNode Compare(int i, int j) const {
    const auto& x = a_.graph().node(i);
    const auto& y = b_.graph().node(j);
    ChangedNode c{NodeOf(a_, i), NodeOf(b_, j), {}, {}};
    auto ka = a_.AttributeKeys(x), kb = b_.AttributeKeys(y);
    std::set<std::string> names;
    for (const auto& [name, _] : ka) names.insert(name);
    for (const auto& [name, _] : kb) names.insert(name);
    for (const auto& name : names) {
      auto ia = ka.find(name), ib = kb.find(name);
      if (ia != ka.end() && ib != kb.end() && ia->second == ib->second) continue;
      const auto *pa = FindAttribute(x, name), *pb = FindAttribute(y, name);
      c.attributes.push_back(
          {name, pa ? AttributeText(*pa) : "(absent)", pb ? AttributeText(*pb) : "(absent)"});
    }
    if (x.output_size() != y.output_size()) {
      c.attributes.push_back(
          {"(outputs)", std::to_string(x.output_size()), std::to_string(y.output_size())});
    }
    for (int p = 0; p < std::max(x.input_size(), y.input_size()); ++p) {
      TensorSource sa = a_.SourceOf(p < x.input_size() ? x.input(p) : "");
      TensorSource sb = b_.SourceOf(p < y.input_size() ? y.input(p) : "");
      if (analysis::SameSource(m_, sa, sb)) continue;
      InputChange in{p, Describe(a_, sa, true), Describe(b_, sb, false), std::nullopt};
      if (sa.tensor && sb.tensor) in.value = Value(sa, sb);
      c.inputs.push_back(std::move(in));
    }
    return c;
  }

  ValueChange Value(const TensorSource& sa, const TensorSource& sb) const {
    ValueChange v{sa.name, sb.name, TensorType(*sa.tensor), TensorType(*sb.tensor), std::nullopt};
    bool comparable = sa.tensor->data_type() == sb.tensor->data_type() && v.a_type == v.b_type &&
                      sa.tensor->data_type() != onnx::TensorProto::STRING;
    if (comparable) {
      runtime::Tensor x = runtime::TensorFromProto(a_.model(), *sa.tensor);
      runtime::Tensor y = runtime::TensorFromProto(b_.model(), *sb.tensor);
      v.max_abs = runtime::CompareTensors(x, y, 0, 0).max_abs;
    }
    return v;
  }

  // Where an input comes from, in words ("initializer 'w' float32[4]", "Conv 'c' output 0").
  std::string Describe(const MatchSide& side, const TensorSource& s, bool side_a) const {
    using Kind = TensorSource::Kind;
    switch (s.kind) {
      case Kind::kNone:
        return "(none)";
      case Kind::kUndefined:
        return fmt::format("undefined '{}'", s.name);
      case Kind::kGraphInput:
        return fmt::format("graph input '{}'", s.name);
      case Kind::kValue: {
        std::string type = s.tensor ? " " + TensorType(*s.tensor) : "";
        if (s.index >= 0) return fmt::format("Constant '{}'{}", s.name, type);
        return fmt::format("initializer '{}'{}", s.name, type);
      }
      case Kind::kNode: {
        bool matched = side_a ? m_.a_to_b[s.index] >= 0 : m_.b_to_a[s.index] >= 0;
        return fmt::format("'{}' from {}{}", s.name,
                           ir::QuotedNodeLabel(ir::NodeLabel(side.graph().node(s.index), s.index),
                                               OpName(side.graph().node(s.index))),
                           matched  ? ""
                           : side_a ? " (removed)"
                                    : " (added)");
      }
    }
    return "";
  }

  // What became of removed node `r`: follow its outputs through other removed nodes to the
  // first matched consumer, and say what that consumer's counterpart reads instead.
  std::string Fate(int r, const std::vector<int>& state_b) const {
    std::vector<int> queue = {r};
    std::set<int> seen = {r};
    for (size_t k = 0; k < queue.size() && k < 256; ++k) {
      const auto& n = a_.graph().node(queue[k]);
      for (const auto& out : n.output()) {
        if (out.empty()) continue;
        for (int c : a_.view().Consumers(out)) {
          if (m_.a_to_b[c] >= 0) {
            if (auto fate = FateAt(c, out, state_b)) return *fate;
          } else if (seen.insert(c).second) {
            queue.push_back(c);
          }
        }
        if (a_.view().IsGraphOutput(out)) return "its output was a graph output";
      }
    }
    return "its result is not used by any node both models share";
  }

  std::optional<std::string> FateAt(int consumer, const std::string& tensor,
                                    const std::vector<int>& state_b) const {
    const auto& x = a_.graph().node(consumer);
    const int j = m_.a_to_b[consumer];
    const auto& y = b_.graph().node(j);
    std::string where = ir::QuotedNodeLabel(ir::NodeLabel(y, j), OpName(y));
    for (int p = 0; p < x.input_size(); ++p) {
      if (x.input(p) != tensor) continue;
      TensorSource sb = b_.SourceOf(p < y.input_size() ? y.input(p) : "");
      if (sb.kind == TensorSource::Kind::kValue) {
        TensorSource own = a_.SourceOf(tensor);
        bool same = own.kind == TensorSource::Kind::kValue && own.value == sb.value;
        return fmt::format("{} {} '{}' (input {} of {})", same ? "became" : "folded into",
                           sb.index >= 0 ? "Constant" : "initializer", sb.name, p, where);
      }
      if (sb.kind == TensorSource::Kind::kNode && m_.b_to_a[sb.index] >= 0) {
        const auto& m = b_.graph().node(sb.index);
        std::string from = ir::QuotedNodeLabel(ir::NodeLabel(m, sb.index), OpName(m));
        if (state_b[sb.index] == 1) return fmt::format("fused into {}", from);
        return fmt::format("bypassed: {} reads {} instead", where, from);
      }
      if (sb.kind == TensorSource::Kind::kGraphInput) {
        return fmt::format("bypassed: {} reads graph input '{}' instead", where, sb.name);
      }
      if (sb.kind == TensorSource::Kind::kNode) {
        return fmt::format("replaced: {} reads '{}' of added {}", where, sb.name,
                           OpName(b_.graph().node(sb.index)));
      }
    }
    return std::nullopt;
  }

  const MatchSide& a_;
  const MatchSide& b_;
  const GraphMatch& m_;
};

runtime::TensorMap DiffInputs(const io::Model& a, const DiffOptions& o, std::string& what) {
  runtime::Session specs(a, o.compare.session);
  if (o.data_dir.empty()) {
    what = fmt::format("random (seed {})", o.seed);
    return runtime::CompleteWithRandom(specs, {}, o.seed);
  }
  quant::SampleSet set = quant::ListSamples(o.data_dir, specs.inputs(), std::nullopt);
  if (set.size() == 0) ThrowBadInput("'{}' holds no sample", o.data_dir.string());
  what = fmt::format("sample '{}' of {}", set.ids[0], o.data_dir.string());
  return quant::LoadSample(set, 0, specs.inputs());
}

NumericDiff RunBoth(const io::Model& a, const io::Model& b, const GraphMatch& m,
                    const MatchSide& sa, const MatchSide& sb, const DiffOptions& o) {
  NumericDiff n;
  runtime::TensorMap inputs = DiffInputs(a, o, n.inputs);
  // B reads the same values under its own input names.
  for (size_t i = 0; i < m.inputs_a_to_b.size(); ++i) {
    if (m.inputs_a_to_b[i] < 0) continue;
    auto it = inputs.find(a.proto.graph().input(static_cast<int>(i)).name());
    if (it != inputs.end()) inputs[b.proto.graph().input(m.inputs_a_to_b[i]).name()] = it->second;
  }
  runtime::CompareOptions options = o.compare;
  options.per_tensor = true;
  options.names_b = analysis::MatchedTensors(m, sa, sb);
  for (const auto& [x, y] : options.names_b) n.a_names.emplace(y, x);
  n.comparison = runtime::CompareModels(a, b, inputs, options);
  return n;
}

io::Model PinnedCopy(const io::Model& model, const shape::InputShapes& shapes) {
  io::Model m = model;
  shape::ApplyInputShapes(m, shapes);
  return m;
}

ModelDiff DiffPinned(const io::Model& a, const io::Model& b, const DiffOptions& o) {
  MatchSide sa(a), sb(b);
  GraphMatch m = analysis::MatchGraphs(sa, sb);
  ModelDiff d = Differ(sa, sb, m).Build();
  if (o.numeric) d.numeric = RunBoth(a, b, m, sa, sb, o);
  return d;
}

}  // namespace

bool ModelDiff::StructureSame() const {
  return header.empty() && io.empty() && removed.empty() && added.empty() && changed.empty();
}

bool ModelDiff::Same() const {
  return StructureSame() && (!numeric || numeric->comparison.within_tolerance);
}

ModelDiff DiffStage(const io::Model& a, const io::Model& b, const DiffOptions& options) {
  if (options.input_shapes.empty()) return DiffPinned(a, b, options);
  // Copies only when pinning: the comparison itself reads both models in place.
  return DiffPinned(PinnedCopy(a, options.input_shapes), PinnedCopy(b, options.input_shapes),
                    options);
}

}  // namespace porttool::stages
