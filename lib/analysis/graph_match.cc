#include "lib/analysis/graph_match.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>

namespace porttool::analysis {
namespace {

uint64_t Mix(uint64_t seed, uint64_t v) {
  // boost::hash_combine's mixing, widened to 64 bits.
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 12) + (seed >> 4));
}

uint64_t HashText(std::string_view text) { return std::hash<std::string_view>{}(text); }

bool IsConstantNode(const onnx::NodeProto& n) {
  return n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx");
}

uint64_t OpKey(const onnx::NodeProto& n) {
  return Mix(HashText(n.domain() == "ai.onnx" ? "" : n.domain()), HashText(n.op_type()));
}

}  // namespace

MatchSide::MatchSide(const io::Model& model) : model_(model), view_(model.proto.graph()) {
  const auto& g = graph();
  for (int i = 0; i < g.input_size(); ++i) {
    if (!view_.Initializer(g.input(i).name())) input_index_.emplace(g.input(i).name(), i);
  }
}

int MatchSide::GraphInputIndex(const std::string& name) const {
  auto it = input_index_.find(name);
  return it == input_index_.end() ? -1 : it->second;
}

uint64_t MatchSide::Fingerprint(const onnx::TensorProto& tensor) const {
  if (auto it = fingerprints_.find(&tensor); it != fingerprints_.end()) return it->second;
  uint64_t h = Mix(0x5eed, static_cast<uint64_t>(tensor.data_type()));
  for (int64_t d : tensor.dims()) h = Mix(h, static_cast<uint64_t>(d));
  if (tensor.data_type() == onnx::TensorProto::STRING) {
    for (const auto& s : tensor.string_data()) h = Mix(h, HashText(s));
  } else {
    io::TensorBytes bytes = io::ReadTensorBytes(model_, tensor);
    h = Mix(h, HashText(std::string_view(reinterpret_cast<const char*>(bytes.bytes.data()),
                                         bytes.bytes.size())));
  }
  fingerprints_.emplace(&tensor, h);
  return h;
}

uint64_t MatchSide::SubgraphKey(const onnx::GraphProto& g) const {
  uint64_t h = Mix(static_cast<uint64_t>(g.input_size()), static_cast<uint64_t>(g.output_size()));
  for (const auto& t : g.initializer()) h = Mix(h, Fingerprint(t));
  for (const auto& n : g.node()) {
    h = Mix(h, OpKey(n));
    h = Mix(h, static_cast<uint64_t>(n.input_size() * 131 + n.output_size()));
    for (const auto& a : n.attribute()) h = Mix(Mix(h, HashText(a.name())), AttributeKey(a));
  }
  return h;
}

uint64_t MatchSide::AttributeKey(const onnx::AttributeProto& attr) const {
  uint64_t h = Mix(static_cast<uint64_t>(attr.type()), HashText(attr.ref_attr_name()));
  switch (attr.type()) {
    case onnx::AttributeProto::TENSOR:
      return Mix(h, Fingerprint(attr.t()));
    case onnx::AttributeProto::TENSORS:
      for (const auto& t : attr.tensors()) h = Mix(h, Fingerprint(t));
      return h;
    case onnx::AttributeProto::GRAPH:
      return Mix(h, SubgraphKey(attr.g()));
    case onnx::AttributeProto::GRAPHS:
      for (const auto& g : attr.graphs()) h = Mix(h, SubgraphKey(g));
      return h;
    default: {
      // Scalars and lists: the serialized value, without the name and doc string.
      onnx::AttributeProto copy = attr;
      copy.clear_name();
      copy.clear_doc_string();
      return Mix(h, HashText(copy.SerializeAsString()));
    }
  }
}

std::map<std::string, uint64_t> MatchSide::AttributeKeys(const onnx::NodeProto& node) const {
  std::map<std::string, uint64_t> keys;
  for (const auto& a : node.attribute()) keys[a.name()] = AttributeKey(a);
  return keys;
}

TensorSource MatchSide::SourceOf(const std::string& tensor) const {
  TensorSource s;
  s.name = tensor;
  if (tensor.empty()) return s;
  if (int p = view_.Producer(tensor); p >= 0) {
    const auto& n = view_.node(p);
    if (IsConstantNode(n) && n.attribute_size() == 1) {
      s.kind = TensorSource::Kind::kValue;
      const auto& a = n.attribute(0);
      s.tensor = a.type() == onnx::AttributeProto::TENSOR ? &a.t() : nullptr;
      s.value = s.tensor ? Fingerprint(*s.tensor) : AttributeKey(a);
      s.index = p;
      return s;
    }
    s.kind = TensorSource::Kind::kNode;
    s.index = p;
    s.output = static_cast<int>(std::find(n.output().begin(), n.output().end(), tensor) -
                                n.output().begin());
    return s;
  }
  if (const auto* init = view_.Initializer(tensor)) {
    s.kind = TensorSource::Kind::kValue;
    s.tensor = init;
    s.value = Fingerprint(*init);
    return s;
  }
  if (int i = GraphInputIndex(tensor); i >= 0) {
    s.kind = TensorSource::Kind::kGraphInput;
    s.index = i;
    return s;
  }
  s.kind = TensorSource::Kind::kUndefined;
  return s;
}

size_t GraphMatch::matched() const {
  return static_cast<size_t>(
      std::count_if(a_to_b.begin(), a_to_b.end(), [](int b) { return b >= 0; }));
}

namespace {

// The matching state and its passes. Keys are written in A's terms: a B node's producer stands
// for the A node it matched, so equal keys mean equal structure whatever the names.
class Matcher {
 public:
  Matcher(const MatchSide& a, const MatchSide& b) : a_(a), b_(b) {
    m_.a_to_b.assign(a.graph().node_size(), -1);
    m_.b_to_a.assign(b.graph().node_size(), -1);
    m_.how.assign(a.graph().node_size(), MatchedBy::kNone);
    order_a_ = a.view().TopoOrder();
    order_b_ = b.view().TopoOrder();
    attr_a_ = AttributeHashes(a);
    attr_b_ = AttributeHashes(b);
  }

  GraphMatch Run() {
    MatchInputs();
    MatchOutputs();
    MatchByName();
    // Strict keys first, to a fixed point; a looser key only where they leave nodes over, and
    // back to strict keys after each loose match (what follows a changed node is unchanged).
    for (;;) {
      while (Pass(KeyKind::kStrict)) {
      }
      if (Pass(KeyKind::kFirstInputAttributes) || Pass(KeyKind::kConsumers) ||
          Pass(KeyKind::kInputsOnly)) {
        continue;
      }
      break;
    }
    return std::move(m_);
  }

 private:
  static std::vector<uint64_t> AttributeHashes(const MatchSide& side) {
    std::vector<uint64_t> out;
    out.reserve(side.graph().node_size());
    for (const auto& n : side.graph().node()) {
      uint64_t h = 0x0a77;
      for (const auto& [name, key] : side.AttributeKeys(n)) h = Mix(Mix(h, HashText(name)), key);
      out.push_back(h);
    }
    return out;
  }

  void Pair(int a, int b, MatchedBy how) {
    m_.a_to_b[a] = b;
    m_.b_to_a[b] = a;
    m_.how[a] = how;
  }

  // Graph inputs and outputs: by name, then the rest by position.
  static void PairLists(const std::vector<std::string>& a, const std::vector<std::string>& b,
                        std::vector<int>& a_to_b, std::vector<int>& b_to_a) {
    std::map<std::string, int> index_b;
    for (size_t j = 0; j < b.size(); ++j) index_b.emplace(b[j], static_cast<int>(j));
    for (size_t i = 0; i < a.size(); ++i) {
      auto it = index_b.find(a[i]);
      if (!a[i].empty() && it != index_b.end() && b_to_a[it->second] < 0) {
        a_to_b[i] = it->second;
        b_to_a[it->second] = static_cast<int>(i);
      }
    }
    size_t j = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a_to_b[i] >= 0 || a[i].empty()) continue;
      while (j < b.size() && (b_to_a[j] >= 0 || b[j].empty())) ++j;
      if (j == b.size()) break;
      a_to_b[i] = static_cast<int>(j);
      b_to_a[j] = static_cast<int>(i);
    }
  }

  // Names of graph.input() that are real inputs; initializers listed as inputs become "".
  static std::vector<std::string> RealInputNames(const MatchSide& side) {
    std::vector<std::string> names;
    for (const auto& in : side.graph().input()) {
      names.push_back(side.GraphInputIndex(in.name()) >= 0 ? in.name() : "");
    }
    return names;
  }

  void MatchInputs() {
    auto a = RealInputNames(a_), b = RealInputNames(b_);
    m_.inputs_a_to_b.assign(a.size(), -1);
    m_.inputs_b_to_a.assign(b.size(), -1);
    PairLists(a, b, m_.inputs_a_to_b, m_.inputs_b_to_a);
  }

  void MatchOutputs() {
    std::vector<std::string> a, b;
    for (const auto& o : a_.graph().output()) a.push_back(o.name());
    for (const auto& o : b_.graph().output()) b.push_back(o.name());
    m_.outputs_a_to_b.assign(a.size(), -1);
    m_.outputs_b_to_a.assign(b.size(), -1);
    PairLists(a, b, m_.outputs_a_to_b, m_.outputs_b_to_a);
  }

  void MatchByName() {
    std::unordered_map<std::string, int> count_a, count_b;
    for (const auto& n : a_.graph().node()) ++count_a[n.name()];
    for (const auto& n : b_.graph().node()) ++count_b[n.name()];
    for (int i = 0; i < a_.graph().node_size(); ++i) {
      const auto& n = a_.graph().node(i);
      if (n.name().empty() || count_a[n.name()] != 1 || count_b[n.name()] != 1) continue;
      int j = b_.view().FindNode(n.name());
      if (OpKey(n) == OpKey(b_.graph().node(j))) Pair(i, j, MatchedBy::kName);
    }
  }

  // The key of one input in A's terms; nullopt while its producer is unmatched.
  std::optional<uint64_t> SourceKey(const TensorSource& s, bool side_b) const {
    using Kind = TensorSource::Kind;
    switch (s.kind) {
      case Kind::kNone:
        return 1;
      case Kind::kUndefined:
        return 2;
      case Kind::kValue:
        return Mix(3, s.value);
      case Kind::kGraphInput: {
        int i = side_b ? m_.inputs_b_to_a[s.index] : s.index;
        if (i < 0) return std::nullopt;
        return Mix(4, static_cast<uint64_t>(i));
      }
      case Kind::kNode: {
        int i = side_b ? m_.b_to_a[s.index] : (m_.a_to_b[s.index] >= 0 ? s.index : -1);
        if (i < 0) return std::nullopt;
        return Mix(Mix(5, static_cast<uint64_t>(i)), static_cast<uint64_t>(s.output));
      }
    }
    return std::nullopt;
  }

  enum class KeyKind { kStrict, kFirstInputAttributes, kConsumers, kInputsOnly };

  std::optional<uint64_t> NodeKey(int node, bool side_b, KeyKind kind) const {
    const MatchSide& side = side_b ? b_ : a_;
    const auto& n = side.graph().node(node);
    uint64_t h = OpKey(n);
    if (kind != KeyKind::kInputsOnly) h = Mix(h, (side_b ? attr_b_ : attr_a_)[node]);
    if (kind == KeyKind::kStrict) h = Mix(h, static_cast<uint64_t>(n.output_size()));
    int inputs =
        kind == KeyKind::kFirstInputAttributes ? std::min(1, n.input_size()) : n.input_size();
    if (kind != KeyKind::kStrict && inputs == 0) return std::nullopt;  // nothing to anchor on
    for (int i = 0; i < inputs; ++i) {
      auto key = SourceKey(side.SourceOf(n.input(i)), side_b);
      if (!key) return std::nullopt;
      h = Mix(h, *key);
    }
    return h;
  }

  using Buckets = std::unordered_map<uint64_t, std::vector<int>>;

  std::optional<uint64_t> KeyFor(int node, bool side_b, KeyKind kind) const {
    return kind == KeyKind::kConsumers ? ConsumerKey(node, side_b) : NodeKey(node, side_b, kind);
  }

  void Offer(Buckets& buckets, std::vector<bool>& offered, int b, KeyKind kind) const {
    if (offered[b] || m_.b_to_a[b] >= 0) return;
    if (auto key = KeyFor(b, true, kind)) {
      buckets[*key].push_back(b);
      offered[b] = true;
    }
  }

  // Takes the first unmatched node of `bucket` (in the pass's order of B).
  int Take(std::vector<int>& bucket, std::unordered_map<uint64_t, size_t>& cursor,
           uint64_t key) const {
    size_t& at = cursor[key];
    while (at < bucket.size() && m_.b_to_a[bucket[at]] >= 0) ++at;
    return at < bucket.size() ? bucket[at++] : -1;
  }

  // The B nodes a new match (., b) may have made keyable: consumers for the keys built from
  // inputs, producers for the key built from consumers.
  void OfferNeighbours(Buckets& buckets, std::vector<bool>& offered, int b, KeyKind kind) const {
    const auto& n = b_.graph().node(b);
    if (kind == KeyKind::kConsumers) {
      for (const auto& in : n.input()) {
        if (int p = in.empty() ? -1 : b_.view().Producer(in); p >= 0) {
          Offer(buckets, offered, p, kind);
        }
      }
      return;
    }
    for (const auto& out : n.output()) {
      if (out.empty()) continue;
      for (int c : b_.view().Consumers(out)) Offer(buckets, offered, c, kind);
    }
  }

  // One pass over A (topological order; reversed for the consumer key). A match offers B's
  // neighbours at once, so a chain matches in one pass. True when anything matched.
  bool Pass(KeyKind kind) {
    ++m_.rounds;
    const bool backward = kind == KeyKind::kConsumers;
    Buckets buckets;
    std::unordered_map<uint64_t, size_t> cursor;
    std::vector<bool> offered(m_.b_to_a.size(), false);
    auto each = [&](const std::vector<int>& order, const std::function<void(int)>& fn) {
      if (backward) {
        std::for_each(order.rbegin(), order.rend(), fn);
      } else {
        std::for_each(order.begin(), order.end(), fn);
      }
    };
    each(order_b_, [&](int b) { Offer(buckets, offered, b, kind); });
    bool progress = false;
    each(order_a_, [&](int a) {
      if (m_.a_to_b[a] >= 0) return;
      auto key = KeyFor(a, false, kind);
      if (!key) return;
      auto it = buckets.find(*key);
      if (it == buckets.end()) return;
      int b = Take(it->second, cursor, *key);
      if (b < 0) return;
      Pair(a, b, kind == KeyKind::kStrict ? MatchedBy::kStructure : MatchedBy::kNeighbours);
      progress = true;
      OfferNeighbours(buckets, offered, b, kind);
    });
    return progress;
  }

  // Op, attributes, and where the outputs go: (matched consumer, input position) pairs and
  // matched graph outputs. nullopt when no consumer or output is matched yet.
  std::optional<uint64_t> ConsumerKey(int node, bool side_b) const {
    const MatchSide& side = side_b ? b_ : a_;
    const auto& n = side.graph().node(node);
    uint64_t h = Mix(OpKey(n), (side_b ? attr_b_ : attr_a_)[node]);
    bool anchored = false;
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& out = n.output(k);
      if (out.empty()) continue;
      std::vector<std::pair<int, int>> uses;
      for (int c : side.view().Consumers(out)) {
        int ca = side_b ? m_.b_to_a[c] : (m_.a_to_b[c] >= 0 ? c : -1);
        if (ca < 0) continue;
        const auto& cn = side.graph().node(c);
        for (int p = 0; p < cn.input_size(); ++p) {
          if (cn.input(p) == out) uses.emplace_back(ca, p);
        }
      }
      const auto& outputs = side.graph().output();
      for (int j = 0; j < outputs.size(); ++j) {
        int ja = side_b ? m_.outputs_b_to_a[j] : j;
        if (outputs[j].name() == out && ja >= 0) uses.emplace_back(-1, ja);
      }
      std::sort(uses.begin(), uses.end());
      anchored |= !uses.empty();
      h = Mix(h, static_cast<uint64_t>(k));
      for (const auto& [c, p] : uses) h = Mix(Mix(h, static_cast<uint64_t>(c)), p);
    }
    return anchored ? std::optional<uint64_t>(h) : std::nullopt;
  }

  const MatchSide& a_;
  const MatchSide& b_;
  GraphMatch m_;
  std::vector<int> order_a_, order_b_;
  std::vector<uint64_t> attr_a_, attr_b_;
};

}  // namespace

GraphMatch MatchGraphs(const MatchSide& a, const MatchSide& b) { return Matcher(a, b).Run(); }

bool SameSource(const GraphMatch& match, const TensorSource& x, const TensorSource& y) {
  using Kind = TensorSource::Kind;
  if (x.kind != y.kind) return false;
  switch (x.kind) {
    case Kind::kNone:
      return true;
    case Kind::kUndefined:
      return x.name == y.name;
    case Kind::kValue:
      return x.value == y.value;
    case Kind::kGraphInput:
      return match.inputs_a_to_b[x.index] == y.index;
    case Kind::kNode:
      return match.a_to_b[x.index] == y.index && x.output == y.output;
  }
  return false;
}

std::map<std::string, std::string> MatchedTensors(const GraphMatch& match, const MatchSide& a,
                                                  const MatchSide& b) {
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < match.inputs_a_to_b.size(); ++i) {
    if (match.inputs_a_to_b[i] >= 0) {
      names[a.graph().input(static_cast<int>(i)).name()] =
          b.graph().input(match.inputs_a_to_b[i]).name();
    }
  }
  for (size_t i = 0; i < match.a_to_b.size(); ++i) {
    if (match.a_to_b[i] < 0) continue;
    const auto& x = a.graph().node(static_cast<int>(i));
    const auto& y = b.graph().node(match.a_to_b[i]);
    for (int k = 0; k < x.output_size() && k < y.output_size(); ++k) {
      if (!x.output(k).empty() && !y.output(k).empty()) names[x.output(k)] = y.output(k);
    }
  }
  return names;
}

}  // namespace porttool::analysis
