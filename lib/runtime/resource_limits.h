// Resource limits of the executor: how large one tensor may be and how much tensor memory may be
// live at once. Models choose their shapes, so a crafted or broken model can ask for terabytes
// through Expand, Tile, ConstantOfShape or a Reshape chain; every Tensor allocation checks these
// limits before allocating and throws Error(kBadInput) with the claimed size, which the Session
// completes with the node and tensor names. A Loop's iterations are capped the same way: PyTorch
// exports `while` loops with a trip count of 2^63-1, so the trip count alone cannot be trusted and
// a condition that never turns false would otherwise run forever. The limits are set once by the
// CLI (like the thread count) and default to fractions of the machine's physical memory.
#pragma once

#include <cstdint>

namespace porttool::runtime {

struct ResourceLimits {
  uint64_t tensor_bytes = 0;  // one tensor; 0: the default (physical memory / 4)
  uint64_t total_bytes = 0;   // all live tensors together; 0: the default (physical memory / 2)
  uint64_t loop_iterations =
      0;  // iterations of one Loop node; 0: the default (kDefaultLoopIterations)
};

// Far above what detection, OCR or decoding loops run (tens to thousands of steps), low enough
// that a runaway loop with a small body is refused within a second or two.
inline constexpr uint64_t kDefaultLoopIterations = 100000;

// Sets the limits for every later allocation (0 fields take the defaults).
void SetResourceLimits(const ResourceLimits& limits);
// The limits in force, with defaults resolved.
ResourceLimits GetResourceLimits();
// Bytes held by live executor tensors right now (views of mapped weights are not counted).
uint64_t LiveTensorBytes();
// The most LiveTensorBytes() has been since the last ResetPeakTensorBytes() (or the start): what
// a stage held at once, which tests use to show that memory does not grow with a model.
uint64_t PeakTensorBytes();
// Starts a new peak at the bytes live now.
void ResetPeakTensorBytes();

}  // namespace porttool::runtime
