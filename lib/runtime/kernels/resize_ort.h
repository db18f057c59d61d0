// Resize with ONNX Runtime's CPU arithmetic (ExecutionEnv::ort_compatible_resize). The spec
// formula (resize.cc) computes source coordinates and weights in double and sums separably;
// ONNX Runtime (onnxruntime/core/providers/cpu/tensor/upsample.cc, upsamplebase.h) computes
// them in float, per output index once, with its own weight products and rounding, so a value
// near a rounding boundary can land one ulp (one LSB after a QuantizeLinear) apart. This is an
// independent implementation of that arithmetic, mode by mode:
// - coordinates: float, output length = the integer output size, identity on an axis whose
//   scale is 1 (ORT's shortcut, also under tf_crop_and_resize);
// - nearest: ORT's rounding rules on the float coordinate; round_prefer_floor / _ceil take a
//   coordinate within 1e-6 of k + 0.5 as halfway (floor / ceil), others std::round, as
//   ORT 1.31 behaves;
// - linear, 2-D or 4-D (NCHW, or NHWC with unit outer and inner scales): the four products of the
//   float edge distances (dx2 * dy2, dx1 * dy2, dx2 * dy1, dx1 * dy1, with 0.5 each at a clamped
//   edge) times the four inputs, summed left to right in float, truncated to integer types; int8
//   and uint8 NHWC in ORT's 10-bit fixed point; 3-D or 5-D: the eight triple products likewise;
// - cubic, 2-D or 4-D NCHW, float: Keys coefficients in float, each row interpolated along W with
//   coefficient / sum, then along H as (row * coefficient) / sum.
// Layouts ONNX Runtime has no kernel for (linear over other axes or ranks, cubic NHWC, double
// or int64 data) keep the spec formula: there is no ORT result to match.
#pragma once

#include <cstdint>

#include "lib/runtime/kernels/resize_spec.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime::resize {

// ONNX Runtime's source coordinate of output index `i` on `axis` (input length `in_len`).
float OrtOriginalCoordinate(const ResizeSpec& s, int axis, int64_t i, int64_t in_len);

// ONNX Runtime's nearest-pixel rule for a source coordinate (unclamped).
int64_t OrtNearestIndex(Rounding r, float x, bool downsampling);

// Linear or cubic resize of `x` into `y` (allocated to s.out) as ONNX Runtime computes it.
// Returns false, writing nothing, where ONNX Runtime has no kernel for the layout or type.
bool InterpolateAsOrt(const Tensor& x, const ResizeSpec& s, Tensor& y);

}  // namespace porttool::runtime::resize
