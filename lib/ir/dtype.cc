#include "lib/ir/dtype.h"

#include "lib/util/strings.h"

namespace porttool::ir {

using onnx::TensorProto_DataType;

size_t DtypeSize(int32_t dtype) {
  switch (dtype) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

std::string DtypeName(int32_t dtype) {
  switch (dtype) {
    case onnx::TensorProto::FLOAT:
      return "float32";
    case onnx::TensorProto::DOUBLE:
      return "float64";
    case onnx::TensorProto::FLOAT16:
      return "float16";
    case onnx::TensorProto::BFLOAT16:
      return "bfloat16";
    case onnx::TensorProto::INT8:
      return "int8";
    case onnx::TensorProto::UINT8:
      return "uint8";
    case onnx::TensorProto::INT16:
      return "int16";
    case onnx::TensorProto::UINT16:
      return "uint16";
    case onnx::TensorProto::INT32:
      return "int32";
    case onnx::TensorProto::UINT32:
      return "uint32";
    case onnx::TensorProto::INT64:
      return "int64";
    case onnx::TensorProto::UINT64:
      return "uint64";
    case onnx::TensorProto::BOOL:
      return "bool";
    case onnx::TensorProto::STRING:
      return "string";
    case onnx::TensorProto::COMPLEX64:
      return "complex64";
    case onnx::TensorProto::COMPLEX128:
      return "complex128";
    default:
      return "undefined";
  }
}

std::string DtypeCType(int32_t dtype) {
  switch (dtype) {
    case onnx::TensorProto::FLOAT:
      return "float";
    case onnx::TensorProto::DOUBLE:
      return "double";
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::UINT16:
      return "uint16_t";
    case onnx::TensorProto::INT8:
      return "int8_t";
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return "uint8_t";
    case onnx::TensorProto::INT16:
      return "int16_t";
    case onnx::TensorProto::INT32:
      return "int32_t";
    case onnx::TensorProto::UINT32:
      return "uint32_t";
    case onnx::TensorProto::INT64:
      return "int64_t";
    case onnx::TensorProto::UINT64:
      return "uint64_t";
    default:
      return "uint8_t";
  }
}

std::optional<int32_t> DtypeFromName(const std::string& name) {
  if (name == "float") return onnx::TensorProto::FLOAT;
  if (name == "double") return onnx::TensorProto::DOUBLE;
  for (int32_t t = 1; t <= onnx::TensorProto::BFLOAT16; ++t) {
    if (DtypeName(t) == name) return t;
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> StaticShape(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

std::string ShapeToString(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return "?";
  const auto& shape = type.tensor_type().shape();
  if (shape.dim_size() == 0) return "scalar";
  std::vector<std::string> parts;
  bool symbolic = false;
  for (const auto& d : shape.dim()) {
    if (d.has_dim_value()) {
      parts.push_back(std::to_string(d.dim_value()));
    } else {
      symbolic = true;
      parts.push_back(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?");
    }
  }
  // Dim names may contain 'x' ("batchxsequence", "p2o.DynamicDimension.0"): only all-numeric
  // shapes use the --input-shape form.
  return symbolic ? "[" + util::Join(parts, ", ") + "]" : util::Join(parts, "x");
}

int64_t ElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace porttool::ir
