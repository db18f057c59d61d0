// Float16 as an accelerator keeps it: NPUs such as RK3588's (and TensorRT engines built for fp16)
// store every float tensor in IEEE binary16 between ops while accumulating inside an op in fp32.
// The executor emulates that by rounding float32 values to the nearest binary16 value (ties to
// even, magnitudes past the largest finite value 65504 to ±inf, as the hardware's conversion does)
// at every op boundary; the values stay in float32 storage so every kernel runs unchanged.
#pragma once

#include <string>

#include "lib/runtime/tensor.h"

namespace porttool::runtime {

inline constexpr float kFloat16Max = 65504.0f;

// x rounded to the nearest binary16 value, as float32. NaN stays NaN, ±inf stays ±inf.
float RoundToFloat16(float x);

// A float32 tensor rounded to binary16 values: `t` itself when it already holds only such values,
// else a rounded copy (a read-only or shared tensor is never written). Other dtypes are returned
// as they are. `max_abs` (when given) receives the largest finite magnitude before rounding, the
// figure an overflow report names.
Tensor RoundedToFloat16(const Tensor& t, float* max_abs = nullptr);

}  // namespace porttool::runtime
