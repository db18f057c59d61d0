// Epilogue: the elementwise tail the Session fuses into a Conv or MatMul output loop (issue 28).
// ONNX exporters write a conv as Conv -> per-channel Mul/Add (or BatchNormalization) -> residual
// Add -> activation; run node by node, each of those reads and writes the whole output again (on
// PP-OCRv4 det, 28 ms of ONNX Runtime's 94 ms). Fused, the kernel applies them to each output
// tile while it is still in cache, and the intermediate tensors are never allocated.
//
// The value of one output element of channel c becomes
//   v = act((v * scale[c] + shift[c]) + residual) * post_scale + post_shift
// with every part optional. A MatMul's tail (bias Add, residual Add, activation) is the same
// with c the output's last axis (`per_column`): a linear layer's bias is one value per column. The
// kernel applies it and calls ctx.mark_epilogue_applied(); a kernel that cannot (a residual whose
// shape is not the output's) leaves it unapplied, and the Session then runs the absorbed nodes one
// by one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/runtime/tensor.h"

namespace porttool::runtime {

enum class EpilogueAct {
  kNone,
  kRelu,
  kLeakyRelu,    // x >= 0 ? x : alpha x
  kClip,         // min(max(x, lo), hi)
  kHardSigmoid,  // max(0, min(1, alpha x + beta))
  kSigmoid,
  kHardSwish,         // x max(0, min(1, x / 6 + 1 / 2)) (the HardSwish op)
  kHardSwishClipDiv,  // x clip(x + add, lo, hi) / div (how Paddle2ONNX writes hard_swish)
  kSilu,              // x Sigmoid(x) (how exporters write SiLU / Swish)
  // GELU in its erf form, as exporters write it: e = erf(x * k) (or x / k, `gelu_divides`), then
  // x * ((e + one) * half) (`gelu_gate_half`, the gate halved first) or (x * (e + one)) * half.
  kGelu,
};

// The plan-time part: found by the Session's fusion matcher (fusion.h), owned by its plan.
struct EpilogueSpec {
  // Per output channel: a bias Add right after a head that has no bias input (Paddle2ONNX's
  // ConvTranspose), added to the head's sum as that Add does, before the affine part; empty: none.
  std::vector<float> head_bias;
  std::vector<float> scale;  // per output channel; empty: 1
  std::vector<float> shift;  // per output channel; empty: 0
  EpilogueAct act = EpilogueAct::kNone;
  float alpha = 0, beta = 0, lo = 0, hi = 0, add = 0, div = 1;
  float gelu_k = 0, gelu_one = 1, gelu_half = 0.5f;
  bool gelu_divides = false, gelu_gate_half = false;
  // A scalar Mul and/or Add after the activation (-0 is the identity of addition: +0 would turn
  // a -0 result into +0).
  bool post_affine = false;
  float post_scale = 1, post_shift = -0.f;
  std::string residual;     // name of the tensor added after the affine part; empty: none
  bool per_column = false;  // scale/shift index the last axis (a MatMul's output), not axis 1
  // A LayerNormalization written as nodes (fusion.h) headed by a ReduceMean: its kernel
  // normalises each row of the input's last axis (epsilon added to the variance), then applies
  // the rest per column.
  bool layer_norm = false;
  float layer_norm_epsilon = 0;
};

// What a kernel receives: the spec and, for this run, the residual's value.
struct Epilogue {
  const EpilogueSpec* spec = nullptr;
  const Tensor* residual = nullptr;
};

}  // namespace porttool::runtime
