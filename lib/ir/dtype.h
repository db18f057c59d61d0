// ONNX element types: byte sizes, names, and C types. One table so that inspect, emit-header,
// the executor and split agree on what "float16" or "bool" occupies.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace porttool::ir {

// Bytes per element; 0 for types without a fixed size (string, undefined).
size_t DtypeSize(int32_t dtype);
// Lower-case ONNX name: "float32", "float16", "int64", "bool", ...
std::string DtypeName(int32_t dtype);
// The C type firmware uses for it ("float", "uint16_t" for float16, "bool" -> "uint8_t").
std::string DtypeCType(int32_t dtype);
// Parses a name produced by DtypeName (also accepts "float" and "double").
std::optional<int32_t> DtypeFromName(const std::string& name);

// Static dims of a tensor type, or nullopt when any dim is symbolic or missing (or no shape).
std::optional<std::vector<int64_t>> StaticShape(const onnx::TypeProto& type);
// "1x3x640x640" when every dim is static, else "[N, 3, H, W]" (symbolic dims by name, unknown
// ones as "?"); "scalar" for rank 0.
std::string ShapeToString(const onnx::TypeProto& type);
// Element count of a static shape (1 for a scalar).
int64_t ElementCount(const std::vector<int64_t>& dims);

}  // namespace porttool::ir
