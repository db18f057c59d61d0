#include "lib/shape/input_shapes.h"

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::shape {
namespace {

std::string RealInputList(const io::Model& model) {
  std::vector<std::string> names;
  ir::GraphView view(model.proto.graph());
  for (const auto* vi : view.RealInputs()) {
    names.push_back(vi->name() + " " + ir::ShapeToString(vi->type()));
  }
  return names.empty() ? "(none)" : util::Join(names, ", ");
}

}  // namespace

void ApplyInputShapes(io::Model& model, const InputShapes& shapes) {
  auto* graph = model.proto.mutable_graph();
  for (const auto& [name, dims] : shapes) {
    onnx::ValueInfoProto* target = nullptr;
    for (auto& input : *graph->mutable_input()) {
      if (input.name() == name) target = &input;
    }
    bool is_initializer = false;
    for (const auto& t : graph->initializer()) is_initializer |= t.name() == name;
    if (!target || is_initializer) {
      throw Error(ErrorKind::kUsage,
                  fmt::format("input shape: '{}' is not a graph input; the inputs are: {}", name,
                              RealInputList(model)),
                  {}, name);
    }
    auto* tensor_type = target->mutable_type()->mutable_tensor_type();
    auto* shape = tensor_type->mutable_shape();
    if (tensor_type->has_shape() && shape->dim_size() != static_cast<int>(dims.size()) &&
        shape->dim_size() > 0) {
      ThrowUsage(
          "input shape: '{}' has rank {} in the model but {} dims were given; the "
          "inputs are: {}",
          name, shape->dim_size(), dims.size(), RealInputList(model));
    }
    for (int i = 0; i < shape->dim_size(); ++i) {
      const auto& d = shape->dim(i);
      if (d.has_dim_value() && d.dim_value() != dims[i]) {
        ThrowUsage("input shape: '{}' dim {} is fixed to {} in the model, not {}", name, i,
                   d.dim_value(), dims[i]);
      }
    }
    shape->clear_dim();
    for (int64_t v : dims) shape->add_dim()->set_dim_value(v);
  }
}

std::vector<std::string> DynamicInputDims(const io::Model& model) {
  std::vector<std::string> out;
  ir::GraphView view(model.proto.graph());
  for (const auto* vi : view.RealInputs()) {
    const auto& type = vi->type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) {
      out.push_back(vi->name() + " (no shape)");
      continue;
    }
    const auto& shape = type.tensor_type().shape();
    for (int i = 0; i < shape.dim_size(); ++i) {
      const auto& d = shape.dim(i);
      if (!d.has_dim_value()) {
        out.push_back(fmt::format("{}[{}]={}", vi->name(), i,
                                  d.has_dim_param() ? d.dim_param() : std::string("?")));
      }
    }
  }
  return out;
}

std::string ExampleInputShape(const onnx::ValueInfoProto& input) {
  const auto& type = input.type();
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return input.name() + ":DIMS";
  const auto& shape = type.tensor_type().shape();
  if (shape.dim_size() == 0) return input.name() + ":scalar";
  // Image-like rank-4 inputs get a detector-sized side; sequences and states a short length.
  int64_t typical = shape.dim_size() >= 4 ? 640 : 64;
  std::vector<std::string> dims;
  for (int i = 0; i < shape.dim_size(); ++i) {
    const auto& d = shape.dim(i);
    dims.push_back(std::to_string(d.has_dim_value() ? d.dim_value() : (i == 0 ? 1 : typical)));
  }
  return input.name() + ":" + util::Join(dims, "x");
}

std::string ExampleInputShapes(const io::Model& model) {
  std::vector<std::string> out;
  ir::GraphView view(model.proto.graph());
  for (const auto* vi : view.RealInputs()) {
    bool dynamic = false;
    const auto& type = vi->type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) dynamic = true;
    for (const auto& d : type.tensor_type().shape().dim()) dynamic |= !d.has_dim_value();
    if (dynamic) out.push_back(ExampleInputShape(*vi));
  }
  return util::Join(out, ",");
}

}  // namespace porttool::shape
