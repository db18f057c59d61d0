#include "lib/runtime/resource_limits.h"

#include <unistd.h>

#include <atomic>

#include "lib/runtime/resource_accounting.h"

namespace porttool::runtime {
namespace {

uint64_t PhysicalMemory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{8} << 30;  // unknown: assume a small machine
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

std::atomic<uint64_t> g_tensor_bytes{0};
std::atomic<uint64_t> g_total_bytes{0};
std::atomic<uint64_t> g_loop_iterations{0};
std::atomic<uint64_t> g_live_bytes{0};
std::atomic<uint64_t> g_peak_bytes{0};

void RaisePeak(uint64_t live) {
  uint64_t peak = g_peak_bytes.load();
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
}

}  // namespace

void SetResourceLimits(const ResourceLimits& limits) {
  g_tensor_bytes = limits.tensor_bytes;
  g_total_bytes = limits.total_bytes;
  g_loop_iterations = limits.loop_iterations;
}

ResourceLimits GetResourceLimits() {
  static const uint64_t physical = PhysicalMemory();
  ResourceLimits r{g_tensor_bytes.load(), g_total_bytes.load(), g_loop_iterations.load()};
  if (r.tensor_bytes == 0) r.tensor_bytes = physical / 4;
  if (r.total_bytes == 0) r.total_bytes = physical / 2;
  if (r.loop_iterations == 0) r.loop_iterations = kDefaultLoopIterations;
  return r;
}

uint64_t LiveTensorBytes() { return g_live_bytes.load(); }

uint64_t PeakTensorBytes() { return g_peak_bytes.load(); }

void ResetPeakTensorBytes() { g_peak_bytes = g_live_bytes.load(); }

bool ReserveTensorBytes(uint64_t bytes) {
  uint64_t cap = GetResourceLimits().total_bytes;
  uint64_t live = g_live_bytes.load();
  do {
    if (bytes > cap || live > cap - bytes) return false;
  } while (!g_live_bytes.compare_exchange_weak(live, live + bytes));
  RaisePeak(live + bytes);
  return true;
}

void ReleaseTensorBytes(uint64_t bytes) { g_live_bytes -= bytes; }

}  // namespace porttool::runtime
