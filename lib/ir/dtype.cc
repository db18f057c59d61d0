#include "lib/ir/dtype.h"

#include "lib/util/checked_math.h"
#include "lib/util/strings.h"

namespace porttool::ir {

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
  return util::ElementCountOf(dims, "tensor shape");
}

}  // namespace porttool::ir
