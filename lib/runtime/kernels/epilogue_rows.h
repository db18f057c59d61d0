// Applying a fused epilogue (lib/runtime/epilogue.h) inside a kernel's output loop: the conv
// kernels call FinishRows on each output tile right after its GEMM or direct loop, while it is
// in cache. Private to lib/runtime/kernels.
#pragma once

#include <cstdint>

#include "lib/runtime/epilogue.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime::kernels {

// The epilogue to apply to output `y`, or null when there is none or it cannot be applied here
// (a residual that is not a float tensor of y's shape: the Session then runs the absorbed nodes).
const Epilogue* UsableEpilogue(const Epilogue* epilogue, const Tensor& y);

// Rows [channel, channel + rows) of one image's output, each `cols` long at stride `ld` from
// `y`: adds bias[r] (bias may be null), then applies `epilogue` (may be null). `residual` is the
// residual's element at y's position, with the same strides (null when the epilogue has none).
void FinishRows(const float* bias, const Epilogue* epilogue, int64_t channel, int64_t rows,
                int64_t cols, int64_t ld, float* y, const float* residual);

// The same for a per-column epilogue (a MatMul's, or a conv's computed as C^T): a tile of `rows`
// x `cols` at stride `ld` whose first column is column `col0` of the output; bias[j] (bias may
// be null) is column col0 + j's. The same bits as FinishRows on the transposed tile.
void FinishColumns(const float* bias, const Epilogue* epilogue, int64_t col0, int64_t rows,
                   int64_t cols, int64_t ld, float* y, const float* residual);

// Sigmoid, SiLU and GELU (epilogue_act.cc): applied in place over n values after the affine
// part and the residual, compiled as the unfused nodes' kernels are.
inline bool IsTranscendental(EpilogueAct act) {
  return act == EpilogueAct::kSigmoid || act == EpilogueAct::kSilu || act == EpilogueAct::kGelu;
}
void ActivateTranscendental(const EpilogueSpec& spec, float* y, int64_t n);

}  // namespace porttool::runtime::kernels
