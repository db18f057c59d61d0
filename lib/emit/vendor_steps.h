// The step from a bundle to the device: the vendor tool's command lines for each accelerator
// segment (rknn-toolkit2's convert.py with its dataset, trtexec's engine build, stedgeai's
// generate), written from the non-C++ templates in lib/emit/templates/<tool>/vendor/ and filled
// with the values of the target profile's "vendor_tool" section and of what porttool did
// (calibration method, per-channel weights, the nodes it kept float or raised to int16, the
// samples it calibrated on). The option names live in the templates only; this file hands them
// data. Where the tool has no step for what porttool did, the gap is returned in `missing`
// instead of a script that would fail or silently differ on the device.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/runtime/session.h"

namespace porttool::emit {

// The profile's vendor_tool (decide::VendorTool), as data.
struct VendorToolSpec {
  std::string tool;  // rknn-toolkit2 | trtexec | stedgeai | none
  std::string version, platform, float_precision;
  std::map<std::string, std::string> raised_precision;  // "float" | "int16" -> the tool's dtype
  std::string source;
};

// An input whose samples are image pixels porttool normalised as t = (pixel * scale - mean) / std
// per channel (its image preprocessing). The RKNN toolkit takes pixels and computes
// (x - mean_value) / std_value, so mean_value = mean / scale and std_value = std / scale, in the
// tensor's channel order.
struct PixelInput {
  double scale = 1.0 / 255.0;
  std::vector<double> mean, std;  // porttool's, per channel of the tensor
  std::string channel_order = "RGB";
  int channel_axis = 1;  // 1 for NCHW, 3 for NHWC
  double MeanValue(size_t c) const { return mean.at(c) / scale; }
  double StdValue(size_t c) const { return std.at(c) / scale; }
};

struct VendorSegment {
  int index = 0;         // in pipeline.json
  std::string stem;      // "00_accelerator"
  std::string file;      // bundle-relative float segment, "segments/00_accelerator.onnx"
  std::string qdq_file;  // bundle-relative QDQ segment; empty when not quantized
  std::vector<std::string> inputs, outputs;  // graph input / output names, in order
  std::vector<std::vector<int64_t>> input_dims;
  std::map<std::string, PixelInput> pixel_inputs;  // by input name
  // This segment's nodes porttool kept float / raised to int16, by node name and by the tensors
  // they produce (TensorRT names layers after nodes; the RKNN toolkit names them by output).
  std::vector<std::string> float_nodes, int16_nodes;
  std::vector<std::string> float_outputs, int16_outputs;
};

// Calibration as porttool did it; absent for a float port.
struct VendorCalibration {
  std::string method;  // minmax | percentile | entropy | mse
  bool per_channel = false;
  bool symmetric = false;      // int8 activations with zero point 0
  std::string tensorrt_cache;  // the table as a TensorRT calibration cache
  size_t samples = 0;          // calibration samples, in order
  // The tensors of sample k (0 <= k < samples) that the segments take: graph inputs as porttool
  // preprocessed them and the bridges the float chain produced from them.
  std::function<runtime::TensorMap(size_t k)> sample;
};

struct VendorStepRequest {
  std::string target;                   // the profile's name
  std::optional<VendorToolSpec> tool;   // absent: the profile names no tool
  std::vector<VendorSegment> segments;  // accelerator segments only, in pipeline order
  std::optional<VendorCalibration> calibration;
};

// What was written and what is not there: `missing` holds one sentence per step from the bundle
// to the device that the bundle does not contain (the completeness gate reads it); `details` are
// deterministic lines for port's log and reports.
struct VendorStepResult {
  std::vector<std::string> files;  // bundle-relative, sorted
  std::vector<std::string> missing;
  std::vector<std::string> details;
};

// Writes the tool's folder (rknn/, tensorrt/ or stedgeai/) into `bundle`. The same request
// gives the same bytes: sample files get deterministic names, nothing records paths outside the
// bundle or the time.
VendorStepResult WriteVendorSteps(const VendorStepRequest& request,
                                  const std::filesystem::path& bundle);

}  // namespace porttool::emit
