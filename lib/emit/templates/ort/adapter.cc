// ONNX Runtime custom-op library for {{domain|c_comment}}::{{Op|c_comment}} (registered as {{ort_domain|c_comment}}::{{Op|c_comment}}),
// scaffolded by porttool scaffold-op from node {{node|c_comment}} of {{model|c_comment}} (sha256 {{sha256}}).
// A thin adapter over kernel/{{sym}}.c written against ONNX Runtime's C API (struct OrtCustomOp):
// no C++ wrapper header, and no link against libonnxruntime (the host passes its OrtApi in).
// What it does about the usual failures (ort/README.md):
// - RegisterCustomOps is extern "C" and the only exported symbol (ort/exports.lds).
// - The op and its domain outlive every session: the op is static, the domains are never freed.
// - OrtCustomOp::version and the OrtApi it asks for are pinned to 17 (ONNX Runtime 1.17: the first
//   with KernelComputeV2, InferOutputShapeFn and start/end versions), never ORT_API_VERSION: a
//   library stamped with newer headers is refused by older runtimes ("Unsupported version").
// - Shape inference is the package's shape rule ({{shape_rule}}), so shapes flow past the op.
// - No exception crosses the C API: callbacks catch and return an OrtStatus.
#include <onnxruntime_c_api.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "{{sym}}.h"

#if defined(_WIN32)
#define PT_ORT_EXPORT __declspec(dllexport)
#else
#define PT_ORT_EXPORT __attribute__((visibility("default")))
#endif

namespace {

constexpr uint32_t kOrtVersion = 17;
constexpr const char* kDomain = "{{ort_domain|c_string}}";
constexpr const char* kOpType = "{{Op|c_string}}";
constexpr size_t kNumInputs = {{max_inputs}};
constexpr size_t kNumOutputs = {{num_outputs}};
const ONNXTensorElementDataType kInputTypes[kNumInputs] = {{{ort_input_types}}};
const bool kInputOptional[kNumInputs] = {{{ort_input_optional}}};
const ONNXTensorElementDataType kOutputTypes[kNumOutputs] = {{{ort_output_types}}};
{{ort_static_dims}}
struct AttributeSpec {
  const char* name;
  int32_t type;  // PT_ATTR_*
};
// The node's attributes (op.json); the list ends with a null name.
const AttributeSpec kAttributes[] = {
{{attribute_table}}};
constexpr size_t kAttributeSlots = sizeof kAttributes / sizeof kAttributes[0];

std::atomic<const OrtApi*> g_api{nullptr};  // set by RegisterCustomOps before any kernel exists
const OrtApi* Api() { return g_api.load(std::memory_order_acquire); }

#define PT_ORT_RETURN_IF_ERROR(expr)                \
  do {                                              \
    OrtStatus* pt_ort_status_ = (expr);             \
    if (pt_ort_status_ != nullptr) return pt_ort_status_; \
  } while (0)

OrtStatus* KernelError(int32_t status) {
  return Api()->CreateStatus(status == PT_NOT_IMPLEMENTED ? ORT_NOT_IMPLEMENTED
                                                          : ORT_INVALID_ARGUMENT,
                             {{sym}}_status_string(status));
}

// One instance per node: the attributes, parsed once, and the storage their arrays point into.
struct Kernel {
  {{sym}}_params params;
  std::string strings[kAttributeSlots];
  std::vector<int64_t> ints[kAttributeSlots];
  std::vector<float> floats[kAttributeSlots];
};

// An attribute the node does not carry keeps the source node's value ({{sym}}_default_params).
OrtStatus* ReadAttribute(const OrtKernelInfo* info, size_t index, Kernel* k) {
  const OrtApi* api = Api();
  const AttributeSpec& spec = kAttributes[index];
  pt_attribute a;
  std::memset(&a, 0, sizeof a);
  a.name = spec.name;
  a.type = spec.type;
  OrtStatus* absent = nullptr;
  size_t size = 0;
  switch (spec.type) {
    case PT_ATTR_FLOAT:
      absent = api->KernelInfoGetAttribute_float(info, spec.name, &a.f);
      break;
    case PT_ATTR_INT:
      absent = api->KernelInfoGetAttribute_int64(info, spec.name, &a.i);
      break;
    case PT_ATTR_STRING:
      absent = api->KernelInfoGetAttribute_string(info, spec.name, nullptr, &size);
      if (absent != nullptr) break;
      k->strings[index].assign(size, '\0');
      PT_ORT_RETURN_IF_ERROR(
          api->KernelInfoGetAttribute_string(info, spec.name, &k->strings[index][0], &size));
      k->strings[index].resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
      a.s = k->strings[index].c_str();
      break;
    case PT_ATTR_FLOATS:
      absent = api->KernelInfoGetAttributeArray_float(info, spec.name, nullptr, &size);
      if (absent != nullptr) break;
      k->floats[index].assign(size, 0.0f);
      PT_ORT_RETURN_IF_ERROR(api->KernelInfoGetAttributeArray_float(
          info, spec.name, k->floats[index].data(), &size));
      a.floats = k->floats[index].data();
      a.count = static_cast<int64_t>(size);
      break;
    default:
      absent = api->KernelInfoGetAttributeArray_int64(info, spec.name, nullptr, &size);
      if (absent != nullptr) break;
      k->ints[index].assign(size, 0);
      PT_ORT_RETURN_IF_ERROR(api->KernelInfoGetAttributeArray_int64(
          info, spec.name, k->ints[index].data(), &size));
      a.ints = k->ints[index].data();
      a.count = static_cast<int64_t>(size);
      break;
  }
  if (absent != nullptr) {
    api->ReleaseStatus(absent);
    return nullptr;
  }
  int32_t status = {{sym}}_set_attribute(&k->params, &a);
  return status == PT_OK ? nullptr : KernelError(status);
}

OrtStatus* ORT_API_CALL CreateKernel(const OrtCustomOp*, const OrtApi*, const OrtKernelInfo* info,
                                     void** kernel) noexcept {
  *kernel = nullptr;
  try {
    std::unique_ptr<Kernel> k(new Kernel());
    k->params = {{sym}}_default_params();
    for (size_t i = 0; kAttributes[i].name != nullptr; ++i) {
      PT_ORT_RETURN_IF_ERROR(ReadAttribute(info, i, k.get()));
    }
    *kernel = k.release();
    return nullptr;
  } catch (const std::exception& e) {
    return Api()->CreateStatus(ORT_RUNTIME_EXCEPTION, e.what());
  }
}

// Element type and dims of a tensor.
OrtStatus* Describe(const OrtValue* value, int32_t* dtype, std::vector<int64_t>* dims) {
  const OrtApi* api = Api();
  OrtTensorTypeAndShapeInfo* info = nullptr;
  PT_ORT_RETURN_IF_ERROR(api->GetTensorTypeAndShape(value, &info));
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  OrtStatus* status = api->GetTensorElementType(info, &type);
  if (status == nullptr) status = api->GetDimensionsCount(info, &rank);
  if (status == nullptr) {
    dims->assign(rank, 0);
    status = api->GetDimensions(info, dims->data(), rank);
  }
  api->ReleaseTensorTypeAndShapeInfo(info);
  *dtype = static_cast<int32_t>(type);  // ONNXTensorElementDataType values are ONNX's
  return status;
}

OrtStatus* ORT_API_CALL Compute(void* op_kernel, OrtKernelContext* context) noexcept {
  try {
    const OrtApi* api = Api();
    const Kernel* k = static_cast<const Kernel*>(op_kernel);
    size_t num_inputs = 0, num_outputs = 0;
    PT_ORT_RETURN_IF_ERROR(api->KernelContext_GetInputCount(context, &num_inputs));
    PT_ORT_RETURN_IF_ERROR(api->KernelContext_GetOutputCount(context, &num_outputs));
    if (num_inputs > kNumInputs || num_outputs != kNumOutputs) {
      return api->CreateStatus(ORT_INVALID_ARGUMENT,
                               "{{domain|c_string}}::{{Op|c_string}}: unexpected number of inputs or outputs");
    }
    pt_tensor inputs[kNumInputs];
    pt_tensor outputs[kNumOutputs];
    std::vector<int64_t> input_dims[kNumInputs];
    std::vector<int64_t> output_dims[kNumOutputs];
    std::memset(inputs, 0, sizeof inputs);
    std::memset(outputs, 0, sizeof outputs);
    for (size_t i = 0; i < num_inputs; ++i) {
      const OrtValue* value = nullptr;
      PT_ORT_RETURN_IF_ERROR(api->KernelContext_GetInput(context, i, &value));
      inputs[i].dtype = static_cast<int32_t>(kInputTypes[i]);
      if (value == nullptr) continue;  // an absent optional input: data stays NULL
      PT_ORT_RETURN_IF_ERROR(Describe(value, &inputs[i].dtype, &input_dims[i]));
      void* data = nullptr;
      PT_ORT_RETURN_IF_ERROR(api->GetTensorMutableData(const_cast<OrtValue*>(value), &data));
      inputs[i].rank = static_cast<int32_t>(input_dims[i].size());
      inputs[i].dims = input_dims[i].data();
      inputs[i].data = data;
    }
    for (size_t i = 0; i < kNumOutputs; ++i) {
      {{ort_output_dims}}
      OrtValue* value = nullptr;
      PT_ORT_RETURN_IF_ERROR(api->KernelContext_GetOutput(
          context, i, output_dims[i].data(), output_dims[i].size(), &value));
      void* data = nullptr;
      PT_ORT_RETURN_IF_ERROR(api->GetTensorMutableData(value, &data));
      outputs[i].dtype = static_cast<int32_t>(kOutputTypes[i]);
      outputs[i].rank = static_cast<int32_t>(output_dims[i].size());
      outputs[i].dims = output_dims[i].data();
      outputs[i].data = data;
    }
    const int32_t n_in = static_cast<int32_t>(num_inputs);
    std::vector<unsigned char> scratch({{sym}}_scratch_size(&k->params, inputs, n_in));
    int32_t status = {{sym}}_compute(&k->params, inputs, n_in, outputs,
                                     static_cast<int32_t>(kNumOutputs),
                                     scratch.empty() ? nullptr : scratch.data());
    return status == PT_OK ? nullptr : KernelError(status);
  } catch (const std::exception& e) {
    return Api()->CreateStatus(ORT_RUNTIME_EXCEPTION, e.what());
  }
}

void ORT_API_CALL DestroyKernel(void* op_kernel) noexcept { delete static_cast<Kernel*>(op_kernel); }

{{ort_infer}}
const char* ORT_API_CALL GetName(const OrtCustomOp*) noexcept { return kOpType; }
const char* ORT_API_CALL GetExecutionProviderType(const OrtCustomOp*) noexcept {
  return "CPUExecutionProvider";
}
ONNXTensorElementDataType ORT_API_CALL GetInputType(const OrtCustomOp*, size_t index) noexcept {
  return index < kNumInputs ? kInputTypes[index] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
size_t ORT_API_CALL GetInputTypeCount(const OrtCustomOp*) noexcept { return kNumInputs; }
ONNXTensorElementDataType ORT_API_CALL GetOutputType(const OrtCustomOp*, size_t index) noexcept {
  return index < kNumOutputs ? kOutputTypes[index] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
size_t ORT_API_CALL GetOutputTypeCount(const OrtCustomOp*) noexcept { return kNumOutputs; }
OrtCustomOpInputOutputCharacteristic ORT_API_CALL GetInputCharacteristic(const OrtCustomOp*,
                                                                         size_t index) noexcept {
  return index < kNumInputs && kInputOptional[index] ? INPUT_OUTPUT_OPTIONAL
                                                     : INPUT_OUTPUT_REQUIRED;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL GetOutputCharacteristic(const OrtCustomOp*,
                                                                          size_t) noexcept {
  return INPUT_OUTPUT_REQUIRED;
}
// ONNX Runtime calls these for any op of version > 12 (memory type) or with a variadic input or
// output (never here): NULL would crash it, so they return its defaults.
OrtMemType ORT_API_CALL GetInputMemoryType(const OrtCustomOp*, size_t) noexcept {
  return OrtMemTypeDefault;
}
int ORT_API_CALL GetVariadicMinArity(const OrtCustomOp*) noexcept { return 1; }
int ORT_API_CALL GetVariadicHomogeneity(const OrtCustomOp*) noexcept { return 1; }
// Any opset version of the domain the model imports.
int ORT_API_CALL GetStartVersion(const OrtCustomOp*) noexcept { return 1; }
int ORT_API_CALL GetEndVersion(const OrtCustomOp*) noexcept { return INT_MAX; }

OrtCustomOp MakeOp() {
  OrtCustomOp op;
  // Members left NULL: the V1 CreateKernel/KernelCompute (V2 is used from version 16) and those
  // newer than version 17 (ORT does not read them for this version).
  std::memset(&op, 0, sizeof op);
  op.version = kOrtVersion;
  op.GetName = GetName;
  op.GetExecutionProviderType = GetExecutionProviderType;
  op.GetInputType = GetInputType;
  op.GetInputTypeCount = GetInputTypeCount;
  op.GetOutputType = GetOutputType;
  op.GetOutputTypeCount = GetOutputTypeCount;
  op.KernelDestroy = DestroyKernel;
  op.GetInputCharacteristic = GetInputCharacteristic;
  op.GetOutputCharacteristic = GetOutputCharacteristic;
  op.GetInputMemoryType = GetInputMemoryType;
  op.GetVariadicInputMinArity = GetVariadicMinArity;
  op.GetVariadicInputHomogeneity = GetVariadicHomogeneity;
  op.GetVariadicOutputMinArity = GetVariadicMinArity;
  op.GetVariadicOutputHomogeneity = GetVariadicHomogeneity;
  op.CreateKernelV2 = CreateKernel;
  op.KernelComputeV2 = Compute;
  op.InferOutputShapeFn = InferOutputShape;
  op.GetStartVersion = GetStartVersion;
  op.GetEndVersion = GetEndVersion;
  return op;
}

std::mutex g_register_mutex;

}  // namespace

// The entry point ONNX Runtime looks up (RegisterCustomOpsLibrary_V2 / register_custom_ops_library).
extern "C" PT_ORT_EXPORT OrtStatus* ORT_API_CALL RegisterCustomOps(OrtSessionOptions* options,
                                                                   const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(kOrtVersion);
  if (api == nullptr) {
    // A runtime older than 1.17: version 1 of the API still creates the error.
    const OrtApi* v1 = api_base->GetApi(1);
    return v1 == nullptr ? nullptr
                         : v1->CreateStatus(ORT_FAIL,
                                            "{{ort_domain|c_string}}::{{Op|c_string}} needs ONNX Runtime 1.17 or newer");
  }
  static const OrtCustomOp op = MakeOp();
  std::lock_guard<std::mutex> lock(g_register_mutex);
  g_api.store(api, std::memory_order_release);
  // Never released: every session options and session that used the domain keeps a pointer to
  // it, and this library cannot know when the last one is gone (a few bytes per registration).
  OrtCustomOpDomain* domain = nullptr;
  PT_ORT_RETURN_IF_ERROR(api->CreateCustomOpDomain(kDomain, &domain));
  PT_ORT_RETURN_IF_ERROR(api->CustomOpDomain_Add(domain, &op));
  return api->AddCustomOpDomain(options, domain);
}
