// fuse-conv-add: folds a constant bias Add after a Conv/ConvTranspose into the conv's bias.
//
// Before: c = ConvTranspose(x, W); y = Add(c, k)     [k: float[1,C,1,1], [C,1,1], [1] or scalar]
// After:  y = ConvTranspose(x, W, B')                B' = B + k (per output channel)
//
// Preconditions (otherwise kept with the reason): k is a float constant that broadcasts per
// channel only (every dim 1 except the channel axis, right-aligned to the conv output rank); c is
// read by the Add only and is not a graph output; the conv weight rank is known (constant W).
// Why: exporters (Paddle2ONNX, some PyTorch paths) emit the bias as a separate Add; NPU
// converters then run an extra elementwise layer. Tolerance: exact (one float add, reordered).
#include "passes/fuse_conv_add.h"

#include "passes/pattern_util.h"

namespace porttool::passes {

PassResult FuseConvAddPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  return FoldIntoConvs(model, "Add", "bias", [](const ConvWithChannelConstant& m) {
    const int64_t channels = static_cast<int64_t>(m.values.size());
    ConvFold f;
    f.bias = runtime::Tensor(onnx::TensorProto::FLOAT, {channels});
    float* out = f.bias->mutable_data<float>();
    for (int64_t c = 0; c < channels; ++c) {
      out[c] = (m.bias ? m.bias->data<float>()[c] : 0.0f) + m.values[c];
    }
    return f;
  });
}

}  // namespace porttool::passes
