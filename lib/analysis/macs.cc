#include "lib/analysis/macs.h"

namespace porttool::analysis {
namespace {

std::optional<uint64_t> Product(const std::vector<int64_t>& dims, size_t from = 0) {
  uint64_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) {
    if (dims[i] < 0) return std::nullopt;
    n *= static_cast<uint64_t>(dims[i]);
  }
  return n;
}

std::optional<std::vector<int64_t>> InputShape(const onnx::NodeProto& node, int i,
                                               const ShapeLookup& shape_of) {
  if (node.input_size() <= i || node.input(i).empty()) return std::nullopt;
  return shape_of(node.input(i));
}

// Conv weights are [M, C/group, k...]: each output element reads C/group x k... inputs.
std::optional<uint64_t> ConvMacs(const onnx::NodeProto& node, const ShapeLookup& shape_of) {
  auto w = InputShape(node, 1, shape_of);
  if (!w || w->size() < 2 || node.output_size() < 1) return std::nullopt;
  auto y = shape_of(node.output(0));
  if (!y) return std::nullopt;
  auto out = Product(*y), per_output = Product(*w, 1);
  if (!out || !per_output) return std::nullopt;
  return *out * *per_output;
}

// ConvTranspose weights are [C, M/group, k...]: each input element scatters into M/group x k...
// outputs.
std::optional<uint64_t> ConvTransposeMacs(const onnx::NodeProto& node,
                                          const ShapeLookup& shape_of) {
  auto x = InputShape(node, 0, shape_of);
  auto w = InputShape(node, 1, shape_of);
  if (!x || !w || w->size() < 2) return std::nullopt;
  auto in = Product(*x), per_input = Product(*w, 1);
  if (!in || !per_input) return std::nullopt;
  return *in * *per_input;
}

std::optional<uint64_t> MatMulMacs(const onnx::NodeProto& node, const ShapeLookup& shape_of) {
  auto a = InputShape(node, 0, shape_of);
  if (!a || a->empty() || node.output_size() < 1) return std::nullopt;
  auto y = shape_of(node.output(0));
  if (!y) return std::nullopt;
  int64_t k = a->back();
  auto out = Product(*y);
  if (!out || k < 0) return std::nullopt;
  return *out * static_cast<uint64_t>(k);
}

std::optional<uint64_t> GemmMacs(const onnx::NodeProto& node, const ShapeLookup& shape_of) {
  auto a = InputShape(node, 0, shape_of);
  if (!a || a->size() != 2 || node.output_size() < 1) return std::nullopt;
  auto y = shape_of(node.output(0));
  if (!y) return std::nullopt;
  bool trans_a = false;
  for (const auto& attr : node.attribute()) {
    if (attr.name() == "transA") trans_a = attr.i() != 0;
  }
  int64_t k = trans_a ? (*a)[0] : (*a)[1];
  auto out = Product(*y);
  if (!out || k < 0) return std::nullopt;
  return *out * static_cast<uint64_t>(k);
}

bool IsDefaultDomain(const onnx::NodeProto& node) {
  return node.domain().empty() || node.domain() == "ai.onnx";
}

}  // namespace

bool CountsMacs(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  return IsDefaultDomain(node) &&
         (op == "Conv" || op == "ConvTranspose" || op == "MatMul" || op == "Gemm");
}

std::optional<uint64_t> NodeMacs(const onnx::NodeProto& node, const ShapeLookup& shape_of) {
  if (!CountsMacs(node)) return std::nullopt;
  const std::string& op = node.op_type();
  if (op == "Conv") return ConvMacs(node, shape_of);
  if (op == "ConvTranspose") return ConvTransposeMacs(node, shape_of);
  if (op == "MatMul") return MatMulMacs(node, shape_of);
  return GemmMacs(node, shape_of);
}

}  // namespace porttool::analysis
