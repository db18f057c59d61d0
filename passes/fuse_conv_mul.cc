// fuse-conv-mul: folds a constant scale Mul after a Conv/ConvTranspose into the conv.
//
// Before: c = Conv(x, W, B); y = Mul(c, k)     [k: float[1,C,1,1], [C,1,1], [1] or scalar]
// After:  y = Conv(x, W', B')                  W' = W * k (along the output-channel axis),
//                                              B' = B * k
//
// Preconditions (otherwise kept with the reason): k is a float constant that broadcasts per
// channel only; c is read by the Mul only and is not a graph output; W (and B) are float
// constants. Grouped Conv and ConvTranspose work (see ScaleWeights).
// Why: Paddle2ONNX exports PP-LCNetV3's learnable affine blocks and unfused norms as a scalar
// Mul and Add after each conv; NPU converters then run two extra elementwise layers, and a
// quantizer puts a requantization in front of each. With fuse-conv-add after it, Conv -> Mul ->
// Add becomes one Conv. Tolerance: float32 rounding of the scaled weights (about 1e-7 relative).
#include "passes/fuse_conv_mul.h"

#include "passes/pattern_util.h"

namespace porttool::passes {

PassResult FuseConvMulPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  return FoldIntoConvs(model, "Mul", "scale", [](const ConvWithChannelConstant& m) {
    ConvFold f;
    f.weight = m.weight.Clone();
    ScaleWeights(*f.weight, m.transposed, m.group, m.values);
    if (m.bias) {
      f.bias = m.bias->Clone();
      float* pb = f.bias->mutable_data<float>();
      for (size_t c = 0; c < m.values.size(); ++c) pb[c] *= m.values[c];
    }
    return f;
  });
}

}  // namespace porttool::passes
