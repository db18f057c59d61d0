// Tensor types as the graph sees them: static shapes, printable shapes, element counts. The
// element-type table itself (sizes, names, C types) lives below, in lib/io/dtype.h, because io
// reads tensors without knowing graphs; it is re-exported here for graph code.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/dtype.h"

namespace porttool::ir {

using io::DtypeCType;
using io::DtypeFromName;
using io::DtypeName;
using io::DtypeSize;

// Static dims of a tensor type, or nullopt when any dim is symbolic or missing (or no shape).
std::optional<std::vector<int64_t>> StaticShape(const onnx::TypeProto& type);
// "1x3x640x640" when every dim is static, else "[N, 3, H, W]" (symbolic dims by name, unknown
// ones as "?"); "scalar" for rank 0.
std::string ShapeToString(const onnx::TypeProto& type);
// Element count of a static shape (1 for a scalar); Error(kBadInput) for a negative dim or a
// count past int64 (util::ElementCountOf, which callers with a tensor name should prefer).
int64_t ElementCount(const std::vector<int64_t>& dims);

}  // namespace porttool::ir
