// Inputs whose value is known before the model runs, and value ranges for the ones that are not.
// A known value (a sample rate that is always 16000, a fixed window length) turns a graph input
// into a constant, so constant folding and If inlining can make a data-dependent graph static: the
// form NPU converters need (rknn-toolkit2 runs an If only on a constant condition). A range says
// which random values a verification may feed an input (a token id below the vocabulary size, a
// sample rate of 8000..16000) instead of the executor's default [0, 1) / [0, 10).
// Values arrive structured; their text forms (`sr=16000`, `k=1,2,3`, `x=FILE.npy`, `x=0:1`) are
// parsed by the CLI.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"

namespace porttool::shape {

// A number as written: integers stay exact (an int64 beyond 2^53 must not round through double).
using InputNumber = std::variant<int64_t, double>;

struct InputValue {
  // Literal numbers, converted to the input's declared element type: one number for a rank-0
  // input (or any single-element shape), or as many as the declared shape holds.
  std::vector<InputNumber> numbers;
  // Or a whole tensor (read from a file): its element type and dims must match the input's.
  std::optional<onnx::TensorProto> tensor;
  std::string origin = "given";  // for messages and reports: "given", "the target profile"
};
using InputValues = std::map<std::string, InputValue>;

// Random values for one input: floats uniform in [lo, hi), integers uniform in [lo, hi] (both
// bounds included: "sr=8000:16000" may draw 16000).
struct ValueRange {
  double lo = 0;
  double hi = 1;
};
using InputRanges = std::map<std::string, ValueRange>;

// Makes every named graph input a constant: an initializer of the input's element type and shape
// (the declared dims; a single unknown dim is taken from the value count), and the input leaves
// the graph's inputs. Error(kUsage), tensor set, when a name is not a graph input (listing the
// inputs), the element type cannot hold a number (0.5 for an int64 input, 300 for uint8), the
// count or a file's dims disagree with the declared shape, or a file's element type differs.
void ApplyInputValues(io::Model& model, const InputValues& values);

// ApplyInputShapes, then ApplyInputValues: a value must fit its input's pinned shape.
void PinAndSetInputs(io::Model& model, const InputShapes& shapes, const InputValues& values);

// "sr=16000" or "window=[4 values]" or "x=int64 [2,3] (from a file)", joined with ", ".
std::string InputValuesText(const InputValues& values);

// Error(kUsage) for a range that names no graph input (listing the inputs), has lo > hi or a
// non-finite bound, or names an input that is also given a value.
void CheckInputRanges(const io::Model& model, const InputRanges& ranges,
                      const InputValues& values = {});

}  // namespace porttool::shape
