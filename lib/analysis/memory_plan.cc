#include "lib/analysis/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "lib/util/error.h"

namespace porttool::analysis {
namespace {

// Past this many tensors only the size order is tried: each order costs O(n^2).
constexpr size_t kAlternativeOrdersLimit = 5000;

bool LiveTogether(const PlannedTensor& a, const PlannedTensor& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

bool MemoryOverlaps(const PlannedTensor& a, const PlannedTensor& b) {
  return a.aligned_bytes > 0 && b.aligned_bytes > 0 && a.offset < b.offset + b.aligned_bytes &&
         b.offset < a.offset + a.aligned_bytes;
}

uint64_t Duration(const PlannedTensor& t) {
  return static_cast<uint64_t>(t.last_use - t.first_use) + 1;
}

// Best fit: the smallest gap between the already placed tensors that are alive at the same time
// as `t` which still holds it; above all of them when no gap does.
uint64_t BestFitOffset(const PlannedTensor& t, const std::vector<const PlannedTensor*>& placed) {
  std::vector<const PlannedTensor*> neighbours;
  for (const auto* p : placed) {
    if (p->aligned_bytes > 0 && LiveTogether(*p, t)) neighbours.push_back(p);
  }
  std::sort(neighbours.begin(), neighbours.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  uint64_t cursor = 0;
  uint64_t best_offset = 0;
  uint64_t best_gap = std::numeric_limits<uint64_t>::max();
  for (const auto* p : neighbours) {
    if (p->offset > cursor) {
      uint64_t gap = p->offset - cursor;
      if (gap >= t.aligned_bytes && gap < best_gap) {
        best_gap = gap;
        best_offset = cursor;
      }
    }
    cursor = std::max(cursor, p->offset + p->aligned_bytes);
  }
  return best_gap == std::numeric_limits<uint64_t>::max() ? cursor : best_offset;
}

// Places the tensors in the order given by `before` and returns the arena size reached.
uint64_t PlaceGreedy(
    std::vector<PlannedTensor>& tensors,
    const std::function<bool(const PlannedTensor&, const PlannedTensor&)>& before) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return before(tensors[a], tensors[b]); });
  std::vector<const PlannedTensor*> placed;
  placed.reserve(tensors.size());
  uint64_t arena = 0;
  for (size_t index : order) {
    PlannedTensor& t = tensors[index];
    t.offset = t.aligned_bytes == 0 ? 0 : BestFitOffset(t, placed);
    arena = std::max(arena, t.offset + t.aligned_bytes);
    placed.push_back(&t);
  }
  return arena;
}

struct Ordering {
  const char* name;
  std::function<bool(const PlannedTensor&, const PlannedTensor&)> before;
};

std::vector<Ordering> Orderings(size_t tensor_count) {
  std::vector<Ordering> orders = {
      {"largest first",
       [](const auto& a, const auto& b) { return a.aligned_bytes > b.aligned_bytes; }},
  };
  if (tensor_count > kAlternativeOrdersLimit) return orders;
  orders.push_back({"largest size x lifetime first", [](const auto& a, const auto& b) {
                      return a.aligned_bytes * Duration(a) > b.aligned_bytes * Duration(b);
                    }});
  orders.push_back({"longest lifetime first", [](const auto& a, const auto& b) {
                      return Duration(a) != Duration(b) ? Duration(a) > Duration(b)
                                                        : a.aligned_bytes > b.aligned_bytes;
                    }});
  orders.push_back({"first use, largest first", [](const auto& a, const auto& b) {
                      return a.first_use != b.first_use ? a.first_use < b.first_use
                                                        : a.aligned_bytes > b.aligned_bytes;
                    }});
  return orders;
}

}  // namespace

bool IsPowerOfTwo(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

MemoryPlan PlanArena(const Liveness& liveness, uint64_t alignment) {
  if (!IsPowerOfTwo(alignment)) ThrowUsage("alignment {} is not a power of two", alignment);
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.lower_bound_bytes = liveness.tensors.empty() ? 0 : PeakLiveBytes(liveness, alignment);
  for (const auto& t : liveness.tensors) {
    PlannedTensor p{t.name, 0, t.bytes, AlignUp(t.bytes, alignment), t.first_use, t.last_use};
    plan.naive_bytes += p.aligned_bytes;
    plan.tensors.push_back(std::move(p));
  }
  std::vector<PlannedTensor> best;
  uint64_t best_arena = std::numeric_limits<uint64_t>::max();
  for (const auto& ordering : Orderings(plan.tensors.size())) {
    std::vector<PlannedTensor> candidate = plan.tensors;
    uint64_t arena = PlaceGreedy(candidate, ordering.before);
    if (arena < best_arena) {
      best_arena = arena;
      best = std::move(candidate);
      plan.strategy = ordering.name;
    }
    if (best_arena == plan.lower_bound_bytes) break;  // optimal: no order can do better
  }
  plan.tensors = std::move(best);
  plan.arena_bytes = best_arena;
  return plan;
}

std::optional<std::string> ValidatePlan(const MemoryPlan& plan) {
  // Sweep by first use, keeping the tensors still alive; each newcomer is checked against them.
  std::vector<const PlannedTensor*> by_start;
  for (const auto& t : plan.tensors) by_start.push_back(&t);
  std::sort(by_start.begin(), by_start.end(),
            [](const auto* a, const auto* b) { return a->first_use < b->first_use; });
  std::vector<const PlannedTensor*> alive;
  for (const auto* t : by_start) {
    if (t->offset % plan.alignment != 0) {
      return fmt::format("tensor '{}' offset {} is not a multiple of {}", t->name, t->offset,
                         plan.alignment);
    }
    if (t->offset + t->aligned_bytes > plan.arena_bytes) {
      return fmt::format("tensor '{}' [{}, {}) ends past the arena ({} bytes)", t->name, t->offset,
                         t->offset + t->aligned_bytes, plan.arena_bytes);
    }
    std::erase_if(alive, [&](const auto* a) { return a->last_use < t->first_use; });
    for (const auto* a : alive) {
      if (MemoryOverlaps(*a, *t)) {
        return fmt::format("tensors '{}' and '{}' are alive together but overlap in the arena",
                           a->name, t->name);
      }
    }
    alive.push_back(t);
  }
  return std::nullopt;
}

}  // namespace porttool::analysis
