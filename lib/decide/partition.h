// The split --auto cost model: which nodes run on the accelerator and which on the host CPU.
// The scan fixes the nodes the accelerator cannot run (they go to the host); every other node may
// go either way. A partition is costed from the target profile: accelerator and host throughput
// (MACs, or output elements for ops without MACs), the transfer of every bridge tensor, and a
// fixed cost per segment switch. An accelerator island whose bridges and switches cost more than
// running it on the host saves is moved to the host, except the last one: an estimate never
// sends a model the accelerator can run wholly to the host. --min-segment-nodes and
// --max-segments bound the result. The alternatives considered are reported with their estimates.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/decide/analyzed_model.h"
#include "lib/decide/target.h"

namespace porttool::decide {

struct CostModel {
  double accel_macs_per_s = 0;  // peak x efficiency
  double host_macs_per_s = 0;
  double bridge_bytes_per_s = 0;
  double switch_ms = 0;
  std::string source;  // the profile's text, or that the defaults are assumptions
};

// The profile's figures; documented defaults where the profile has none.
CostModel CostModelFor(const TargetProfile& target);

struct SegmentEstimate {
  bool host = false;
  int nodes = 0;
  double compute_ms = 0;
  double transfer_ms = 0;  // bridges read by this segment
  double switch_ms = 0;    // 0 for the first segment
  uint64_t bridge_bytes = 0;
  double total_ms() const { return compute_ms + transfer_ms + switch_ms; }
};

struct PartitionPlan {
  std::string name;        // "chosen", "every unsupported run on the host", "all on the host"
  std::vector<bool> host;  // per main-graph node
  std::vector<SegmentEstimate> segments;
  double total_ms = 0;
};

struct PartitionOptions {
  int min_segment_nodes = 1;  // accelerator segments smaller than this run on the host
  int max_segments = 0;       // 0: no limit
};

struct Partition {
  PartitionPlan chosen;
  std::vector<PartitionPlan> alternatives;
  CostModel costs;
  std::vector<std::string> notes;  // e.g. nodes whose work is unknown (no static shape)
};

// `forced_host[i]`: node i cannot run on the accelerator (HostNodes of the scan).
Partition PlanPartition(const AnalyzedModel& model, const std::vector<bool>& forced_host,
                        const TargetProfile& target, const PartitionOptions& options);

// Estimates one assignment (segments are the maximal runs of equal role in topological order,
// as ir::SplitModel forms them).
PartitionPlan EstimatePartition(const AnalyzedModel& model, const std::vector<bool>& host,
                                const CostModel& costs, const std::string& name);

// `split --auto --target`: scan `model` (shapes already completed) on the target and plan the
// partition.
Partition PlanAutoSplit(const io::Model& model, const TargetProfile& target,
                        const PartitionOptions& options);

nlohmann::json PartitionToJson(const Partition& partition);
std::string PartitionToText(const Partition& partition);

}  // namespace porttool::decide
