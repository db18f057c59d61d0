// Static arena planning for firmware that has no heap: every activation tensor gets a fixed,
// aligned offset in one arena so that tensors alive at the same step never overlap. Offsets are
// assigned greedily, largest tensor first, each into the smallest gap that fits among the tensors
// it is alive with (best fit; the approach of TensorFlow Lite Micro's GreedyMemoryPlanner). Since
// the size order is not always best, a few other orders are tried too and the smallest arena is
// kept. The plan reports how it compares with the naive sum (no reuse) and the lower bound (the
// peak of simultaneously live bytes), so a user can see how much is left on the table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/liveness.h"

namespace porttool::analysis {

struct PlannedTensor {
  std::string name;
  uint64_t offset = 0;         // multiple of the plan's alignment
  uint64_t bytes = 0;          // the tensor's own size
  uint64_t aligned_bytes = 0;  // what it occupies in the arena
  int first_use = 0;
  int last_use = 0;
};

struct MemoryPlan {
  uint64_t alignment = 1;
  uint64_t arena_bytes = 0;            // size of the arena the offsets need
  uint64_t naive_bytes = 0;            // sum of aligned sizes: one buffer per tensor, no reuse
  uint64_t lower_bound_bytes = 0;      // peak of simultaneously live aligned bytes
  std::string strategy;                // the tensor order that gave the smallest arena
  std::vector<PlannedTensor> tensors;  // same order as Liveness::tensors
};

// Plans an arena for `liveness.tensors`. `alignment` must be a power of two (Error(kUsage)
// otherwise). Zero-sized tensors get offset 0 and occupy nothing.
MemoryPlan PlanArena(const Liveness& liveness, uint64_t alignment);

// Checks a plan's invariants: offsets aligned, every tensor inside the arena, and no two tensors
// whose lifetimes share a step overlapping in memory. Returns a description of the first
// violation, or nullopt when the plan is valid.
std::optional<std::string> ValidatePlan(const MemoryPlan& plan);

bool IsPowerOfTwo(uint64_t value);

}  // namespace porttool::analysis
