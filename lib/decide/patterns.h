// Node patterns that vendor converters fuse into one accelerator op before placing it, found on
// the analysed model so a target profile's lowering can say "this ReduceMean is part of a layer
// norm the converter turns into its norm op" (a `layer_norm_pattern` condition). Structural only:
// the scan never runs the model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/decide/analyzed_model.h"

namespace porttool::decide {

// The axes a Reduce* node reduces, normalised by its input's rank and sorted: its `axes`
// attribute, or its constant `axes` input (opset 18); every axis when none is given, none with
// noop_with_empty_axes. nullopt when the rank or the axes are unknown.
std::optional<std::vector<int64_t>> ReducedAxes(const AnalyzedModel& model,
                                                const onnx::NodeProto& node);

// LayerNormalization over the trailing axes as exporters before opset 17 write it:
//   m = ReduceMean(x, axes=A); d = Sub(x, m); p = Pow(d, 2) (or Mul(d, d));
//   v = ReduceMean(p, axes=A); s = Sqrt(Add(v, eps)); y = Div(d, s)
// with A the same trailing axes (ending at the last one) in both means, means keeping dims and
// eps a scalar constant. Returns the main-graph indices of the nodes from the first ReduceMean to
// the Div when node `index` is one of them, nullopt otherwise (or when a rank it needs is
// unknown).
std::optional<std::vector<int>> LayerNormMembers(const AnalyzedModel& model, int index);

}  // namespace porttool::decide
