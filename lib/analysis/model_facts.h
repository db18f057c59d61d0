// Model facts: what `porttool inspect` prints and what the decision report (issue 6) reasons
// about — format versions, opsets, the I/O signature, op histogram, parameter count and bytes by
// element type, custom domains and subgraphs. Collecting them never reads weight data: external
// tensors are counted from their `length`, inline ones from their dims.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/io/model.h"

namespace porttool::analysis {

struct TensorSignature {
  std::string name;
  std::string dtype;  // "float32", ... ("?" when unknown; "sequence"/"map"/"optional" otherwise)
  std::string shape;  // "1x3xHxW" (symbolic dims by name, "?" unknown, "scalar" for rank 0)
  std::vector<std::string> dims;  // per dim: value, param name or "?"; empty when rank unknown
  bool has_shape = false;
};

struct ParamStats {
  uint64_t count = 0;  // elements
  uint64_t bytes = 0;
  int tensors = 0;
};

struct ModelFacts {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::vector<TensorSignature> inputs;    // graph inputs that are not initializers
  std::vector<TensorSignature> outputs;
  int node_count = 0;                                 // main graph
  int node_count_total = 0;                           // including nodes of every subgraph
  std::map<std::string, int> op_histogram;            // "Conv", "com.microsoft::Gelu" -> count
  std::map<std::string, ParamStats> params_by_dtype;  // initializers + Constant values
  ParamStats params;                                  // totals
  uint64_t external_bytes = 0;                        // part of params.bytes that lives on disk
  std::vector<std::string> custom_domains;            // node domains other than ai.onnx / ""
  int subgraph_count = 0;                             // If/Loop/Scan bodies, recursively
};

// Collects the facts of `model` (main graph and every subgraph). Never reads weight data.
ModelFacts CollectFacts(const io::Model& model);

// The signature of one graph input/output.
TensorSignature SignatureOf(const onnx::ValueInfoProto& value);

}  // namespace porttool::analysis
