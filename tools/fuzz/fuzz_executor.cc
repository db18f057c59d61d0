// The executor on one random node: an op from the kernel registry, an opset, up to four constant
// inputs of random type with bounded shapes (dims 0..4, rank 0..4) and arbitrary values (shape
// inputs such as Reshape's or Expand's get whatever int64s the fuzzer picks), and attributes
// drawn from the names kernels read, with random values. Runs one Session over it.
#include <fuzzer/FuzzedDataProvider.h>

#include "lib/ir/dtype.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "tools/fuzz/fuzz_util.h"

namespace {

using porttool::runtime::Tensor;
using TP = onnx::TensorProto;

const char* const kIntAttrs[] = {"axis",
                                 "blocksize",
                                 "group",
                                 "keepdims",
                                 "transA",
                                 "transB",
                                 "to",
                                 "ceil_mode",
                                 "exclusive",
                                 "reverse",
                                 "largest",
                                 "sorted",
                                 "k",
                                 "batch_dims",
                                 "upper",
                                 "select_last_index",
                                 "noop_with_empty_axes",
                                 "count_include_pad",
                                 "storage_order",
                                 "detect_negative"};
const char* const kIntsAttrs[] = {"axes",           "perm",      "kernel_shape", "strides",
                                  "pads",           "dilations", "shape",        "output_shape",
                                  "output_padding", "starts",    "ends",         "split"};
const char* const kFloatAttrs[] = {
    "alpha",        "beta", "epsilon", "gamma", "min",
    "max",          "bias", "lambd",   "ratio", "extrapolation_value",
    "cubic_coeff_a"};
const char* const kStringAttrs[] = {"mode",         "auto_pad",  "coordinate_transformation_mode",
                                    "nearest_mode", "direction", "reduction"};
const char* const kStrings[] = {"nearest",       "linear",
                                "cubic",         "DCR",
                                "CRD",           "constant",
                                "reflect",       "edge",
                                "SAME_UPPER",    "VALID",
                                "asymmetric",    "half_pixel",
                                "align_corners", "tf_crop_and_resize",
                                "floor"};
const int32_t kTypes[] = {TP::FLOAT, TP::INT64,  TP::INT32, TP::BOOL,
                          TP::UINT8, TP::DOUBLE, TP::INT8,  TP::FLOAT16};

template <typename T, size_t N>
const T& Pick(FuzzedDataProvider& fdp, const T (&options)[N]) {
  return options[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

void AddInput(FuzzedDataProvider& fdp, onnx::GraphProto& graph, const std::string& name) {
  TP* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(Pick(fdp, kTypes));
  int rank = fdp.ConsumeIntegralInRange(0, 4);
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = fdp.ConsumeIntegralInRange<int64_t>(0, 4);
    t->add_dims(d);
    count *= d;
  }
  size_t bytes = static_cast<size_t>(count) * porttool::ir::DtypeSize(t->data_type());
  std::string raw = fdp.ConsumeBytesAsString(bytes);
  raw.resize(bytes, '\0');
  t->set_raw_data(raw);
}

void AddAttribute(FuzzedDataProvider& fdp, onnx::NodeProto& node) {
  auto* a = node.add_attribute();
  switch (fdp.ConsumeIntegralInRange(0, 3)) {
    case 0:
      a->set_name(Pick(fdp, kIntAttrs));
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(fdp.ConsumeIntegral<int64_t>() % (fdp.ConsumeBool() ? 8 : INT64_MAX));
      break;
    case 1: {
      a->set_name(Pick(fdp, kIntsAttrs));
      a->set_type(onnx::AttributeProto::INTS);
      int n = fdp.ConsumeIntegralInRange(0, 8);
      for (int i = 0; i < n; ++i) a->add_ints(fdp.ConsumeIntegralInRange<int64_t>(-5, 9));
      break;
    }
    case 2:
      a->set_name(Pick(fdp, kFloatAttrs));
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(fdp.ConsumeFloatingPoint<float>());
      break;
    default:
      a->set_name(Pick(fdp, kStringAttrs));
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(Pick(fdp, kStrings));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace porttool;
  static const std::vector<std::string> ops = runtime::KernelRegistry::Default().OpNames();
  static const bool limited = [] {
    // Small caps keep every run inside libFuzzer's malloc limit; the caps are what is tested.
    runtime::SetResourceLimits(
        {.tensor_bytes = 64 << 20, .total_bytes = 256 << 20, .loop_iterations = 1000});
    return true;
  }();
  (void)limited;
  FuzzedDataProvider fdp(data, size);
  io::Model model;
  const std::string& full = ops[fdp.ConsumeIntegralInRange<size_t>(0, ops.size() - 1)];
  auto sep = full.find("::");
  std::string domain = sep == std::string::npos ? "" : full.substr(0, sep);
  std::string op = sep == std::string::npos ? full : full.substr(sep + 2);
  model.proto.set_ir_version(8);
  auto* opset = model.proto.add_opset_import();
  opset->set_domain(domain);
  opset->set_version(domain.empty() ? fdp.ConsumeIntegralInRange(7, 17) : 1);
  auto& graph = *model.proto.mutable_graph();
  graph.set_name("fuzz");
  auto& node = *graph.add_node();
  node.set_name("n0");
  node.set_op_type(op);
  node.set_domain(domain);
  int inputs = fdp.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < inputs; ++i) {
    std::string name = "in" + std::to_string(i);
    if (fdp.ConsumeIntegralInRange(0, 9) == 0) name.clear();  // an omitted optional input
    if (!name.empty()) AddInput(fdp, graph, name);
    node.add_input(name);
  }
  int attrs = fdp.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < attrs; ++i) AddAttribute(fdp, node);
  int outputs = fdp.ConsumeIntegralInRange(1, 3);
  for (int i = 0; i < outputs; ++i) {
    node.add_output("out" + std::to_string(i));
    graph.add_output()->set_name("out" + std::to_string(i));
  }
  return fuzz::Guard([&] {
    runtime::Session session(model);
    session.Run({});
  });
}
