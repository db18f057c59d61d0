// QuantizeStage: `porttool quantize-calibrate` as one call. It composes the exact conv fusions
// that prepare a graph for quantization (passes/transform.h, as ONNX Runtime's quant_pre_process
// does), calibration or an existing table, QDQ emission and the accuracy evaluation
// (lib/quant/quantize_calibrate.h). Nothing is written: the caller writes the table, cache and
// QDQ model it wants, after everything was computed, so an error leaves no partial output.
#pragma once

#include <filesystem>
#include <string>

#include "lib/quant/quantize_calibrate.h"

namespace porttool::stages {

struct QuantizeStageOptions {
  quant::QuantizeCalibrateRequest request;  // calibrate on request.data_dir, or apply table_in
  std::filesystem::path table_in;           // a table to apply instead of calibrating
  bool prepare = true;                      // the exact conv fusions first
};

// Error(kUsage) when neither data nor a table is given; the library's errors otherwise.
quant::QuantizeCalibrateResult QuantizeStage(const io::Model& model,
                                             const QuantizeStageOptions& options);

// The request with its node references ("#N", "#N (Op)" or names, as the user gave them for
// `model`) turned into the real names of those nodes, an addressed unnamed node being named first
// (ir::NameAddressedNodes). QuantizeStage does this itself; a caller that transforms the model
// before quantizing it (port simplifies first) calls it on the model the user addressed.
quant::QuantizeCalibrateRequest WithNodeNames(io::Model& model,
                                              quant::QuantizeCalibrateRequest request);

// A calibration table file (`--table` written by quantize-calibrate). Error(kBadInput) naming
// the file for an unreadable file, invalid JSON or a malformed table.
quant::CalibrationTable ReadCalibrationTable(const std::filesystem::path& path);
// An image preprocessing spec file (JSON, the "preprocess" object of a table).
quant::Preprocess ReadPreprocessSpec(const std::filesystem::path& path);

}  // namespace porttool::stages
