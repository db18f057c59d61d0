// QDQ emission: inserts QuantizeLinear/DequantizeLinear pairs from a calibration table in front of
// the inputs of quantizable ops (Conv, ConvTranspose, MatMul, Gemm, Add, Mul, Concat, pooling,
// Resize/Upsample), the form NPU converters and ONNX Runtime read as "run this op in INT8".
// Weights become int8 symmetric initializers (per output channel on request) behind a
// DequantizeLinear; Conv biases become int32 at input scale x weight scale. Ops that lose accuracy
// in INT8 (Softmax, LayerNormalization, decomposed LayerNorm and GELU) stay float, and every
// exclusion is reported with its reason. Works on any segment whose tensor names are in the table.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/bias_correction.h"
#include "lib/quant/calibrate.h"

namespace porttool::quant {

struct QdqOptions {
  bool per_channel = false;
  std::vector<std::string> exclude_ops;     // op types kept float (in addition to the defaults)
  std::vector<std::string> exclude_nodes;   // node names kept float
  std::vector<std::string> fallback_nodes;  // kept float by the mixed-precision search
  // Nodes whose activation inputs are 16-bit (A16W8: int8 weights, int32 bias at the 16-bit
  // scale): QuantizeLinear/DequantizeLinear int16/uint16 at opset 21, com.microsoft's below.
  std::vector<std::string> int16_nodes;
  // Bias correction (bias_correction.h): each Conv named here gets its bias (a new one when it
  // has none) lowered by the mean output shift its int8 weights introduce, before the bias is
  // quantized. Shared: the mixed-precision search copies these options at every step.
  std::shared_ptr<const ConvInputMeansMap> bias_correction;
};

struct Exclusion {
  std::string node, op_type, reason;
};

struct QdqResult {
  int quantized_nodes = 0;
  int quantized_weights = 0;
  int quantized_activations = 0;  // 8-bit
  int int16_activations = 0;
  int bias_corrected = 0;                // convs whose bias bias correction changed
  std::vector<std::string> int16_nodes;  // quantized with 16-bit activations
  std::vector<Exclusion> excluded;
  std::vector<std::string> missing_ranges;  // activations the table has no entry for
  std::vector<std::string> notes;
};

// Rewrites the main graph in place. Error(kUsage) for an excluded op type ONNX does not define or
// a node name the graph lacks (with suggestions).
QdqResult InsertQdq(io::Model& model, const CalibrationTable& table, const QdqOptions& options);

// The ops InsertQdq quantizes.
const std::set<std::string>& QuantizableOps();

// Every tensor InsertQdq could put a QuantizeLinear on in `graph`: the non-constant inputs of
// quantizable ops, whatever is excluded later (so one table serves any exclusion list).
std::set<std::string> QuantizableActivations(const onnx::GraphProto& graph);

// The nodes of a QDQ graph that run quantized (read a DequantizeLinear output), in graph order.
std::vector<const onnx::NodeProto*> QuantizedNodes(const onnx::GraphProto& graph);

}  // namespace porttool::quant
