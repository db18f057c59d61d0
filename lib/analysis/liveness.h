// Tensor liveness over an execution order: for every activation tensor, the step that produces it
// and the last step that reads it (subgraph captures count as reads by the If/Loop/Scan node), and
// its static byte size. This is what a static memory plan (memory_plan.h) and a peak-memory
// estimate (the decide report) are built on. Weights (initializers and, by default, Constant node
// outputs) are not activations: firmware keeps them in flash, so they are left out. Graph inputs
// and outputs are left out by default too, because firmware usually hands the runtime its own I/O
// buffers (DMA targets, camera frames); LivenessOptions puts them in the arena instead.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/ir/graph_view.h"

namespace porttool::analysis {

struct LivenessOptions {
  // Graph inputs occupy arena memory from step 0 up to their last reader.
  bool include_graph_inputs = false;
  // Graph outputs occupy arena memory from their producer up to the last step, so the caller can
  // read them after the run.
  bool include_graph_outputs = false;
  // Constant node outputs are weights unless asked for: a runtime that materialises them at run
  // time can plan them like any activation.
  bool include_constants = false;
};

// A tensor with a fully static shape and a fixed-size element type.
struct StaticTensor {
  std::string name;
  int32_t dtype = 0;  // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  uint64_t bytes = 0;  // element count x element size (unaligned)
};

// The static size of tensor `name` described by `info` (nullptr when nothing describes it).
// `origin` says where it comes from for the message ("graph input", "node 'conv1' (Conv)").
// Throws Error(kBadInput) when the type or a dim is unknown or the element type has no fixed size.
StaticTensor ResolveStaticTensor(const std::string& name, const onnx::ValueInfoProto* info,
                                 const std::string& origin);

// One tensor's interval of steps [first_use, last_use] (inclusive), in positions of
// Liveness::order. A step needs its inputs and its outputs at the same time, so two tensors whose
// intervals share a step may not share memory.
struct TensorLifetime : StaticTensor {
  int first_use = 0;  // producing step (0 for a graph input)
  int last_use = 0;   // last reading step (its producer's step when nothing reads it)
  bool graph_input = false;
  bool graph_output = false;
};

struct Liveness {
  std::vector<int> order;               // node indices in execution order (GraphView::TopoOrder)
  std::vector<TensorLifetime> tensors;  // in order of first use, then of definition
};

// The step (position in `order`) of every tensor's last reader, subgraph captures counting as
// reads by their If/Loop/Scan node. Shape-free: the executor frees tensors by it, and
// ComputeLiveness sizes the same intervals, so the plan and the run agree on lifetimes.
std::unordered_map<std::string, int> LastReadSteps(const ir::GraphView& view,
                                                   const std::vector<int>& order);

// Liveness of the main graph's activations. Shapes come from graph inputs, outputs and value_info,
// so run shape inference first. Throws Error(kBadInput) naming the tensor and its producer when a
// planned tensor has no static shape or no fixed-size element type, and on a cycle.
Liveness ComputeLiveness(const onnx::GraphProto& graph, const LivenessOptions& options = {});

// `bytes` rounded up to a multiple of `alignment` (a power of two; 1 means no rounding).
uint64_t AlignUp(uint64_t bytes, uint64_t alignment);

// Total bytes live at each step, every tensor rounded up to `alignment`.
std::vector<uint64_t> LiveBytesPerStep(const Liveness& liveness, uint64_t alignment = 1);

// The largest total of simultaneously live bytes: a lower bound on any arena that holds these
// tensors without overlap (with every tensor rounded up to `alignment`).
uint64_t PeakLiveBytes(const Liveness& liveness, uint64_t alignment = 1);

}  // namespace porttool::analysis
