// Ranges that need no pass over the data: when y = f(x) for a monotonic f that the kernel computes
// as one float operation per element (Relu, Clip, or Add/Sub/Mul/Div with a scalar constant), the
// min and max of y in a sample are f(min x) and f(max x) exactly (swapped when f decreases), since
// float rounding of one operation preserves order. Ops that move values without changing them
// keep the extremes: Reshape/Flatten/Squeeze/Unsqueeze/Transpose/Identity, and a nearest Resize
// or Upsample that enlarges every axis (each input element lands somewhere); a Concat's extremes
// are those of its inputs together. Calibration then skips scanning y: in PP-OCRv4 det five of
// the seven tensors of every hard-swish block, the six upsamplings and the neck's Concat.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/histogram.h"

namespace porttool::quant {

struct RangeRule {
  enum class Op { kRelu, kClip, kAdd, kSubtract, kSubtractFrom, kMultiply, kDivide, kSame };
  std::vector<std::string> inputs;  // x (several for a Concat, whose op is kSame)
  Op op = Op::kRelu;
  float a = 0, b = 0;  // the constant (Add/Sub/Mul/Div), or Clip's bounds
};

// Output tensor name -> how its range follows from its producer's one activation input.
std::map<std::string, RangeRule> DerivableRanges(const io::Model& model);

// The extremes of y given those of its inputs (in rule.inputs order); nullopt when an input had
// non-finite values or f overflows.
std::optional<SampleRange> DeriveRange(const RangeRule& rule, const std::vector<SampleRange>& x);

}  // namespace porttool::quant
