#include "lib/decide/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "lib/decide/scan.h"
#include "lib/ir/dtype.h"

namespace porttool::decide {
namespace {

// Work of one node in MAC units: its MACs when counted, else one per output element (elementwise
// and data-movement ops are bandwidth-bound; this keeps them from being free).
std::vector<double> NodeWork(const AnalyzedModel& model, int& unknown) {
  const auto& g = model.graph();
  std::vector<double> work(g.node_size(), 0);
  std::map<int, uint64_t> macs;
  for (const auto& c : model.facts().macs_by_node) macs[c.index] = c.macs;
  for (int i = 0; i < g.node_size(); ++i) {
    if (auto it = macs.find(i); it != macs.end() && it->second > 0) {
      work[i] = static_cast<double>(it->second);
      continue;
    }
    for (const auto& out : g.node(i).output()) {
      const TensorInfo* info = model.Info(out);
      if (info && info->IsStatic()) {
        work[i] += static_cast<double>(ir::ElementCount(info->dims));
      } else if (!out.empty()) {
        ++unknown;
      }
    }
  }
  return work;
}

// Moves every node of accelerator segment `seg` (by topological run) to the host.
std::vector<bool> MoveToHost(const std::vector<bool>& host, const std::vector<int>& order,
                             const std::vector<int>& segment_of_step, int seg) {
  std::vector<bool> out = host;
  for (size_t s = 0; s < order.size(); ++s) {
    if (segment_of_step[s] == seg) out[order[s]] = true;
  }
  return out;
}

std::vector<int> SegmentOfStep(const std::vector<bool>& host, const std::vector<int>& order) {
  std::vector<int> seg(order.size(), 0);
  for (size_t s = 1; s < order.size(); ++s) {
    seg[s] = seg[s - 1] + (host[order[s]] != host[order[s - 1]] ? 1 : 0);
  }
  return seg;
}

double Ms(double work, double per_s) { return per_s > 0 ? 1000.0 * work / per_s : 0; }

}  // namespace

CostModel CostModelFor(const TargetProfile& t) {
  CostModel c;
  c.accel_macs_per_s = t.peak_macs_per_s * (t.efficiency > 0 ? t.efficiency : 1.0);
  c.host_macs_per_s = t.host_macs_per_s > 0 ? t.host_macs_per_s : 1e10;
  c.bridge_bytes_per_s = t.bridge_bytes_per_s > 0 ? t.bridge_bytes_per_s : 1e9;
  c.switch_ms = t.switch_ms >= 0 ? t.switch_ms : 0.5;
  if (c.accel_macs_per_s <= 0) c.accel_macs_per_s = c.host_macs_per_s;
  c.source = t.pipeline_source.empty()
                 ? "defaults (the profile has no \"pipeline\" costs): host 1e10 MAC/s, bridges "
                   "1 GB/s, 0.5 ms per switch"
                 : t.pipeline_source;
  return c;
}

PartitionPlan EstimatePartition(const AnalyzedModel& model, const std::vector<bool>& host,
                                const CostModel& costs, const std::string& name) {
  int unknown = 0;
  std::vector<double> work = NodeWork(model, unknown);
  const auto& view = model.view();
  std::vector<int> order = view.TopoOrder();
  std::vector<int> seg = SegmentOfStep(host, order);
  PartitionPlan plan{name, host, {}, 0};
  plan.segments.resize(order.empty() ? 0 : seg.back() + 1);
  std::vector<int> seg_of_node(host.size(), -1);
  for (size_t s = 0; s < order.size(); ++s) {
    seg_of_node[order[s]] = seg[s];
    auto& e = plan.segments[seg[s]];
    e.host = host[order[s]];
    ++e.nodes;
    e.compute_ms += Ms(work[order[s]], e.host ? costs.host_macs_per_s : costs.accel_macs_per_s);
  }
  // A tensor crosses once into every later segment that reads it.
  for (size_t s = 0; s < order.size(); ++s) {
    for (const auto& out : model.graph().node(order[s]).output()) {
      std::set<int> readers;
      for (int c : view.Consumers(out)) {
        if (seg_of_node[c] != seg[s]) readers.insert(seg_of_node[c]);
      }
      const TensorInfo* info = model.Info(out);
      uint64_t bytes = info ? info->Bytes().value_or(0) : 0;
      for (int r : readers) {
        plan.segments[r].bridge_bytes += bytes;
        plan.segments[r].transfer_ms += Ms(static_cast<double>(bytes), costs.bridge_bytes_per_s);
      }
    }
  }
  for (size_t i = 1; i < plan.segments.size(); ++i) plan.segments[i].switch_ms = costs.switch_ms;
  for (const auto& e : plan.segments) plan.total_ms += e.total_ms();
  return plan;
}

Partition PlanPartition(const AnalyzedModel& model, const std::vector<bool>& forced_host,
                        const TargetProfile& target, const PartitionOptions& options) {
  Partition p;
  p.costs = CostModelFor(target);
  int unknown = 0;
  NodeWork(model, unknown);
  if (unknown > 0) {
    p.notes.push_back(fmt::format(
        "{} tensor(s) have no static shape: their nodes are costed as free (pin the inputs)",
        unknown));
  }
  std::vector<int> order = model.view().TopoOrder();
  PartitionPlan naive = EstimatePartition(model, forced_host, p.costs,
                                          "every node the accelerator cannot run on the host");
  PartitionPlan current = naive;
  // Greedy: move the accelerator island whose move helps most (or is forced by the options),
  // until no move helps and the options hold.
  for (;;) {
    std::vector<int> seg = SegmentOfStep(current.host, order);
    int segments = static_cast<int>(current.segments.size());
    bool too_many = options.max_segments > 0 && segments > options.max_segments;
    // The last accelerator segment never moves for an estimated gain: the host and switch figures
    // are assumptions, and a small model would otherwise always go wholly to the host, losing
    // the accelerator the user ports for (the all-host estimate stays among the alternatives).
    // Only the user's own bounds (--min-segment-nodes, --max-segments) move it.
    int accelerator_segments =
        static_cast<int>(std::count_if(current.segments.begin(), current.segments.end(),
                                       [](const SegmentEstimate& e) { return !e.host; }));
    std::optional<PartitionPlan> best;
    int best_rank = -1;
    double best_gain = 0;
    for (int s = 0; s < segments && segments > 1; ++s) {
      if (current.segments[s].host) continue;
      PartitionPlan moved =
          EstimatePartition(model, MoveToHost(current.host, order, seg, s), p.costs, "chosen");
      double gain = current.total_ms - moved.total_ms;
      // Below --min-segment-nodes first, then real gains, then (over --max-segments) the
      // cheapest loss.
      bool worth_moving = gain > 1e-9 && accelerator_segments > 1;
      int rank = current.segments[s].nodes < options.min_segment_nodes ? 2
                 : worth_moving                                        ? 1
                 : too_many                                            ? 0
                                                                       : -1;
      if (rank < 0 || rank < best_rank || (rank == best_rank && gain <= best_gain)) continue;
      best = std::move(moved);
      best_rank = rank;
      best_gain = gain;
    }
    if (!best) break;
    current = std::move(*best);
  }
  current.name = "chosen";
  p.chosen = current;
  p.alternatives.push_back(naive);
  if (target.has_host_cpu) {
    p.alternatives.push_back(EstimatePartition(model, std::vector<bool>(forced_host.size(), true),
                                               p.costs, "all on the host"));
  }
  return p;
}

Partition PlanAutoSplit(const io::Model& model, const TargetProfile& profile,
                        const PartitionOptions& options) {
  AnalyzedModel analyzed(model, {});
  return PlanPartition(analyzed, HostNodes(analyzed, ScanTarget(analyzed, profile)), profile,
                       options);
}

nlohmann::json PartitionToJson(const Partition& p) {
  auto plan_json = [](const PartitionPlan& plan) {
    nlohmann::json segs = nlohmann::json::array();
    for (size_t i = 0; i < plan.segments.size(); ++i) {
      const auto& e = plan.segments[i];
      segs.push_back({{"index", i},
                      {"role", e.host ? "host" : "accelerator"},
                      {"nodes", e.nodes},
                      {"compute_ms", e.compute_ms},
                      {"transfer_ms", e.transfer_ms},
                      {"switch_ms", e.switch_ms},
                      {"bridge_bytes_in", e.bridge_bytes},
                      {"total_ms", e.total_ms()}});
    }
    return nlohmann::json{{"name", plan.name},
                          {"segments", segs.size()},
                          {"total_ms", plan.total_ms},
                          {"per_segment", segs}};
  };
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& a : p.alternatives) alternatives.push_back(plan_json(a));
  return {{"cost_model",
           {{"accelerator_macs_per_s", p.costs.accel_macs_per_s},
            {"host_macs_per_s", p.costs.host_macs_per_s},
            {"bridge_bytes_per_s", p.costs.bridge_bytes_per_s},
            {"switch_ms", p.costs.switch_ms},
            {"source", p.costs.source}}},
          {"chosen", plan_json(p.chosen)},
          {"alternatives", alternatives},
          {"notes", p.notes}};
}

std::string PartitionToText(const Partition& p) {
  std::string out = fmt::format("estimate (cost model: {}):\n", p.costs.source);
  out += fmt::format("{:>3}  {:<12} {:>6} {:>11} {:>12} {:>10} {:>10}\n", "#", "role", "nodes",
                     "compute ms", "transfer ms", "switch ms", "total ms");
  for (size_t i = 0; i < p.chosen.segments.size(); ++i) {
    const auto& e = p.chosen.segments[i];
    out += fmt::format("{:>3}  {:<12} {:>6} {:>11.3f} {:>12.3f} {:>10.3f} {:>10.3f}\n", i,
                       e.host ? "host" : "accelerator", e.nodes, e.compute_ms, e.transfer_ms,
                       e.switch_ms, e.total_ms());
  }
  out += fmt::format("pipeline: {:.3f} ms in {} segment(s); alternatives considered:\n",
                     p.chosen.total_ms, p.chosen.segments.size());
  for (const auto& a : p.alternatives) {
    out += fmt::format("  {:<52} {:>3} segment(s) {:>10.3f} ms\n", a.name, a.segments.size(),
                       a.total_ms);
  }
  for (const auto& n : p.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace porttool::decide
