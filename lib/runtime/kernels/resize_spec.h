// What a Resize (or Upsample) node asks for, as resize.cc parses it: shared with
// resize_ort.cc, which computes the same request with ONNX Runtime's arithmetic.
#pragma once

#include <cstdint>
#include <vector>

namespace porttool::runtime::resize {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize
};
// kSimple is the pre-opset-11 rule (Upsample, Resize-10): truncate when upsampling, ceil when
// downsampling, as ONNX Runtime implements it.
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeSpec {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kAsymmetric;
  Rounding rounding = Rounding::kSimple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.f;
  std::vector<double> scales;  // per axis, as given or out/in when sizes were given
  // in * scale, unrounded: the reference implementation's output length in the coordinate
  // formulas (align_corners over a downscale by 0.6 differs from using the rounded size).
  std::vector<double> resized_len;
  std::vector<int64_t> out;
  std::vector<double> roi;  // [starts..., ends...] or empty
  // ONNX Runtime's formula (ExecutionEnv::ort_compatible_resize): the scales as it holds them,
  // in float (out / in in float when sizes were given).
  bool ort_formula = false;
  std::vector<float> ort_scales;
};

}  // namespace porttool::runtime::resize
