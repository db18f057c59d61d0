// Target compatibility scan and memory fit: where each node of a model would run on a target
// (accelerator, directly or through the converter's lowering, CPU fallback, or unsupported) with
// the sentence of the constraint that failed, model-level findings (opset range, dynamic
// inputs), and whether weights and the activation arena fit the target's usable flash and RAM. This
// is `porttool check --target` and the input of `split --auto --target` (HostNodes) and of the
// decision report.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/check.h"
#include "lib/decide/analyzed_model.h"
#include "lib/decide/target.h"

namespace porttool::decide {

enum class Placement { kAccelerator, kCpuFallback, kUnsupported };
std::string PlacementName(Placement p);  // "accelerator", "cpu-fallback", "unsupported"

struct ConstraintFailure {
  std::string id;
  std::string text;
  std::string source;
  std::string detail;  // what the node has, e.g. "coordinate_transformation_mode is \"asymmetric\""
};

struct NodeScan {
  int index = -1;    // in the main graph; for a subgraph node, the index of its main-graph ancestor
  std::string name;  // "parent/child" for a node inside an If/Loop/Scan body
  std::string parent;  // the main-graph If/Loop/Scan node it belongs to; empty in the main graph
  std::string op;      // OpKey
  Placement placement = Placement::kAccelerator;
  std::string reason;  // why not on the accelerator (empty when it is)
  std::vector<ConstraintFailure> failures;
  std::vector<std::string> unverified;  // checks that needed unknown shapes/constants
  bool in_backbone = true;              // a compute layer follows it
  // The converter's lowering the node runs on the accelerator through (Gemm as Conv), when one
  // applied; its conditions are not copied.
  std::optional<Lowering> lowering;
  // Where it runs is not decided: some of its checks need shapes that stay unknown until the
  // model's dynamic input dims are pinned (it is listed at its placement without them).
  bool undecided = false;
};

struct TargetScan {
  std::string target;
  // Every non-Constant, non-static node of the main graph in graph order, each followed by the
  // nodes of its subgraphs (If/Loop/Scan bodies, recursively).
  std::vector<NodeScan> nodes;
  int accelerator = 0;
  int cpu_fallback = 0;
  int unsupported = 0;
  int lowered = 0;                    // accelerator nodes placed through a lowering
  int constants_skipped = 0;          // Constant nodes: folded by converters, not scanned
  int static_folded = 0;              // other nodes with a static value (shape arithmetic)
  int undecided = 0;                  // nodes whose placement needs pinned input shapes
  std::vector<std::string> findings;  // model-level: opset range, dynamic inputs
};

TargetScan ScanTarget(const AnalyzedModel& model, const TargetProfile& target);

// host[i] is true when node i of the main graph cannot run on the target's accelerator (CPU
// fallback or unsupported): the input of ir::SplitModel for `split --auto --target`.
std::vector<bool> HostNodes(const AnalyzedModel& model, const TargetScan& scan);

struct MemoryFit {
  uint64_t params_bytes = 0;            // as stored in the model
  uint64_t weight_bytes = 0;            // after conversion to the target's weight dtype
  std::optional<uint64_t> arena_bytes;  // peak activations in the target's activation dtype
  uint64_t usable_ram = 0;
  uint64_t usable_flash = 0;
  std::optional<bool> flash_fits;
  std::optional<bool> ram_fits;  // nullopt when the arena is unknown
  std::optional<bool> fits;      // both
  // Smallest share (%) of usable flash and RAM left over; nullopt when the arena is unknown.
  std::optional<double> headroom_pct;
  std::vector<std::string> notes;
};

// `ram_bytes`/`flash_bytes` are the effective budgets (user facts may override the profile's).
MemoryFit FitMemory(const ModelFacts& facts, const TargetProfile& target, uint64_t ram_bytes,
                    uint64_t flash_bytes);

struct TargetCheck {
  TargetScan scan;
  MemoryFit memory;
  bool ok = true;  // no unsupported node and memory does not overflow
};

// The whole `check --target` step on a loaded model.
TargetCheck CheckTarget(const AnalyzedModel& model, const TargetProfile& target);

// One-call glue for other subcommands. `check --target`: the scan and memory fit of `model`
// (exit 1 when !ok). `split --auto --target`: host[i] for node i of `model`'s main graph.
// Both throw Error(kUsage) for bad input-shape pins.
TargetCheck CheckModelOnTarget(const io::Model& model, const TargetProfile& target,
                               const shape::InputShapes& shapes = {});
std::vector<bool> HostNodesForTarget(const io::Model& model, const TargetProfile& target,
                                     const shape::InputShapes& shapes = {});

// The target check's failures as check findings (`target-unsupported` per node that can run
// neither on the accelerator nor on a CPU fallback, `target-memory` when memory overflows), so
// `check --target` reaches one verdict from one list.
void AddTargetFindings(const TargetCheck& check, analysis::CheckReport& report);

nlohmann::json ScanToJson(const TargetScan& scan);
nlohmann::json MemoryToJson(const MemoryFit& memory);
nlohmann::json TargetCheckToJson(const TargetCheck& check);
// Plain-text table for `check --target` without --json.
std::string TargetCheckToText(const TargetCheck& check);

}  // namespace porttool::decide
