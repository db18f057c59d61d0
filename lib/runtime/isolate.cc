#include "lib/runtime/isolate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/ir/node_names.h"
#include "lib/runtime/node_evaluator.h"
#include "lib/runtime/spill_file.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {
namespace {

// Error histograms per tensor stay small: 40 bins a decade (medians within 3%), grown to cover
// the errors seen, instead of the 400 a decade preallocated for one comparison at a time.
constexpr int kIsolateBinsPerDecade = 40;

// Names the main-graph nodes produce, Constant nodes apart (weights, not results).
std::set<std::string> IsolateProducedNames(const onnx::GraphProto& graph) {
  std::set<std::string> names;
  for (const auto& n : graph.node()) {
    if (n.op_type() == "Constant") continue;
    for (const auto& out : n.output()) {
      if (!out.empty()) names.insert(out);
    }
  }
  return names;
}

std::map<std::string, int> IsolateOpsets(const onnx::ModelProto& model) {
  std::map<std::string, int> opsets;
  for (const auto& op : model.opset_import()) {
    opsets[CanonicalDomain(op.domain())] = static_cast<int>(op.version());
  }
  return opsets;
}

// A's copy of a tensor in the spill file, a chunk at a time, as doubles.
ChunkSource SpilledChunks(SpillFile& spill, const SpillFile::Entry& entry,
                          std::vector<char>& bytes) {
  return [&spill, &entry, &bytes](int64_t begin, int64_t count, double* v) {
    const size_t element = ir::DtypeSize(entry.dtype);
    bytes.resize(static_cast<size_t>(count) * element);
    spill.ReadAt(entry.offset + static_cast<uint64_t>(begin) * element, bytes.data(), bytes.size());
    Tensor view = Tensor::View(entry.dtype, {count}, bytes.data(), nullptr);
    ChunksOf(view)(0, count, v);
  };
}

}  // namespace

struct IsolateComparison::State {
  const io::Model& a;
  const io::Model& b;
  CompareOptions options;
  ir::GraphView view_b;
  std::map<std::string, int> opsets_b;
  std::set<std::string> shared;  // names both models' nodes produce
  std::set<std::string> inputs_b;
  std::unique_ptr<Session> run_a, run_b;

  // One node of B that produces shared tensors, with its cone.
  struct Group {
    int node = 0;
    std::string label, op;
    std::vector<int> cone;                          // B's node indices, topological
    std::vector<std::vector<std::string>> release;  // per cone step: tensors dead after it
    std::vector<std::string> from_a;                // shared names the cone reads
    std::vector<std::string> tensors;               // its shared outputs
    std::optional<std::string> failed;              // why it cannot be evaluated
  };
  std::vector<Group> groups;  // in B's topological order
  struct Errors {
    StatsAccumulator local{kIsolateBinsPerDecade, false};
    StatsAccumulator accumulated{kIsolateBinsPerDecade, false};
    size_t group = 0;
  };
  std::map<std::string, Errors> errors;  // per shared tensor
  std::map<std::string, StatsAccumulator> outputs;
  std::vector<std::string> output_names_a;
  std::set<std::string> unmatched_outputs;
  std::vector<NotComparable> not_comparable;
  std::unordered_map<std::string, Tensor> weights_b;  // B's initializers the cones read
  std::vector<double> chunk_a = std::vector<double>(1 << 14),
                      chunk_b = std::vector<double>(1 << 14);
  std::vector<char> bytes;
  size_t samples = 0;

  State(const io::Model& model_a, const io::Model& model_b, const CompareOptions& o)
      : a(model_a), b(model_b), options(o), view_b(model_b.proto.graph()) {
    opsets_b = IsolateOpsets(b.proto);
    std::set<std::string> produced_b = IsolateProducedNames(b.proto.graph());
    for (const auto& x : IsolateProducedNames(a.proto.graph())) {
      if (produced_b.count(x)) shared.insert(x);
    }
    if (shared.empty()) {
      ThrowUsage(
          "the two models share no tensor name: no node of the first produces a tensor named as "
          "one the second produces, so no layer can be fed the reference's values; compare "
          "their outputs instead");
    }
    for (const auto* in : view_b.RealInputs()) inputs_b.insert(in->name());
    run_a = std::make_unique<Session>(a, options.session);
    SessionOptions session_b = options.session;
    if (options.kernels_b) session_b.registry = options.kernels_b;
    run_b = std::make_unique<Session>(b, session_b);
    for (const auto& name : run_a->output_names()) {
      output_names_a.push_back(name);
      outputs.emplace(std::piecewise_construct, std::forward_as_tuple(name),
                      std::forward_as_tuple(kIsolateBinsPerDecade, false));
    }
    BuildGroups();
  }

  // The cone of B's node `index`: it and, recursively, the producers of what it reads that is
  // neither shared, nor a graph input, nor an initializer (Q/DQ pairs, Casts, Constants).
  void BuildGroups() {
    const std::vector<int> order = view_b.TopoOrder();
    std::vector<int> position(static_cast<size_t>(view_b.node_count()), 0);
    for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = int(i);
    std::set<int> in_some_cone;
    for (int index : order) {
      const auto& node = view_b.node(index);
      if (node.op_type() == "Constant") continue;
      Group g;
      g.node = index;
      g.label = ir::NodeLabel(node, index);
      g.op = node.op_type();
      for (const auto& out : node.output()) {
        if (shared.count(out)) g.tensors.push_back(out);
      }
      if (g.tensors.empty()) continue;
      std::set<int> cone;
      std::set<std::string> from_a;
      std::vector<int> stack = {index};
      while (!stack.empty()) {
        int n = stack.back();
        stack.pop_back();
        if (!cone.insert(n).second) continue;
        for (const auto& x : view_b.node(n).input()) {
          if (x.empty() || inputs_b.count(x) || view_b.Initializer(x)) continue;
          if (shared.count(x)) {
            from_a.insert(x);
            continue;
          }
          int p = view_b.Producer(x);
          if (p < 0) {
            g.failed = fmt::format("it reads '{}', which nothing in the model defines", x);
          } else {
            stack.push_back(p);
          }
        }
      }
      g.cone.assign(cone.begin(), cone.end());
      std::sort(g.cone.begin(), g.cone.end(), [&](int x, int y) {
        return position[static_cast<size_t>(x)] < position[static_cast<size_t>(y)];
      });
      g.from_a.assign(from_a.begin(), from_a.end());
      for (int n : g.cone) {
        in_some_cone.insert(n);
        const auto& cn = view_b.node(n);
        auto it = opsets_b.find(CanonicalDomain(cn.domain()));
        if (auto why = WhyNotEvaluable(cn, it == opsets_b.end() ? 1 : it->second)) {
          if (!g.failed) {
            g.failed =
                n == index
                    ? *why
                    : fmt::format("its cone includes node {}: {}",
                                  ir::QuotedNodeLabel(ir::NodeLabel(cn, n), cn.op_type()), *why);
          }
        }
      }
      // Each tensor of the cone is freed after the last cone node that reads it.
      g.release.resize(g.cone.size());
      std::map<std::string, size_t> last;
      for (size_t i = 0; i < g.cone.size(); ++i) {
        for (const auto& x : view_b.node(g.cone[i]).input()) {
          if (!x.empty()) last[x] = i;
        }
      }
      for (const auto& [name, step] : last) g.release[step].push_back(name);
      const size_t group_index = groups.size();
      if (g.failed) {
        for (const auto& t : g.tensors) {
          not_comparable.push_back({"b", g.label, g.op, t, *g.failed});
        }
      }
      for (const auto& t : g.tensors) errors[t].group = group_index;
      groups.push_back(std::move(g));
    }
    // A's nodes whose results B lacks, and B's nodes no shared tensor depends on.
    const auto& graph_a = a.proto.graph();
    for (int i = 0; i < graph_a.node_size(); ++i) {
      const auto& n = graph_a.node(i);
      if (n.op_type() == "Constant" || n.output_size() == 0) continue;
      bool any = false;
      for (const auto& out : n.output()) any |= shared.count(out) > 0;
      if (!any) {
        not_comparable.push_back({"a", ir::NodeLabel(n, i), n.op_type(), n.output(0),
                                  "the other model produces none of its outputs"});
      }
    }
    for (int index : order) {
      const auto& n = view_b.node(index);
      if (n.op_type() == "Constant" || in_some_cone.count(index) || n.output_size() == 0) continue;
      {
        not_comparable.push_back(
            {"b", ir::NodeLabel(n, index), n.op_type(), n.output(0),
             "the reference produces none of its outputs and no shared tensor is computed from "
             "them"});
      }
    }
  }

  const Tensor& Weight(const std::string& name) {
    auto it = weights_b.find(name);
    if (it != weights_b.end()) return it->second;
    return weights_b.emplace(name, TensorFromProto(b, *view_b.Initializer(name))).first->second;
  }

  // Adds the statistics of `candidate` against A's spilled `reference` to `acc`.
  void Accumulate(StatsAccumulator& acc, SpillFile& spill, const SpillFile::Entry& reference,
                  const Tensor& candidate, const std::string& name) {
    if (reference.shape != candidate.shape()) {
      acc.MarkIncomparable(
          fmt::format("shape differs: {} vs {}", reference.text, candidate.DebugString()));
      return;
    }
    acc.Add(candidate.size(), SpilledChunks(spill, reference, bytes), ChunksOf(candidate),
            options.For(name), chunk_a, chunk_b);
  }

  // Evaluates group `g`'s cone on A's values (from `spill`) and the sample's inputs; returns the
  // values of its shared outputs.
  std::vector<std::pair<std::string, Tensor>> EvaluateCone(const Group& g, SpillFile& spill,
                                                           const TensorMap& inputs) {
    std::unordered_map<std::string, Tensor> values;
    for (const auto& x : g.from_a) {
      const SpillFile::Entry* e = spill.Find(x);
      if (!e) ThrowInternal("isolate: the reference's '{}' was not recorded", x);
      values.emplace(x, spill.Read(*e));
    }
    std::vector<std::pair<std::string, Tensor>> results;
    for (size_t i = 0; i < g.cone.size(); ++i) {
      const auto& node = view_b.node(g.cone[i]);
      std::vector<const Tensor*> args;
      for (const auto& x : node.input()) {
        if (x.empty()) {
          args.push_back(nullptr);
        } else if (auto v = values.find(x); v != values.end()) {
          args.push_back(&v->second);
        } else if (inputs_b.count(x)) {
          auto in = inputs.find(x);
          if (in == inputs.end()) ThrowUsage("no value for the input '{}' of the second model", x);
          args.push_back(&in->second);
        } else {
          args.push_back(&Weight(x));
        }
      }
      auto it = opsets_b.find(CanonicalDomain(node.domain()));
      std::vector<Tensor> outs =
          EvaluateNode(node, it == opsets_b.end() ? 1 : it->second, args, &b);
      for (const auto& x : g.release[i]) values.erase(x);
      for (int k = 0; k < node.output_size() && k < static_cast<int>(outs.size()); ++k) {
        const std::string& name = node.output(k);
        if (name.empty()) continue;
        if (g.cone[i] == g.node && shared.count(name)) {
          results.emplace_back(name, std::move(outs[static_cast<size_t>(k)]));
        } else {
          values[name] = std::move(outs[static_cast<size_t>(k)]);
        }
      }
    }
    return results;
  }

  void AddSample(const TensorMap& all) {
    auto for_session = [&](const Session& s) {
      TensorMap mine;
      for (const auto& spec : s.inputs()) {
        if (auto it = all.find(spec.name); it != all.end()) mine[spec.name] = it->second;
      }
      return mine;
    };
    SpillFile spill(options.scratch_dir, shared.size() + output_names_a.size());
    auto outs_a = run_a->Run(for_session(*run_a), [&](const std::string& name, const Tensor& v) {
      if (shared.count(name)) spill.Put(name, v);
    });
    for (const auto& o : outs_a) spill.Put(o.name, o.value);
    outs_a.clear();
    spill.Finish();
    TensorMap inputs_b = for_session(*run_b);
    auto outs_b = run_b->Run(inputs_b, [&](const std::string& name, const Tensor& v) {
      auto it = errors.find(name);
      const SpillFile::Entry* ref = it == errors.end() ? nullptr : spill.Find(name);
      if (!ref) return;  // not shared, or A did not produce it in this run
      Accumulate(it->second.accumulated, spill, *ref, v, name);
    });
    for (const auto& name : output_names_a) {
      auto it = std::find_if(outs_b.begin(), outs_b.end(),
                             [&](const NamedTensor& o) { return o.name == name; });
      if (it == outs_b.end()) {
        unmatched_outputs.insert(name);
        continue;
      }
      if (const SpillFile::Entry* ref = spill.Find(name)) {
        Accumulate(outputs.at(name), spill, *ref, it->value, name);
      }
    }
    outs_b.clear();
    // B's run is over: its tensors are freed before the cones run, one at a time.
    for (auto& g : groups) {
      if (g.failed) continue;
      std::vector<std::pair<std::string, Tensor>> local;
      try {
        local = EvaluateCone(g, spill, inputs_b);
      } catch (const Error& e) {
        g.failed = e.what();
        for (const auto& t : g.tensors) {
          not_comparable.push_back({"b", g.label, g.op, t, g.failed.value()});
        }
        continue;
      }
      for (const auto& [name, value] : local) {
        if (const SpillFile::Entry* ref = spill.Find(name)) {
          Accumulate(errors.at(name).local, spill, *ref, value, name);
        }
      }
    }
    ++samples;
  }
};

IsolateComparison::IsolateComparison(const io::Model& a, const io::Model& b,
                                     const CompareOptions& options)
    : state_(std::make_unique<State>(a, b, options)) {}

IsolateComparison::~IsolateComparison() = default;

void IsolateComparison::AddSample(const TensorMap& inputs) { state_->AddSample(inputs); }

IsolateResult IsolateComparison::Result() const {
  const State& s = *state_;
  IsolateResult r;
  r.samples = s.samples;
  r.not_comparable = s.not_comparable;
  for (size_t gi = 0; gi < s.groups.size(); ++gi) {
    const auto& g = s.groups[gi];
    if (g.failed) continue;
    for (const auto& t : g.tensors) {
      IsolatedTensor x;
      x.tensor = t;
      x.node = g.label;
      x.op = g.op;
      x.order = static_cast<int>(gi);
      x.from_a = g.from_a;
      x.cone_nodes = static_cast<int>(g.cone.size());
      x.local = s.errors.at(t).local.Stats();
      x.accumulated = s.errors.at(t).accumulated.Stats();
      r.tensors.push_back(std::move(x));
    }
  }
  // Incomparable statistics (shape differs) last, then lowest SQNR first.
  auto key = [](const TensorStats& st) {
    return st.comparable ? st.sqnr_db : std::numeric_limits<double>::infinity();
  };
  std::stable_sort(r.tensors.begin(), r.tensors.end(),
                   [&](const IsolatedTensor& x, const IsolatedTensor& y) {
                     if (x.local.comparable != y.local.comparable) return x.local.comparable;
                     if (key(x.local) != key(y.local)) return key(x.local) < key(y.local);
                     if (key(x.accumulated) != key(y.accumulated)) {
                       return key(x.accumulated) < key(y.accumulated);
                     }
                     return x.order < y.order;
                   });
  for (const auto& name : s.output_names_a) {
    if (s.unmatched_outputs.count(name)) {
      r.unmatched_outputs.push_back(name);
      r.within_tolerance = false;
      continue;
    }
    TensorComparison c;
    c.name = name;
    int p = s.view_b.Producer(name);
    if (p >= 0) {
      c.node = ir::NodeLabel(s.view_b.node(p), p);
      c.op = s.view_b.node(p).op_type();
    }
    c.stats = s.outputs.at(name).Stats();
    if (!c.stats.within_tolerance) r.within_tolerance = false;
    r.outputs.push_back(std::move(c));
  }
  return r;
}

}  // namespace porttool::runtime
