// ONNX element types: byte sizes, names and C types. One table, at the bottom of the library, so
// that reading a tensor file, inspect, emit-header, the executor and split agree on what
// "float16" or "bool" occupies. Graph-level shape helpers live in lib/ir/dtype.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

namespace porttool::io {

// Bytes per element; 0 for types without a fixed size (string, undefined).
size_t DtypeSize(int32_t dtype);
// Lower-case ONNX name: "float32", "float16", "int64", "bool", ...
std::string DtypeName(int32_t dtype);
// The C type firmware uses for it ("float", "uint16_t" for float16, "bool" -> "uint8_t").
std::string DtypeCType(int32_t dtype);
// Parses a name produced by DtypeName (also accepts "float" and "double").
std::optional<int32_t> DtypeFromName(const std::string& name);

}  // namespace porttool::io
