// Session-level fusion (issue 28): at plan time, the elementwise tail that follows a Conv or a
// ConvTranspose — BatchNormalization or constant per-channel Mul/Add, a residual Add, and one
// activation — is found and handed to the conv kernel as an epilogue (epilogue.h); a bias Add
// right after a ConvTranspose without a bias input becomes its bias. The same for a MatMul with a
// constant 2-D B (a linear layer): a bias Add [N] (and Mul [N]) per column, a residual Add and
// an activation. Activations: Relu, LeakyRelu, Clip, HardSigmoid, Sigmoid, HardSwish, Paddle's
// x*Clip(x+3,0,6)/6, SiLU (x*Sigmoid(x)) and GELU in both erf forms exporters write. And a
// LayerNormalization written as nodes (torch before opset 17) into its first ReduceMean, with the
// per-column affine and activation after it. The model is not changed: the plan only records, per
// head step, the tail and the steps it replaces.
//
// Before:  y0 = Conv(x, W, B); y1 = Mul(y0, s); y2 = Add(y1, t); y3 = Add(y2, r); y = Relu(y3)
// After:   y  = Conv(x, W, B) with epilogue {scale s, shift t, residual r, Relu}
// Before:  h = MatMul(x, W); b = Add(h, bias); e = Erf(b * k); y = b * ((e + 1) * 0.5)
// After:   y = MatMul(x, W) with epilogue {shift bias per column, GELU}
// Before:  m = ReduceMean(x); d = x - m; s = Sqrt(ReduceMean(Pow(d, 2)) + eps); y = d / s * g + b
// After:   y = ReduceMean(x) with epilogue {layer_norm eps, scale g and shift b per column}
//
// A tail is fused only where nothing else can see its intermediates: each is read by the next
// node of the tail alone, is no graph output and no value a subgraph reads, and every absorbed
// node has only the attributes its op defines (so a malformed node still fails as it would run
// alone). Observed runs (calibration, compare --per-tensor) do not use the fusions: they see
// every tensor of the original graph.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/ir/graph_view.h"
#include "lib/runtime/epilogue.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

struct FusedTail {
  EpilogueSpec spec;
  std::string output;            // the value the head's output 0 becomes (the tail's last)
  std::vector<size_t> absorbed;  // plan steps the tail replaces
};

// One entry per step of `order` (node indices of the viewed graph in run order): the tail fused
// into that step's node, or null. `accepts(step)` says whether the step's kernel applies epilogues;
// `constants` holds the graph's initializers and precomputed Constant outputs.
std::vector<std::unique_ptr<FusedTail>> FindEpilogueFusions(
    const ir::GraphView& view, const std::vector<int>& order,
    const std::unordered_map<std::string, Tensor>& constants,
    const std::function<bool(size_t step)>& accepts);

// Whether the node's attributes are all among `known`, the ones its op defines: an unknown one
// makes the node fail when run alone, so a fusion leaves such a node to fail as it would.
bool OnlyAttributes(const onnx::NodeProto& n, std::initializer_list<const char*> known);

}  // namespace porttool::runtime
