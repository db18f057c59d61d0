// Session-level fusion (issue 49): a zero Pad whose only reader is a Conv becomes the conv's own
// padding. tf2onnx writes TensorFlow's asymmetric "same" padding of strided convs as a Pad before
// a Conv without pads (M-LSD's three), and the Pad copied the whole tensor to add one row and
// column of zeros.
//
// Before:  p = Pad(x, pads = [0, 0, t, l, 0, 0, b, r], mode = constant, value = 0)
//          y = Conv(p, W, B, pads = [t0, l0, b0, r0])
// After:   y = Conv(x, W, B, pads = [t0 + t, l0 + l, b0 + b, r0 + r])
//
// Exact, bit for bit: every conv path of conv.cc multiplies the same zeros it would have read
// from the padded tensor (im2col writes 0 for a padded tap, the depthwise and Winograd paths copy
// the input into a zero-filled plane), and where the conv's padding moves it to another path
// (a 1x1 conv to im2col instead of the pointwise GEMM, an STFT-like 1-D conv off its strided
// GEMM), both are GEMMs over the same column values, whose every element is the same k-ordered
// sum however B is supplied (sgemm.h). Hence only the built-in Pad and Conv kernels, 1-D and
// 2-D convs (the paths above are those of rank 3 and 4 inputs), and a fill of +0.0 (a -0.0 fill
// would differ from the conv's +0.0 in the sign of an all-padding sum).
//
// Fused only when:
//  - the Pad is mode "constant" with value 0 (absent, empty or +0.0), its pads known at plan time
//    (an initializer, a Constant node, or a small constant subgraph: plan_constants.h) or its
//    pre-opset-11 `pads` attribute; no `axes` input; pads non-negative and zero on N and C;
//  - the Pad's output is read by that Conv alone, as its input 0, and is no graph output and no
//    value a subgraph reads;
//  - the Conv has auto_pad NOTSET (or VALID without pads: then its own pads are zero) and only
//    the attributes Conv defines, so a malformed conv still fails as it would unfused.
// Not folded (not exact, or not expressible): reflect and edge pads, non-zero fills, pads on N or
// C, negative pads (a crop), ConvTranspose (input padding is no ConvTranspose attribute: its
// pads crop the output), MaxPool (pads with -inf, not 0) and AveragePool (with
// count_include_pad the divisor matches, but a window of -0.0 values summed without the +0.0
// padding terms keeps its sign).
//
// The fold is decided per run at the Pad's step: when the Pad's input is not a non-empty float
// tensor of the rank its pads were written for, the Pad and the Conv run as the model has them
// (and fail, if they fail, where they would).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

struct FoldedPad {
  std::string input;     // the Pad's data input, which the folded conv reads
  int rank = 0;          // that input's rank, as the Pad's pads give it
  size_t conv_step = 0;  // the plan step of the Conv reading the Pad
  // The Conv as it runs folded: input 0 `input`, its pads the sums. It keeps the Conv step's
  // prepared weights (PrepareConv reads the weights, group, strides and dilations, not pads).
  onnx::NodeProto conv;
};

// One entry per step of `order`: the Pad step's fold into its Conv, or null. `builtin(step)` says
// whether the step runs the built-in kernel of its op; `opsets` is each step's opset; `constants`
// the graph's initializers and precomputed Constant outputs.
std::vector<std::unique_ptr<FoldedPad>> FindPadFolds(
    const ir::GraphView& view, const std::vector<int>& order, const std::vector<int>& opsets,
    const std::unordered_map<std::string, Tensor>& constants, const io::Model* model,
    const std::function<bool(size_t step)>& builtin);

// Whether `fold` applies to a run whose Pad input is `x` (null: not found).
bool FoldApplies(const FoldedPad& fold, const Tensor* x);

// `frees` (per step: the values dead after it) with each fold's input kept until its Conv step
// when it would die earlier (the skipped Pad was its last reader).
std::vector<std::vector<std::string>> FreesWithFolds(
    std::vector<std::vector<std::string>> frees,
    const std::vector<std::unique_ptr<FoldedPad>>& folds);

}  // namespace porttool::runtime
