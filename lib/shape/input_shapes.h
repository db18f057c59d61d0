// `--input-shape NAME:DIMS` handling shared by every subcommand that needs static shapes
// (infer-shapes, run, emit-header, split). DIMS is `1x3x640x640`; a scalar is `NAME:scalar`.
// Several inputs: repeat the option, or separate specs with ';' or ','
// (`--input-shape "x:1x3x64x64,mask:1x64"`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/io/model.h"

namespace porttool::shape {

using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Parses specs; throws Error(kUsage) with the offending text on bad syntax or a repeated name.
InputShapes ParseInputShapes(const std::vector<std::string>& specs);

// Pins the given dims on the model's graph inputs (replacing symbolic/unknown dims). Throws
// Error(kUsage) when a name is not a graph input (listing the real inputs), when the rank
// disagrees with a declared rank, or when a static dim is contradicted.
void ApplyInputShapes(io::Model& model, const InputShapes& shapes);

// Graph inputs (not initializers) that still have a symbolic or unknown dim, as
// "name[dim index]=param" descriptions; empty when every input is static.
std::vector<std::string> DynamicInputDims(const io::Model& model);

// An example pin for one graph input, built from its own name, rank and known dims: known dims
// are kept, an unknown leading dim becomes 1 and other unknown dims a typical size for the rank
// ("images:1x3x640x640", "h:1x1x64"). "NAME:DIMS" when the rank itself is unknown.
std::string ExampleInputShape(const onnx::ValueInfoProto& input);
// ExampleInputShape for every input that DynamicInputDims lists, comma-separated.
std::string ExampleInputShapes(const io::Model& model);

}  // namespace porttool::shape
