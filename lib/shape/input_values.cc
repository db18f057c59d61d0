#include "lib/shape/input_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::shape {
namespace {

using TP = onnx::TensorProto;

[[noreturn]] void Fail(const std::string& input, const std::string& message) {
  throw Error(ErrorKind::kUsage, "input value: " + message, {}, input);
}

std::string InputList(const onnx::GraphProto& graph) {
  std::vector<std::string> names;
  for (const auto* vi : ir::GraphView(graph).RealInputs()) {
    names.push_back(vi->name() + " " + ir::DtypeName(vi->type().tensor_type().elem_type()) + " " +
                    ir::ShapeToString(vi->type()));
  }
  return names.empty() ? "(none)" : util::Join(names, ", ");
}

// "a scalar", "[3]", "[1,4]", "[N, 4]": the declared shape as the messages say it.
std::string DeclaredShape(const onnx::TypeProto& type) {
  std::string text = ir::ShapeToString(type);
  if (text == "scalar") return "a scalar";
  if (text == "?" || text.front() == '[') return text;
  std::replace(text.begin(), text.end(), 'x', ',');
  return "[" + text + "]";
}

int FindInput(const onnx::GraphProto& graph, const std::string& name) {
  for (int i = 0; i < graph.input_size(); ++i) {
    if (graph.input(i).name() == name) return i;
  }
  return -1;
}

std::string NumberText(const InputNumber& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return std::to_string(*i);
  return fmt::format("{:g}", std::get<double>(n));
}

// The integer a number stands for, when it is one (16000 and 16000.0 both are).
std::optional<int64_t> AsInteger(const InputNumber& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return *i;
  double d = std::get<double>(n);
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.007199254740992e15) {
    return std::nullopt;
  }
  return static_cast<int64_t>(d);
}

double AsDouble(const InputNumber& n) {
  if (const auto* i = std::get_if<int64_t>(&n)) return static_cast<double>(*i);
  return std::get<double>(n);
}

// The closed range an integer element type holds; nullopt for non-integer types.
std::optional<std::pair<int64_t, uint64_t>> IntegerRange(int32_t dtype) {
  switch (dtype) {
    case TP::BOOL:
      return std::pair<int64_t, uint64_t>{0, 1};
    case TP::INT8:
      return std::pair<int64_t, uint64_t>{INT8_MIN, INT8_MAX};
    case TP::UINT8:
      return std::pair<int64_t, uint64_t>{0, UINT8_MAX};
    case TP::INT16:
      return std::pair<int64_t, uint64_t>{INT16_MIN, INT16_MAX};
    case TP::UINT16:
      return std::pair<int64_t, uint64_t>{0, UINT16_MAX};
    case TP::INT32:
      return std::pair<int64_t, uint64_t>{INT32_MIN, INT32_MAX};
    case TP::UINT32:
      return std::pair<int64_t, uint64_t>{0, UINT32_MAX};
    case TP::INT64:
      return std::pair<int64_t, uint64_t>{INT64_MIN, INT64_MAX};
    case TP::UINT64:
      return std::pair<int64_t, uint64_t>{0, UINT64_MAX};
    default:
      return std::nullopt;
  }
}

// Stores one number in the typed field ONNX uses for `tensor`'s element type.
void AppendNumber(TP& tensor, const InputNumber& n, const std::string& input) {
  int32_t dtype = tensor.data_type();
  if (dtype == TP::FLOAT) return tensor.add_float_data(static_cast<float>(AsDouble(n)));
  if (dtype == TP::DOUBLE) return tensor.add_double_data(AsDouble(n));
  auto range = IntegerRange(dtype);
  if (!range) {
    Fail(input,
         fmt::format("'{}' is {}: give its value as a tensor file", input, ir::DtypeName(dtype)));
  }
  auto value = AsInteger(n);
  bool fits = value && *value >= range->first &&
              (*value < 0 || static_cast<uint64_t>(*value) <= range->second);
  if (!fits) {
    Fail(input, fmt::format("'{}' is {}, which cannot hold {} (from {} to {})", input,
                            ir::DtypeName(dtype), NumberText(n), range->first, range->second));
  }
  if (dtype == TP::INT64) return tensor.add_int64_data(*value);
  if (dtype == TP::UINT32 || dtype == TP::UINT64) {
    return tensor.add_uint64_data(static_cast<uint64_t>(*value));
  }
  tensor.add_int32_data(static_cast<int32_t>(*value));
}

// The dims a list of `count` numbers takes for an input declared with `type`: the declared dims,
// with one unknown dim (or every unknown dim, for a single number) taken from the count.
std::vector<int64_t> DimsForCount(const onnx::TypeProto& type, int64_t count,
                                  const std::string& input) {
  const auto& tt = type.tensor_type();
  if (!tt.has_shape()) {
    return count == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{count};
  }
  std::vector<int64_t> dims;
  int64_t known = 1;
  int unknown = 0;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (d.has_dim_value()) known *= d.dim_value();
    unknown += d.has_dim_value() ? 0 : 1;
  }
  std::string declared = DeclaredShape(type);
  bool fits = unknown == 0 ? known == count : known > 0 && count % known == 0;
  if (fits && unknown > 1 && count / known != 1) fits = false;
  if (!fits) {
    Fail(input,
         fmt::format("'{}' is {} in the model; {} value(s) were given{}", input, declared, count,
                     unknown > 1 ? " (with several unknown dims, give a .npy file)" : ""));
  }
  for (auto& d : dims) {
    if (d < 0) d = count / known;
  }
  return dims;
}

TP TensorFromNumbers(const onnx::ValueInfoProto& input, const InputValue& value) {
  TP tensor;
  tensor.set_data_type(input.type().tensor_type().elem_type());
  auto dims = DimsForCount(input.type(), static_cast<int64_t>(value.numbers.size()), input.name());
  for (int64_t d : dims) tensor.add_dims(d);
  for (const auto& n : value.numbers) AppendNumber(tensor, n, input.name());
  return tensor;
}

// A given tensor, checked against the declaration.
TP CheckedTensor(const onnx::ValueInfoProto& input, const TP& given) {
  const auto& tt = input.type().tensor_type();
  if (given.data_type() != tt.elem_type()) {
    Fail(input.name(),
         fmt::format("'{}' is {} in the model; the file holds {}", input.name(),
                     ir::DtypeName(tt.elem_type()), ir::DtypeName(given.data_type())));
  }
  bool same = !tt.has_shape() || tt.shape().dim_size() == given.dims_size();
  for (int i = 0; same && tt.has_shape() && i < given.dims_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    same = !d.has_dim_value() || d.dim_value() == given.dims(i);
  }
  if (!same) {
    std::vector<int64_t> dims(given.dims().begin(), given.dims().end());
    Fail(input.name(), fmt::format("'{}' is {} in the model; the file holds [{}]", input.name(),
                                   DeclaredShape(input.type()), fmt::join(dims, ",")));
  }
  return given;
}

void ReplaceInitializer(onnx::GraphProto& graph, TP tensor) {
  for (auto& t : *graph.mutable_initializer()) {
    if (t.name() == tensor.name()) {
      t = std::move(tensor);
      return;
    }
  }
  *graph.add_initializer() = std::move(tensor);
}

}  // namespace

void ApplyInputValues(io::Model& model, const InputValues& values) {
  auto& graph = *model.proto.mutable_graph();
  for (const auto& [name, value] : values) {
    int index = FindInput(graph, name);
    if (index < 0) {
      Fail(name,
           fmt::format("'{}' is not a graph input; the inputs are: {}", name, InputList(graph)));
    }
    const onnx::ValueInfoProto& input = graph.input(index);
    if (!input.type().has_tensor_type()) {
      Fail(name, fmt::format("'{}' is not a tensor input", name));
    }
    if (value.numbers.empty() == !value.tensor) {
      Fail(name, fmt::format("'{}': give either numbers or a tensor", name));
    }
    TP tensor =
        value.tensor ? CheckedTensor(input, *value.tensor) : TensorFromNumbers(input, value);
    tensor.set_name(name);
    ReplaceInitializer(graph, std::move(tensor));
    graph.mutable_input()->DeleteSubrange(index, 1);
  }
}

void PinAndSetInputs(io::Model& model, const InputShapes& shapes, const InputValues& values) {
  ApplyInputShapes(model, shapes);
  ApplyInputValues(model, values);
}

std::string InputValuesText(const InputValues& values) {
  std::vector<std::string> parts;
  for (const auto& [name, v] : values) {
    std::string text;
    if (v.tensor) {
      std::vector<int64_t> dims(v.tensor->dims().begin(), v.tensor->dims().end());
      text = fmt::format("{}={} [{}] (a tensor file)", name, ir::DtypeName(v.tensor->data_type()),
                         fmt::join(dims, ","));
    } else if (v.numbers.size() == 1) {
      text = name + "=" + NumberText(v.numbers.front());
    } else {
      std::vector<std::string> numbers;
      for (const auto& n : v.numbers) numbers.push_back(NumberText(n));
      text = name + "=" + util::Join(numbers, ",");
    }
    parts.push_back(v.origin == "given" ? text : text + " (" + v.origin + ")");
  }
  return util::Join(parts, ", ");
}

void CheckInputRanges(const io::Model& model, const InputRanges& ranges,
                      const InputValues& values) {
  const auto& graph = model.proto.graph();
  ir::GraphView view(graph);
  for (const auto& entry : ranges) {
    const std::string& name = entry.first;  // a lambda cannot capture a structured binding in C++17
    const auto& r = entry.second;
    auto fail = [&](const std::string& what) {
      throw Error(ErrorKind::kUsage, "input range: " + what, {}, name);
    };
    if (values.count(name)) {
      fail(fmt::format("'{}' is also given a value; give one or the other", name));
    }
    bool found = false;
    for (const auto* vi : view.RealInputs()) found |= vi->name() == name;
    if (!found) {
      fail(fmt::format("'{}' is not a graph input; the inputs are: {}", name, InputList(graph)));
    }
    if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi) {
      fail(fmt::format("'{}': expected finite LO <= HI, got {:g}:{:g}", name, r.lo, r.hi));
    }
  }
}

}  // namespace porttool::shape
