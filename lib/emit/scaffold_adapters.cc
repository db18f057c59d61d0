#include "lib/emit/scaffold_adapters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "lib/emit/c_names.h"
#include "lib/ir/dtype.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

using shape::CustomOpSpec;
using util::Join;

// ONNX Runtime owns the standard domains and com.microsoft (its contrib ops, e.g. Gelu): a custom
// op registered there is never the one that runs, so the adapter uses a domain of its own and the
// model patch moves the node into it.
std::string OrtDomain(const std::string& domain) {
  static const char* const kOwned[] = {"",
                                       "ai.onnx",
                                       "ai.onnx.ml",
                                       "ai.onnx.training",
                                       "ai.onnx.preview.training",
                                       "com.microsoft",
                                       "com.microsoft.nchwc"};
  for (const char* d : kOwned) {
    if (domain == d) return "porttool.custom";
  }
  return domain;
}

struct DtypeNames {
  int32_t onnx;
  const char* ort;    // ONNX_TENSOR_ELEMENT_DATA_TYPE_<ort>
  const char* numpy;  // np.<numpy>
  const char* trt;    // nvinfer1::DataType::<trt>, "" if TensorRT has none
};

const DtypeNames& Names(int32_t dtype) {
  static const DtypeNames kNames[] = {
      {1, "FLOAT", "float32", "kFLOAT"},
      {2, "UINT8", "uint8", "kUINT8"},
      {3, "INT8", "int8", "kINT8"},
      {4, "UINT16", "uint16", ""},
      {5, "INT16", "int16", ""},
      {6, "INT32", "int32", "kINT32"},
      {7, "INT64", "int64", "kINT64"},
      {9, "BOOL", "bool_", "kBOOL"},
      {10, "FLOAT16", "float16", "kHALF"},
      {11, "DOUBLE", "float64", ""},
      {12, "UINT32", "uint32", ""},
      {13, "UINT64", "uint64", ""},
      {16, "BFLOAT16", "float32", "kBF16"},
  };
  for (const auto& n : kNames) {
    if (n.onnx == dtype) return n;
  }
  ThrowBadInput("scaffold-op: ONNX dtype {} has no adapter mapping", dtype);
}

const char* PtAttrType(int32_t type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return "PT_ATTR_FLOAT";
    case onnx::AttributeProto::INT:
      return "PT_ATTR_INT";
    case onnx::AttributeProto::STRING:
      return "PT_ATTR_STRING";
    case onnx::AttributeProto::FLOATS:
      return "PT_ATTR_FLOATS";
    default:
      return "PT_ATTR_INTS";
  }
}

// "{"alpha", PT_ATTR_FLOAT}, ..., {NULL, 0}": the attribute table every adapter walks.
std::string AttributeTable(const CustomOpSpec& spec, const char* null) {
  std::string rows;
  for (const auto& a : spec.attributes) {
    rows += fmt::format("    {{{}, {}}},\n", CStringLiteral(a.name), PtAttrType(a.type));
  }
  return rows + fmt::format("    {{{}, 0}},\n", null);
}

// Output dims of the static shape rule, one brace list per output.
std::vector<std::string> StaticDims(const CustomOpSpec& spec) {
  std::vector<std::string> out;
  for (const auto& o : spec.outputs) {
    std::vector<std::string> d;
    for (int64_t v : o.shape) d.push_back(std::to_string(v));
    out.push_back("{" + Join(d, ", ") + "}");
  }
  return out;
}

std::string VarOf(const ScaffoldVars& vars, const std::string& name) {
  for (const auto& [k, v] : vars) {
    if (k == name) return v;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// ONNX Runtime
// ---------------------------------------------------------------------------------------------

constexpr const char* kOrtStub =
    R"tpl(/* porttool's compile-only stand-in for ONNX Runtime's onnxruntime_c_api.h, shipped so that
 * ort/{{sym}}_ort.cc compiles (with warnings as errors) where no ONNX Runtime SDK is installed.
 * It declares only what the adapter uses, with ONNX Runtime's names and signatures (C API 17,
 * ONNX Runtime 1.17+) but NOT its layout: OrtApi here has only those members, so a library built
 * against this file would call the wrong functions. Build the loadable library against the real
 * header: cmake -DONNXRUNTIME_ROOT=<SDK root holding include/onnxruntime_c_api.h>. */
#ifndef PT_ORT_STUB_ONNXRUNTIME_C_API_H_
#define PT_ORT_STUB_ONNXRUNTIME_C_API_H_

#ifndef PT_ORT_STUB_COMPILE_ONLY
#error "ort/stub/onnxruntime_c_api.h is compile-only: configure with -DONNXRUNTIME_ROOT=<ONNX Runtime SDK>"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define PT_ORT_NO_EXCEPTION noexcept
extern "C" {
#else
#define PT_ORT_NO_EXCEPTION
#endif

#define ORT_API_VERSION 17
#define ORT_API_CALL
#if defined(__GNUC__) || defined(__clang__)
#define PT_ORT_MUST_USE_RESULT __attribute__((warn_unused_result))
#else
#define PT_ORT_MUST_USE_RESULT
#endif

typedef enum ONNXTensorElementDataType {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16
} ONNXTensorElementDataType;

typedef enum OrtErrorCode {
  ORT_OK,
  ORT_FAIL,
  ORT_INVALID_ARGUMENT,
  ORT_NO_SUCHFILE,
  ORT_NO_MODEL,
  ORT_ENGINE_ERROR,
  ORT_RUNTIME_EXCEPTION,
  ORT_INVALID_PROTOBUF,
  ORT_MODEL_LOADED,
  ORT_NOT_IMPLEMENTED,
  ORT_INVALID_GRAPH,
  ORT_EP_FAIL
} OrtErrorCode;

typedef enum OrtCustomOpInputOutputCharacteristic {
  INPUT_OUTPUT_REQUIRED = 0,
  INPUT_OUTPUT_OPTIONAL,
  INPUT_OUTPUT_VARIADIC
} OrtCustomOpInputOutputCharacteristic;

typedef enum OrtMemType {
  OrtMemTypeCPUInput = -2,
  OrtMemTypeCPUOutput = -1,
  OrtMemTypeCPU = OrtMemTypeCPUOutput,
  OrtMemTypeDefault = 0
} OrtMemType;

typedef struct OrtStatus OrtStatus;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtValue OrtValue;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtShapeInferContext OrtShapeInferContext;
typedef struct OrtCustomOpDomain OrtCustomOpDomain;
typedef OrtStatus* OrtStatusPtr;
typedef struct OrtApi OrtApi;
typedef struct OrtCustomOp OrtCustomOp;

#define PT_ORT_STATUS(NAME, ...) \
  OrtStatusPtr(ORT_API_CALL* NAME)(__VA_ARGS__) PT_ORT_NO_EXCEPTION PT_ORT_MUST_USE_RESULT

/* The members of OrtApi the adapter calls (the real struct has several hundred, in another order). */
struct OrtApi {
  OrtStatus*(ORT_API_CALL* CreateStatus)(OrtErrorCode code, const char* msg) PT_ORT_NO_EXCEPTION;
  void(ORT_API_CALL* ReleaseStatus)(OrtStatus* input) PT_ORT_NO_EXCEPTION;
  PT_ORT_STATUS(CreateCustomOpDomain, const char* domain, OrtCustomOpDomain** out);
  PT_ORT_STATUS(CustomOpDomain_Add, OrtCustomOpDomain* custom_op_domain, const OrtCustomOp* op);
  PT_ORT_STATUS(AddCustomOpDomain, OrtSessionOptions* options, OrtCustomOpDomain* custom_op_domain);
  PT_ORT_STATUS(KernelInfoGetAttribute_float, const OrtKernelInfo* info, const char* name,
                float* out);
  PT_ORT_STATUS(KernelInfoGetAttribute_int64, const OrtKernelInfo* info, const char* name,
                int64_t* out);
  PT_ORT_STATUS(KernelInfoGetAttribute_string, const OrtKernelInfo* info, const char* name,
                char* out, size_t* size);
  PT_ORT_STATUS(KernelContext_GetInputCount, const OrtKernelContext* context, size_t* out);
  PT_ORT_STATUS(KernelContext_GetOutputCount, const OrtKernelContext* context, size_t* out);
  PT_ORT_STATUS(KernelContext_GetInput, const OrtKernelContext* context, size_t index,
                const OrtValue** out);
  PT_ORT_STATUS(KernelContext_GetOutput, OrtKernelContext* context, size_t index,
                const int64_t* dim_values, size_t dim_count, OrtValue** out);
  PT_ORT_STATUS(GetTensorMutableData, OrtValue* value, void** out);
  PT_ORT_STATUS(CreateTensorTypeAndShapeInfo, OrtTensorTypeAndShapeInfo** out);
  PT_ORT_STATUS(SetTensorElementType, OrtTensorTypeAndShapeInfo* info,
                ONNXTensorElementDataType type);
  PT_ORT_STATUS(SetDimensions, OrtTensorTypeAndShapeInfo* info, const int64_t* dim_values,
                size_t dim_count);
  PT_ORT_STATUS(GetTensorElementType, const OrtTensorTypeAndShapeInfo* info,
                ONNXTensorElementDataType* out);
  PT_ORT_STATUS(GetDimensionsCount, const OrtTensorTypeAndShapeInfo* info, size_t* out);
  PT_ORT_STATUS(GetDimensions, const OrtTensorTypeAndShapeInfo* info, int64_t* dim_values,
                size_t dim_values_length);
  PT_ORT_STATUS(GetTensorTypeAndShape, const OrtValue* value, OrtTensorTypeAndShapeInfo** out);
  void(ORT_API_CALL* ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo* input)
      PT_ORT_NO_EXCEPTION;
  PT_ORT_STATUS(KernelInfoGetAttributeArray_float, const OrtKernelInfo* info, const char* name,
                float* out, size_t* size);
  PT_ORT_STATUS(KernelInfoGetAttributeArray_int64, const OrtKernelInfo* info, const char* name,
                int64_t* out, size_t* size);
  PT_ORT_STATUS(ShapeInferContext_GetInputTypeShape, const OrtShapeInferContext* context,
                size_t index, OrtTensorTypeAndShapeInfo** info);
  PT_ORT_STATUS(ShapeInferContext_SetOutputTypeShape, const OrtShapeInferContext* context,
                size_t index, const OrtTensorTypeAndShapeInfo* info);
};

typedef struct OrtApiBase {
  const OrtApi*(ORT_API_CALL* GetApi)(uint32_t version) PT_ORT_NO_EXCEPTION;
  const char*(ORT_API_CALL* GetVersionString)(void) PT_ORT_NO_EXCEPTION;
} OrtApiBase;

/* OrtCustomOp as ONNX Runtime 1.17+ declares it (members in order). */
struct OrtCustomOp {
  uint32_t version;
  void*(ORT_API_CALL* CreateKernel)(const struct OrtCustomOp* op, const OrtApi* api,
                                    const OrtKernelInfo* info);
  const char*(ORT_API_CALL* GetName)(const struct OrtCustomOp* op);
  const char*(ORT_API_CALL* GetExecutionProviderType)(const struct OrtCustomOp* op);
  ONNXTensorElementDataType(ORT_API_CALL* GetInputType)(const struct OrtCustomOp* op, size_t index);
  size_t(ORT_API_CALL* GetInputTypeCount)(const struct OrtCustomOp* op);
  ONNXTensorElementDataType(ORT_API_CALL* GetOutputType)(const struct OrtCustomOp* op,
                                                         size_t index);
  size_t(ORT_API_CALL* GetOutputTypeCount)(const struct OrtCustomOp* op);
  void(ORT_API_CALL* KernelCompute)(void* op_kernel, OrtKernelContext* context);
  void(ORT_API_CALL* KernelDestroy)(void* op_kernel);
  OrtCustomOpInputOutputCharacteristic(ORT_API_CALL* GetInputCharacteristic)(
      const struct OrtCustomOp* op, size_t index);
  OrtCustomOpInputOutputCharacteristic(ORT_API_CALL* GetOutputCharacteristic)(
      const struct OrtCustomOp* op, size_t index);
  OrtMemType(ORT_API_CALL* GetInputMemoryType)(const struct OrtCustomOp* op, size_t index);
  int(ORT_API_CALL* GetVariadicInputMinArity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicInputHomogeneity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicOutputMinArity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicOutputHomogeneity)(const struct OrtCustomOp* op);
  OrtStatusPtr(ORT_API_CALL* CreateKernelV2)(const struct OrtCustomOp* op, const OrtApi* api,
                                             const OrtKernelInfo* info, void** kernel);
  OrtStatusPtr(ORT_API_CALL* KernelComputeV2)(void* op_kernel, OrtKernelContext* context);
  OrtStatusPtr(ORT_API_CALL* InferOutputShapeFn)(const struct OrtCustomOp* op,
                                                 OrtShapeInferContext* context);
  int(ORT_API_CALL* GetStartVersion)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetEndVersion)(const struct OrtCustomOp* op);
  size_t(ORT_API_CALL* GetMayInplace)(int** input_index, int** output_index);
  void(ORT_API_CALL* ReleaseMayInplace)(int* input_index, int* output_index);
  size_t(ORT_API_CALL* GetAliasMap)(int** input_index, int** output_index);
  void(ORT_API_CALL* ReleaseAliasMap)(int* input_index, int* output_index);
};

#ifdef __cplusplus
}
#endif

#endif /* PT_ORT_STUB_ONNXRUNTIME_C_API_H_ */
)tpl";

constexpr const char* kOrtAdapter =
    R"tpl(// ONNX Runtime custom-op library for {{domain}}::{{Op}} (registered as {{ort_domain}}::{{Op}}),
// scaffolded by porttool scaffold-op from node {{node}} of {{model}} (sha256 {{sha256}}).
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
constexpr const char* kDomain = "{{ort_domain}}";
constexpr const char* kOpType = "{{Op}}";
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
                               "{{domain}}::{{Op}}: unexpected number of inputs or outputs");
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
                                            "{{ort_domain}}::{{Op}} needs ONNX Runtime 1.17 or newer");
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
)tpl";

constexpr const char* kOrtInferSame =
    R"tpl(// Shape rule same_as_input: every output has the type and shape of input {{shape_input}}.
OrtStatus* ORT_API_CALL InferOutputShape(const OrtCustomOp*, OrtShapeInferContext* context) noexcept {
  const OrtApi* api = Api();
  OrtTensorTypeAndShapeInfo* input = nullptr;  // owned by the context: not released here
  PT_ORT_RETURN_IF_ERROR(api->ShapeInferContext_GetInputTypeShape(context, {{shape_input}}, &input));
  for (size_t i = 0; i < kNumOutputs; ++i) {
    PT_ORT_RETURN_IF_ERROR(api->ShapeInferContext_SetOutputTypeShape(context, i, input));
  }
  return nullptr;
}
)tpl";

constexpr const char* kOrtInferStatic =
    R"tpl(// Shape rule static: the output shapes recorded in op.json.
OrtStatus* ORT_API_CALL InferOutputShape(const OrtCustomOp*, OrtShapeInferContext* context) noexcept {
  const OrtApi* api = Api();
  for (size_t i = 0; i < kNumOutputs; ++i) {
    OrtTensorTypeAndShapeInfo* info = nullptr;
    PT_ORT_RETURN_IF_ERROR(api->CreateTensorTypeAndShapeInfo(&info));
    OrtStatus* status = api->SetTensorElementType(info, kOutputTypes[i]);
    if (status == nullptr) {
      status = api->SetDimensions(info, kOutputDims[i].data(), kOutputDims[i].size());
    }
    if (status == nullptr) status = api->ShapeInferContext_SetOutputTypeShape(context, i, info);
    api->ReleaseTensorTypeAndShapeInfo(info);
    if (status != nullptr) return status;
  }
  return nullptr;
}
)tpl";

constexpr const char* kOrtExports =
    R"tpl(/* Exports only RegisterCustomOps from lib{{sym}}_ort.so (everything else stays local). */
VERS_1.0.0 {
  global: RegisterCustomOps;
  local: *;
};
)tpl";

constexpr const char* kOrtReadme = R"tpl(# ONNX Runtime adapter: {{ort_domain}}::{{Op}}

Scaffolded by `porttool scaffold-op` from node `{{node}}` of `{{model}}`
(sha256 `{{sha256}}`).

`{{sym}}_ort.cc` is a custom-op library over `kernel/{{sym}}.c`, written against ONNX Runtime's C
API (`struct OrtCustomOp`, API version 17: ONNX Runtime 1.17 or newer). Its one exported symbol is
`RegisterCustomOps(OrtSessionOptions*, const OrtApiBase*)` (`exports.lds` hides the rest). It does
not link libonnxruntime: the runtime passes its API in.

## Build

    cmake -S . -B build -DONNXRUNTIME_ROOT=/path/to/onnxruntime-linux-x64-1.xx
    cmake --build build --target {{sym}}_ort          # build/lib{{sym}}_ort.so
    nm -D --defined-only build/lib{{sym}}_ort.so      # RegisterCustomOps, nothing else of ours

Build against the oldest ONNX Runtime you deploy. Without `ONNXRUNTIME_ROOT`, CMake compiles the
adapter against `stub/onnxruntime_c_api.h` (porttool's declarations-only stand-in, warnings as
errors) and builds no library: the stub has ONNX Runtime's names, not its layout.

## Model patch

{{ort_patch}}

## Load

Python:

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.register_custom_ops_library("build/lib{{sym}}_ort.so")
    sess = ort.InferenceSession("{{ort_model}}", so)

C: `api->RegisterCustomOpsLibrary_V2(session_options, ORT_TSTR("build/lib{{sym}}_ort.so"))` before
`CreateSession` (ONNX Runtime owns and closes the handle). C++:
`session_options.RegisterCustomOpsLibrary(ORT_TSTR("build/lib{{sym}}_ort.so"))`. A statically linked
build (mobile) calls `RegisterCustomOpsUsingFunction(session_options, "RegisterCustomOps")`.
onnxruntime-node (npm) and onnxruntime-web cannot load custom-op libraries.

## Errors and what they mean

- `Failed to get symbol RegisterCustomOps`: not this library, or a build without `exports.lds`.
- `Unsupported version '..' in custom op`: a runtime older than 1.17.
- `... is not a registered function/op`: the model was not patched (domain or opset_import).
)tpl";

constexpr const char* kOrtCMake = R"tpl(
# ---- ONNX Runtime adapter (ort/) ----
set(ONNXRUNTIME_ROOT "" CACHE PATH "ONNX Runtime SDK root (include/onnxruntime_c_api.h)")
if(ONNXRUNTIME_ROOT)
  find_path(PT_ORT_INCLUDE_DIR onnxruntime_c_api.h
    PATHS ${ONNXRUNTIME_ROOT}/include ${ONNXRUNTIME_ROOT}/include/onnxruntime
          ${ONNXRUNTIME_ROOT}/include/onnxruntime/core/session
    NO_DEFAULT_PATH)
  if(NOT PT_ORT_INCLUDE_DIR)
    message(FATAL_ERROR "ONNXRUNTIME_ROOT=${ONNXRUNTIME_ROOT} has no include/onnxruntime_c_api.h")
  endif()
  add_library({{sym}}_ort SHARED ort/{{sym}}_ort.cc)
  target_include_directories({{sym}}_ort PRIVATE ${PT_ORT_INCLUDE_DIR})
  target_link_libraries({{sym}}_ort PRIVATE {{sym}}_kernel)
  set_target_properties({{sym}}_ort PROPERTIES CXX_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ort/exports.lds)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" OR CMAKE_SYSTEM_NAME STREQUAL "Android")
    target_link_options({{sym}}_ort PRIVATE
      "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/ort/exports.lds")
  endif()
else()
  # No SDK: compile the adapter against porttool's stub of the C API (no library is built).
  add_library({{sym}}_ort_stub_check OBJECT ort/{{sym}}_ort.cc)
  target_include_directories({{sym}}_ort_stub_check PRIVATE ort/stub kernel)
  target_compile_definitions({{sym}}_ort_stub_check PRIVATE PT_ORT_STUB_COMPILE_ONLY)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options({{sym}}_ort_stub_check PRIVATE -Wall -Wextra -Werror)
  endif()
  message(STATUS "ONNXRUNTIME_ROOT not set: ort/{{sym}}_ort.cc is compile-checked against ort/stub")
endif()
)tpl";

AdapterFiles OrtAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  std::vector<std::string> in_types, optional, out_types;
  for (const auto& t : spec.inputs) {
    in_types.push_back(std::string("ONNX_TENSOR_ELEMENT_DATA_TYPE_") + Names(t.dtype).ort);
    optional.push_back(t.optional ? "true" : "false");
  }
  for (const auto& t : spec.outputs) {
    out_types.push_back(std::string("ONNX_TENSOR_ELEMENT_DATA_TYPE_") + Names(t.dtype).ort);
  }
  std::string ort_domain = OrtDomain(spec.domain);
  bool same = spec.shape_rule == "same_as_input";
  std::string static_dims;
  if (!same) {
    static_dims = "const std::vector<int64_t> kOutputDims[kNumOutputs] = {" +
                  Join(StaticDims(spec), ", ") + "};\n";
  }
  vars.push_back({"ort_domain", ort_domain});
  vars.push_back({"ort_model", ort_domain != spec.domain ? "patched.onnx" : spec.source_model});
  std::string patch;
  if (ort_domain != spec.domain) {
    patch = FillTemplate(
        "ONNX Runtime owns the domain `{{domain}}` (its built-in or contrib ops run there, never "
        "a\n"
        "library's), so the library registers `{{ort_domain}}::{{Op}}` and the model's node moves\n"
        "to that domain, with an `opset_import` for it:\n\n"
        "    import onnx\n"
        "    from onnx import helper\n"
        "    m = onnx.load(\"{{model}}\")\n"
        "    for n in m.graph.node:\n"
        "        if n.name == \"{{node}}\":  # every {{domain}}::{{Op}} node that should use the "
        "library\n"
        "            n.domain = \"{{ort_domain}}\"\n"
        "    if not any(o.domain == \"{{ort_domain}}\" for o in m.opset_import):\n"
        "        m.opset_import.append(helper.make_opsetid(\"{{ort_domain}}\", 1))\n"
        "    onnx.save(m, \"{{ort_model}}\")",
        vars);
  } else {
    patch = FillTemplate(
        "None: the node is already in the library's domain `{{domain}}`; the model must import it\n"
        "(`opset_import` `{{domain}}`, any version: the op accepts 1 and up).",
        vars);
  }
  vars.push_back({"ort_patch", patch});
  vars.push_back({"ort_input_types", Join(in_types, ", ")});
  vars.push_back({"ort_input_optional", Join(optional, ", ")});
  vars.push_back({"ort_output_types", Join(out_types, ", ")});
  vars.push_back({"ort_static_dims", static_dims});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"shape_input", std::to_string(spec.shape_input)});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back(
      {"ort_output_dims", same ? fmt::format("output_dims[i] = input_dims[{}];", spec.shape_input)
                               : "output_dims[i] = kOutputDims[i];"});
  vars.push_back({"ort_infer", FillTemplate(same ? kOrtInferSame : kOrtInferStatic, vars)});
  AdapterFiles out;
  out.files["ort/" + spec.symbol + "_ort.cc"] = FillTemplate(kOrtAdapter, vars);
  out.files["ort/exports.lds"] = FillTemplate(kOrtExports, vars);
  out.files["ort/stub/onnxruntime_c_api.h"] = FillTemplate(kOrtStub, vars);
  out.files["ort/README.md"] = FillTemplate(kOrtReadme, vars);
  out.cmake = FillTemplate(kOrtCMake, vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// RKNN
// ---------------------------------------------------------------------------------------------

constexpr const char* kRknnHeader =
    R"tpl(/* RKNN adapter for {{domain}}::{{Op}} (RKNN op type {{rknn_op}}), scaffolded by porttool
 * scaffold-op (source sha256 {{sha256}}). */
#ifndef {{SYM}}_RKNN_H_
#define {{SYM}}_RKNN_H_

#include "rknn_api.h"
#include "rknn_custom_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The op's descriptor: op_type "{{rknn_op}}", CPU target, init/compute/destroy callbacks. */
rknn_custom_op* {{sym}}_rknn_op(void);

/* Registers the op with a context; call right after rknn_init(), before rknn_run().
 * Returns rknn_register_custom_ops' status (RKNN_SUCC = 0). */
int {{sym}}_rknn_register(rknn_context ctx);

#ifdef __cplusplus
}
#endif

#endif /* {{SYM}}_RKNN_H_ */
)tpl";

constexpr const char* kRknnAdapter =
    R"tpl(/* RKNN runtime adapter for {{domain}}::{{Op}} (RKNN op type {{rknn_op}}), scaffolded by porttool
 * scaffold-op from node {{node}} of {{model}} (sha256 {{sha256}}).
 * librknnrt calls compute() with NCHW (UNDEFINED below 4-D) float32 tensors at
 * mem.virt_addr + mem.offset and preallocated outputs; this file turns them into pt_tensors and
 * calls kernel/{{sym}}.c. init() runs once at registration: it reads the attributes
 * (rknn_custom_op_get_op_attr) into the kernel's params and allocates the kernel's scratch;
 * destroy() (in rknn_destroy) frees both. Any other layout or dtype is refused (-1), never
 * silently reinterpreted. */
#include <stdlib.h>
#include <string.h>

#include "{{sym}}.h"
#include "{{sym}}_rknn.h"

#define {{SYM}}_RKNN_MAX_INPUTS {{max_inputs}}
#define {{SYM}}_RKNN_NUM_OUTPUTS {{num_outputs}}

typedef struct {{sym}}_rknn_attribute {
  const char* name;
  int32_t type; /* PT_ATTR_* */
} {{sym}}_rknn_attribute;

/* The node's attributes (op.json); the list ends with a NULL name. */
static const {{sym}}_rknn_attribute {{sym}}_rknn_attributes[] = {
{{attribute_table}}};
#define {{SYM}}_RKNN_ATTRIBUTE_SLOTS \
  (sizeof {{sym}}_rknn_attributes / sizeof {{sym}}_rknn_attributes[0])

typedef struct {{sym}}_rknn_state {
  {{sym}}_params params;
  void* scratch;
  void* storage[{{SYM}}_RKNN_ATTRIBUTE_SLOTS]; /* copies of array attributes */
} {{sym}}_rknn_state;

static void {{sym}}_rknn_free({{sym}}_rknn_state* s) {
  size_t i;
  if (s == NULL) return;
  for (i = 0; i < {{SYM}}_RKNN_ATTRIBUTE_SLOTS; ++i) free(s->storage[i]);
  free(s->scratch);
  free(s);
}

/* RKNN attributes are bool/int32/int64/float32 scalars or arrays (no strings: a string attribute
 * keeps the source node's value). An absent attribute keeps the source node's value too. */
static int32_t {{sym}}_rknn_attr(rknn_custom_op_context* op_ctx, {{sym}}_rknn_state* s,
                                 size_t index) {
  const {{sym}}_rknn_attribute* spec = &{{sym}}_rknn_attributes[index];
  rknn_custom_op_attr ra;
  pt_attribute a;
  uint32_t i;
  memset(&ra, 0, sizeof ra);
  memset(&a, 0, sizeof a);
  rknn_custom_op_get_op_attr(op_ctx, spec->name, &ra);
  if (ra.n_elems == 0 || ra.data == NULL) return PT_OK;
  a.name = spec->name;
  a.type = spec->type;
  if (spec->type == PT_ATTR_FLOAT && ra.dtype == RKNN_TENSOR_FLOAT32) {
    a.f = *(const float*)ra.data;
  } else if (spec->type == PT_ATTR_INT && ra.dtype == RKNN_TENSOR_INT64) {
    a.i = *(const int64_t*)ra.data;
  } else if (spec->type == PT_ATTR_INT && ra.dtype == RKNN_TENSOR_INT32) {
    a.i = *(const int32_t*)ra.data;
  } else if (spec->type == PT_ATTR_FLOATS && ra.dtype == RKNN_TENSOR_FLOAT32) {
    float* copy = (float*)malloc(ra.n_elems * sizeof(float));
    if (copy == NULL) return PT_BAD_ARGUMENT;
    memcpy(copy, ra.data, ra.n_elems * sizeof(float));
    s->storage[index] = copy;
    a.floats = copy;
    a.count = ra.n_elems;
  } else if (spec->type == PT_ATTR_INTS &&
             (ra.dtype == RKNN_TENSOR_INT64 || ra.dtype == RKNN_TENSOR_INT32)) {
    int64_t* copy = (int64_t*)malloc(ra.n_elems * sizeof(int64_t));
    if (copy == NULL) return PT_BAD_ARGUMENT;
    for (i = 0; i < ra.n_elems; ++i) {
      copy[i] = ra.dtype == RKNN_TENSOR_INT64 ? ((const int64_t*)ra.data)[i]
                                              : ((const int32_t*)ra.data)[i];
    }
    s->storage[index] = copy;
    a.ints = copy;
    a.count = ra.n_elems;
  } else {
    return PT_OK;
  }
  return {{sym}}_set_attribute(&s->params, &a);
}

/* rknn tensor -> pt_tensor: 0, or -1 for a layout or dtype the kernel does not take. */
static int {{sym}}_rknn_tensor(rknn_custom_op_tensor* t, int64_t* dims, pt_tensor* out) {
  uint32_t i;
  if (t->attr.fmt != RKNN_TENSOR_NCHW && t->attr.fmt != RKNN_TENSOR_UNDEFINED) return -1;
  switch (t->attr.type) {
    case RKNN_TENSOR_FLOAT32: out->dtype = 1; break;
    case RKNN_TENSOR_INT32: out->dtype = 6; break;
    case RKNN_TENSOR_INT64: out->dtype = 7; break;
    default: return -1;
  }
  if (t->attr.n_dims > RKNN_MAX_DIMS) return -1;
  for (i = 0; i < t->attr.n_dims; ++i) dims[i] = (int64_t)t->attr.dims[i];
  out->rank = (int32_t)t->attr.n_dims;
  out->dims = dims;
  out->data = (char*)t->mem.virt_addr + t->mem.offset;
  return 0;
}

static int {{sym}}_rknn_tensors(rknn_custom_op_tensor* tensors, uint32_t n, uint32_t max,
                                int64_t (*dims)[RKNN_MAX_DIMS], pt_tensor* out) {
  uint32_t i;
  if (n > max) return -1;
  memset(out, 0, max * sizeof *out);
  for (i = 0; i < n; ++i) {
    if ({{sym}}_rknn_tensor(&tensors[i], dims[i], &out[i]) != 0) return -1;
  }
  return 0;
}

static int {{sym}}_rknn_init(rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* inputs,
                             uint32_t n_inputs, rknn_custom_op_tensor* outputs,
                             uint32_t n_outputs) {
  pt_tensor in[{{SYM}}_RKNN_MAX_INPUTS];
  int64_t dims[{{SYM}}_RKNN_MAX_INPUTS][RKNN_MAX_DIMS];
  size_t i, bytes;
  {{sym}}_rknn_state* s = ({{sym}}_rknn_state*)calloc(1, sizeof *s);
  (void)outputs;
  (void)n_outputs;
  if (s == NULL) return -1;
  s->params = {{sym}}_default_params();
  for (i = 0; {{sym}}_rknn_attributes[i].name != NULL; ++i) {
    if ({{sym}}_rknn_attr(op_ctx, s, i) != PT_OK) {
      {{sym}}_rknn_free(s);
      return -1;
    }
  }
  if ({{sym}}_rknn_tensors(inputs, n_inputs, {{SYM}}_RKNN_MAX_INPUTS, dims, in) != 0) {
    {{sym}}_rknn_free(s);
    return -1;
  }
  bytes = {{sym}}_scratch_size(&s->params, in, (int32_t)n_inputs);
  if (bytes > 0 && (s->scratch = malloc(bytes)) == NULL) {
    {{sym}}_rknn_free(s);
    return -1;
  }
  op_ctx->priv_data = s;
  return 0;
}

static int {{sym}}_rknn_compute(rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* inputs,
                                uint32_t n_inputs, rknn_custom_op_tensor* outputs,
                                uint32_t n_outputs) {
  const {{sym}}_rknn_state* s = (const {{sym}}_rknn_state*)op_ctx->priv_data;
  pt_tensor in[{{SYM}}_RKNN_MAX_INPUTS], out[{{SYM}}_RKNN_NUM_OUTPUTS];
  int64_t in_dims[{{SYM}}_RKNN_MAX_INPUTS][RKNN_MAX_DIMS];
  int64_t out_dims[{{SYM}}_RKNN_NUM_OUTPUTS][RKNN_MAX_DIMS];
  if (s == NULL || n_outputs != {{SYM}}_RKNN_NUM_OUTPUTS) return -1;
  if ({{sym}}_rknn_tensors(inputs, n_inputs, {{SYM}}_RKNN_MAX_INPUTS, in_dims, in) != 0 ||
      {{sym}}_rknn_tensors(outputs, n_outputs, {{SYM}}_RKNN_NUM_OUTPUTS, out_dims, out) != 0) {
    return -1;
  }
  return {{sym}}_compute(&s->params, in, (int32_t)n_inputs, out, (int32_t)n_outputs,
                         s->scratch) == PT_OK
             ? 0
             : -1;
}

static int {{sym}}_rknn_destroy(rknn_custom_op_context* op_ctx) {
  {{sym}}_rknn_free(({{sym}}_rknn_state*)op_ctx->priv_data);
  op_ctx->priv_data = NULL;
  return 0;
}

rknn_custom_op* {{sym}}_rknn_op(void) {
  static rknn_custom_op op;
  static int ready = 0;
  if (!ready) {
    memset(&op, 0, sizeof op);
    op.version = 1;
    op.target = RKNN_TARGET_TYPE_CPU;
    strncpy(op.op_type, "{{rknn_op}}", sizeof op.op_type - 1);
    op.init = {{sym}}_rknn_init;
    op.compute = {{sym}}_rknn_compute;
    op.compute_native = NULL; /* reserved */
    op.destroy = {{sym}}_rknn_destroy;
    ready = 1;
  }
  return &op;
}

int {{sym}}_rknn_register(rknn_context ctx) {
  return rknn_register_custom_ops(ctx, {{sym}}_rknn_op(), 1);
}
)tpl";

constexpr const char* kRknnPlugin =
    R"tpl(/* rknn_server plugin for {{rknn_op}} ({{domain}}::{{Op}}): build as librkcst_{{sym}}.so and install
 * to /usr/lib/rknpu/op_plugins/ (Linux) or /vendor/lib64/ (Android arm64). One op per library.
 * Scaffolded by porttool scaffold-op (source sha256 {{sha256}}). */
#include "{{sym}}_rknn.h"

#ifndef RKNN_CUSTOM_OP_EXPORT
#define RKNN_CUSTOM_OP_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

RKNN_CUSTOM_OP_EXPORT rknn_custom_op* get_rknn_custom_op(void) { return {{sym}}_rknn_op(); }

#ifdef __cplusplus
}
#endif
)tpl";

constexpr const char* kRknnToolkit =
    R"tpl("""RKNN-Toolkit2 conversion-time class for {{rknn_op}} ({{domain}}::{{Op}}), scaffolded by porttool
scaffold-op from node {{node}} of {{model}} (sha256 {{sha256}}).

shape_infer follows op.json's shape rule ({{shape_rule}}); compute is a numpy transcription of
kernel/{{sym}}.c, so conversion, simulation and the board agree. Register it between
rknn.config() and rknn.load_onnx():

    from {{rknn_op}}_toolkit import {{rknn_op}}
    rknn.reg_custom_op({{rknn_op}}())
"""
import math
import types

import numpy as np
from rknn.api.custom_op import get_node_attr

# Attribute name -> value of the source node (used when the node does not carry it).
_DEFAULTS = {
{{py_defaults}}}


def _c(v):
    return np.float32(v)


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


def _div(a, b):
    return a / b


def _max(a, b):
    return np.maximum(a, b)


def _min(a, b):
    return np.minimum(a, b)


def _neg(a):
    return -a


def _abs(a):
    return np.abs(a)


def _exp(a):
    return np.exp(a)


def _tanh(a):
    return np.tanh(a)


_erf = np.vectorize(math.erf, otypes=[np.float32])


def _gtsel(a, t):
    return np.where(a > t, a, np.float32(0))


class {{rknn_op}}:
    op_type = '{{rknn_op}}'

    def _params(self, node):
        p = {}
        for name, default in _DEFAULTS.items():
            try:
                value = get_node_attr(node, name)
            except Exception:  # absent attribute
                value = None
            p[name] = default if value is None else value
        return types.SimpleNamespace(**p)

    def shape_infer(self, node, in_shapes, in_dtypes):
{{py_shape_infer}}
    def compute(self, node, inputs):
{{py_compute}}
)tpl";

constexpr const char* kRknnReadme = R"tpl(# RKNN adapter: {{rknn_op}} ({{domain}}::{{Op}})

Scaffolded by `porttool scaffold-op` from node `{{node}}` of `{{model}}`
(sha256 `{{sha256}}`).

- `{{sym}}_rknn.c` / `{{sym}}_rknn.h`: the runtime's CPU custom op (`rknn_custom_op` with
  `init`/`compute`/`destroy`) over `kernel/{{sym}}.c`. librknnrt hands `compute` NCHW float32
  (UNDEFINED layout below 4-D) at `mem.virt_addr + mem.offset`, outputs preallocated; other
  layouts or dtypes make it return -1.
- `librkcst_{{sym}}.c`: `get_rknn_custom_op()` for the rknn_server plugin directory.
- `{{rknn_op}}_toolkit.py`: the RKNN-Toolkit2 class (`op_type`, `shape_infer`, `compute` in numpy).

## Model patch

RKNN-Toolkit2 takes custom ops only from ONNX models, and their `op_type` must not be a standard
ONNX op: the node becomes `{{rknn_op}}` (the "cst" prefix is Rockchip's convention). Write static
shapes into `value_info` (porttool infer-shapes) so the toolkit's ONNX shape inference does not
disagree with `shape_infer`:

    porttool infer-shapes {{model}} --custom-op . --input-shape NAME:DIMS -o pinned.onnx
    python3 - <<'PY'
    import onnx
    m = onnx.load("pinned.onnx")
    for n in m.graph.node:
        if n.name == "{{node}}":
            n.op_type = "{{rknn_op}}"
    onnx.save(m, "patched.onnx")
    PY

## Convert (host, RKNN-Toolkit2)

    from rknn.api import RKNN
    from {{rknn_op}}_toolkit import {{rknn_op}}
    rknn = RKNN()
    rknn.config(target_platform="rk3588")
    rknn.reg_custom_op({{rknn_op}}())        # after config(), before load_onnx()
    rknn.load_onnx("patched.onnx")
    rknn.build(do_quantization=False)
    rknn.export_rknn("model.rknn")

## Build and load (board)

    cmake -S . -B build -DRKNN_SDK_ROOT=/path/to/rknpu2/runtime/Linux/librknn_api \
        -DCMAKE_TOOLCHAIN_FILE=<aarch64 toolchain>      # the NEON kernel path is then on

C: after `rknn_init(&ctx, ...)` call `{{sym}}_rknn_register(ctx)` (link `{{sym}}_rknn`), then
`rknn_run` as usual. Without it librknnrt reports "Unsupport CPU op: {{rknn_op}} ... please try to
register custom op by calling rknn_register_custom_ops". For rknn_server (connected-board
accuracy analysis) copy `build/librkcst_{{sym}}.so` to `/usr/lib/rknpu/op_plugins/` (Android:
`/vendor/lib64/`); rknn_server loads one op per plugin library.
)tpl";

constexpr const char* kRknnCMake = R"tpl(
# ---- RKNN adapter (rknn/) ----
set(RKNN_SDK_ROOT "" CACHE PATH "RKNN runtime SDK root (rknn_api.h, rknn_custom_op.h, librknnrt.so)")
if(RKNN_SDK_ROOT)
  find_path(PT_RKNN_INCLUDE_DIR rknn_custom_op.h
    PATHS ${RKNN_SDK_ROOT}/include ${RKNN_SDK_ROOT}/runtime/Linux/librknn_api/include
    NO_DEFAULT_PATH)
  find_library(PT_RKNN_LIBRARY rknnrt
    PATHS ${RKNN_SDK_ROOT}/lib ${RKNN_SDK_ROOT}/aarch64 ${RKNN_SDK_ROOT}/armhf
          ${RKNN_SDK_ROOT}/runtime/Linux/librknn_api/aarch64
    NO_DEFAULT_PATH)
  if(NOT PT_RKNN_INCLUDE_DIR OR NOT PT_RKNN_LIBRARY)
    message(FATAL_ERROR "RKNN_SDK_ROOT=${RKNN_SDK_ROOT}: rknn_custom_op.h or librknnrt.so not found")
  endif()
  add_library({{sym}}_rknn STATIC rknn/{{sym}}_rknn.c)
  target_include_directories({{sym}}_rknn PUBLIC rknn ${PT_RKNN_INCLUDE_DIR})
  target_link_libraries({{sym}}_rknn PUBLIC {{sym}}_kernel ${PT_RKNN_LIBRARY})
  add_library(rkcst_{{sym}} SHARED rknn/librkcst_{{sym}}.c)  # librkcst_{{sym}}.so
  target_link_libraries(rkcst_{{sym}} PRIVATE {{sym}}_rknn)
else()
  message(STATUS "RKNN_SDK_ROOT not set: rknn/ not built")
endif()
)tpl";

// The numpy transcription of a known kernel's formula: @f( -> _f(, C float literals lose their
// suffix, p->name -> p.name.
std::string PyFormula(const std::string& formula) {
  std::string f = util::ReplaceAll(formula, "@", "_");
  f = std::regex_replace(f, std::regex("([0-9]+\\.[0-9]*(?:[eE][-+]?[0-9]+)?)f"), "$1");
  return util::ReplaceAll(f, "p->", "p.");
}

AdapterFiles RknnAdapter(const CustomOpSpec& spec, ScaffoldVars vars, const std::string& formula,
                         bool bias) {
  std::string op = spec.op_type.rfind("cst", 0) == 0 ? spec.op_type : "cst" + spec.op_type;
  std::string defaults;
  for (const auto& a : spec.attributes) {
    if (a.type == onnx::AttributeProto::STRING) continue;  // RKNN carries no string attributes
    defaults += fmt::format("    {}: {},\n", CStringLiteral(a.name), a.default_value.dump());
  }
  std::string infer;
  if (spec.shape_rule == "same_as_input") {
    std::vector<std::string> shapes(spec.outputs.size(),
                                    fmt::format("in_shapes[{}]", spec.shape_input));
    std::vector<std::string> types(spec.outputs.size(),
                                   fmt::format("in_dtypes[{}]", spec.shape_input));
    infer = fmt::format("        return [{}], [{}]\n", Join(shapes, ", "), Join(types, ", "));
  } else {
    std::vector<std::string> shapes, types;
    for (const auto& d : StaticDims(spec)) shapes.push_back("[" + d.substr(1, d.size() - 2) + "]");
    for (const auto& o : spec.outputs) types.push_back(std::string("np.") + Names(o.dtype).numpy);
    infer = fmt::format("        return [{}], [{}]\n", Join(shapes, ", "), Join(types, ", "));
  }
  std::string compute;
  if (formula.empty()) {
    compute = FillTemplate(
        "        raise NotImplementedError(\"{{domain}}::{{Op}}: write compute() (as in "
        "kernel/{{sym}}.c)\")\n",
        vars);
  } else {
    compute =
        "        p = self._params(node)\n        x = np.asarray(inputs[0], dtype=np.float32)\n";
    if (bias) {
      compute +=
          "        if len(inputs) > 1 and inputs[1] is not None:\n"
          "            x = x + np.asarray(inputs[1], dtype=np.float32)\n";
    }
    compute += "        return [np.asarray(" + PyFormula(formula) + ", dtype=np.float32)]\n";
  }
  vars.push_back({"rknn_op", op});
  vars.push_back({"attribute_table", AttributeTable(spec, "NULL")});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back({"py_defaults", defaults});
  vars.push_back({"py_shape_infer", infer});
  vars.push_back({"py_compute", compute});
  AdapterFiles out;
  out.files["rknn/" + spec.symbol + "_rknn.h"] = FillTemplate(kRknnHeader, vars);
  out.files["rknn/" + spec.symbol + "_rknn.c"] = FillTemplate(kRknnAdapter, vars);
  out.files["rknn/librkcst_" + spec.symbol + ".c"] = FillTemplate(kRknnPlugin, vars);
  out.files["rknn/" + op + "_toolkit.py"] = FillTemplate(kRknnToolkit, vars);
  out.files["rknn/README.md"] = FillTemplate(kRknnReadme, vars);
  out.cmake = FillTemplate(kRknnCMake, vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// TensorRT
// ---------------------------------------------------------------------------------------------

constexpr const char* kTrtHeader =
    R"tpl(// TensorRT plugin for {{domain}}::{{Op}}, scaffolded by porttool scaffold-op from node {{node}} of
// {{model}} (sha256 {{sha256}}). IPluginV3 (TensorRT 10+). The ONNX parser finds a plugin by
// (name = node op_type, version = node attribute plugin_version or "1", namespace = node attribute
// plugin_namespace or ""): here "{{Op}}", "{{trt_version}}", "{{trt_namespace}}".
#pragma once

#include <NvInferRuntime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "{{sym}}.h"

namespace {{sym}}_trt {

constexpr char kPluginName[] = "{{Op}}";
constexpr char kPluginVersion[] = "{{trt_version}}";
constexpr char kPluginNamespace[] = "{{trt_namespace}}";

// One attribute value as the plugin keeps (and serializes) it.
struct AttributeValue {
  int32_t type = 0;  // PT_ATTR_*
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

class {{Sym}}Plugin : public nvinfer1::IPluginV3,
                      public nvinfer1::IPluginV3OneCore,
                      public nvinfer1::IPluginV3OneBuild,
                      public nvinfer1::IPluginV3OneRuntime {
 public:
  // `attributes`: the node's attributes by name (absent ones keep the source node's values).
  explicit {{Sym}}Plugin(std::map<std::string, AttributeValue> attributes);
  {{Sym}}Plugin(const {{Sym}}Plugin& other);
  {{Sym}}Plugin& operator=(const {{Sym}}Plugin&) = delete;
  ~{{Sym}}Plugin() override = default;

  // False when an attribute is rejected by the kernel (createPlugin then returns nullptr).
  bool valid() const { return valid_; }

  // IPluginV3
  nvinfer1::IPluginCapability* getCapabilityInterface(
      nvinfer1::PluginCapabilityType type) noexcept override;
  nvinfer1::IPluginV3* clone() noexcept override;

  // IPluginV3OneCore
  char const* getPluginName() const noexcept override { return kPluginName; }
  char const* getPluginVersion() const noexcept override { return kPluginVersion; }
  char const* getPluginNamespace() const noexcept override { return kPluginNamespace; }

  // IPluginV3OneBuild
  int32_t configurePlugin(nvinfer1::DynamicPluginTensorDesc const* in, int32_t nbInputs,
                          nvinfer1::DynamicPluginTensorDesc const* out,
                          int32_t nbOutputs) noexcept override;
  int32_t getOutputDataTypes(nvinfer1::DataType* outputTypes, int32_t nbOutputs,
                             nvinfer1::DataType const* inputTypes,
                             int32_t nbInputs) const noexcept override;
  int32_t getOutputShapes(nvinfer1::DimsExprs const* inputs, int32_t nbInputs,
                          nvinfer1::DimsExprs const* shapeInputs, int32_t nbShapeInputs,
                          nvinfer1::DimsExprs* outputs, int32_t nbOutputs,
                          nvinfer1::IExprBuilder& exprBuilder) noexcept override;
  bool supportsFormatCombination(int32_t pos, nvinfer1::DynamicPluginTensorDesc const* inOut,
                                 int32_t nbInputs, int32_t nbOutputs) noexcept override;
  int32_t getNbOutputs() const noexcept override { return {{num_outputs}}; }
  size_t getWorkspaceSize(nvinfer1::DynamicPluginTensorDesc const* inputs, int32_t nbInputs,
                          nvinfer1::DynamicPluginTensorDesc const* outputs,
                          int32_t nbOutputs) const noexcept override;

  // IPluginV3OneRuntime
  int32_t setTactic(int32_t tactic) noexcept override;
  int32_t onShapeChange(nvinfer1::PluginTensorDesc const* in, int32_t nbInputs,
                        nvinfer1::PluginTensorDesc const* out, int32_t nbOutputs) noexcept override;
  int32_t enqueue(nvinfer1::PluginTensorDesc const* inputDesc,
                  nvinfer1::PluginTensorDesc const* outputDesc, void const* const* inputs,
                  void* const* outputs, void* workspace, cudaStream_t stream) noexcept override;
  nvinfer1::IPluginV3* attachToContext(nvinfer1::IPluginResourceContext* context) noexcept override;
  nvinfer1::PluginFieldCollection const* getFieldsToSerialize() noexcept override;

 private:
  void BuildParams();

  std::map<std::string, AttributeValue> attributes_;
  {{sym}}_params params_;
  bool valid_ = true;
  std::vector<nvinfer1::PluginField> fields_;
  nvinfer1::PluginFieldCollection field_collection_{};
  std::vector<std::vector<unsigned char>> host_inputs_, host_outputs_;
  std::vector<unsigned char> host_scratch_;
};

class {{Sym}}PluginCreator : public nvinfer1::IPluginCreatorV3One {
 public:
  {{Sym}}PluginCreator();
  char const* getPluginName() const noexcept override { return kPluginName; }
  char const* getPluginVersion() const noexcept override { return kPluginVersion; }
  char const* getPluginNamespace() const noexcept override { return kPluginNamespace; }
  nvinfer1::PluginFieldCollection const* getFieldNames() noexcept override;
  nvinfer1::IPluginV3* createPlugin(char const* name, nvinfer1::PluginFieldCollection const* fc,
                                    nvinfer1::TensorRTPhase phase) noexcept override;

 private:
  std::vector<nvinfer1::PluginField> fields_;
  nvinfer1::PluginFieldCollection field_collection_{};
};

// For applications that link the plugin in: registers the creator with the global registry.
bool Register{{Sym}}PluginCreator();

}  // namespace {{sym}}_trt
)tpl";

constexpr const char* kTrtSource =
    R"tpl(// TensorRT plugin for {{domain}}::{{Op}}: a thin layer over kernel/{{sym}}.c, scaffolded by porttool
// scaffold-op (source sha256 {{sha256}}). The kernel runs on the host: enqueue copies the inputs
// from the device, computes, and copies the outputs back (correct first; for speed, replace the
// body of enqueue with a CUDA kernel that mirrors kernel/{{sym}}.c and keep the rest).
#include "{{Sym}}Plugin.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <exception>

namespace {{sym}}_trt {

using namespace nvinfer1;

namespace {

struct AttributeSpec {
  const char* name;
  int32_t type;  // PT_ATTR_*
};
// The node's attributes (op.json); the list ends with a null name.
const AttributeSpec kAttributes[] = {
{{attribute_table}}};

constexpr int32_t kNumInputs = {{max_inputs}};
constexpr int32_t kNumOutputs = {{num_outputs}};
const DataType kInputTypes[kNumInputs] = {{{trt_input_types}}};
const int32_t kInputOnnxTypes[kNumInputs] = {{{onnx_input_types}}};
const DataType kOutputTypes[kNumOutputs] = {{{trt_output_types}}};
const int32_t kOutputOnnxTypes[kNumOutputs] = {{{onnx_output_types}}};
{{trt_static_dims}}
size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kINT64: return 8;
    case DataType::kFLOAT:
    case DataType::kINT32: return 4;
    case DataType::kHALF:
    case DataType::kBF16: return 2;
    default: return 1;
  }
}

int64_t Volume(Dims const& d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d.nbDims; ++i) n *= d.d[i];
  return n;
}

// A plugin field as numbers (TensorRT passes ONNX INT attributes as kINT32 or kINT64).
bool Numbers(PluginField const& f, std::vector<double>* out) {
  out->clear();
  for (int32_t i = 0; i < f.length; ++i) {
    switch (f.type) {
      case PluginFieldType::kFLOAT32: out->push_back(static_cast<float const*>(f.data)[i]); break;
      case PluginFieldType::kFLOAT64: out->push_back(static_cast<double const*>(f.data)[i]); break;
      case PluginFieldType::kINT8: out->push_back(static_cast<int8_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT16: out->push_back(static_cast<int16_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT32: out->push_back(static_cast<int32_t const*>(f.data)[i]); break;
      case PluginFieldType::kINT64:
        out->push_back(static_cast<double>(static_cast<int64_t const*>(f.data)[i]));
        break;
      default: return false;
    }
  }
  return true;
}

}  // namespace

{{Sym}}Plugin::{{Sym}}Plugin(std::map<std::string, AttributeValue> attributes)
    : attributes_(std::move(attributes)) {
  BuildParams();
}

{{Sym}}Plugin::{{Sym}}Plugin(const {{Sym}}Plugin& other)
    : nvinfer1::IPluginV3(),
      nvinfer1::IPluginV3OneCore(),
      nvinfer1::IPluginV3OneBuild(),
      nvinfer1::IPluginV3OneRuntime(),
      attributes_(other.attributes_) {
  BuildParams();  // params_ point into attributes_: rebuilt for the copy
}

void {{Sym}}Plugin::BuildParams() {
  params_ = {{sym}}_default_params();
  fields_.clear();
  for (auto& [name, v] : attributes_) {
    pt_attribute a;
    std::memset(&a, 0, sizeof a);
    a.name = name.c_str();
    a.type = v.type;
    a.f = v.f;
    a.i = v.i;
    a.s = v.s.c_str();
    a.count = v.type == PT_ATTR_FLOATS ? static_cast<int64_t>(v.floats.size())
                                       : static_cast<int64_t>(v.ints.size());
    a.floats = v.floats.data();
    a.ints = v.ints.data();
    if ({{sym}}_set_attribute(&params_, &a) != PT_OK) valid_ = false;
    switch (v.type) {
      case PT_ATTR_FLOAT: fields_.emplace_back(name.c_str(), &v.f, PluginFieldType::kFLOAT32, 1); break;
      case PT_ATTR_INT: fields_.emplace_back(name.c_str(), &v.i, PluginFieldType::kINT64, 1); break;
      case PT_ATTR_STRING:
        fields_.emplace_back(name.c_str(), v.s.c_str(), PluginFieldType::kCHAR,
                             static_cast<int32_t>(v.s.size()));
        break;
      case PT_ATTR_FLOATS:
        fields_.emplace_back(name.c_str(), v.floats.data(), PluginFieldType::kFLOAT32,
                             static_cast<int32_t>(v.floats.size()));
        break;
      default:
        fields_.emplace_back(name.c_str(), v.ints.data(), PluginFieldType::kINT64,
                             static_cast<int32_t>(v.ints.size()));
    }
  }
  field_collection_.nbFields = static_cast<int32_t>(fields_.size());
  field_collection_.fields = fields_.data();
}

IPluginCapability* {{Sym}}Plugin::getCapabilityInterface(PluginCapabilityType type) noexcept {
  switch (type) {
    case PluginCapabilityType::kBUILD: return static_cast<IPluginV3OneBuild*>(this);
    case PluginCapabilityType::kRUNTIME: return static_cast<IPluginV3OneRuntime*>(this);
    case PluginCapabilityType::kCORE: return static_cast<IPluginV3OneCore*>(this);
  }
  return nullptr;
}

IPluginV3* {{Sym}}Plugin::clone() noexcept {
  try {
    return new {{Sym}}Plugin(*this);
  } catch (const std::exception&) {
    return nullptr;
  }
}

int32_t {{Sym}}Plugin::configurePlugin(DynamicPluginTensorDesc const*, int32_t,
                                       DynamicPluginTensorDesc const*, int32_t) noexcept {
  return 0;
}

int32_t {{Sym}}Plugin::getOutputDataTypes(DataType* outputTypes, int32_t nbOutputs,
                                          DataType const* inputTypes,
                                          int32_t nbInputs) const noexcept {
  (void)inputTypes;
  (void)nbInputs;
  for (int32_t i = 0; i < nbOutputs && i < kNumOutputs; ++i) outputTypes[i] = kOutputTypes[i];
  return 0;
}

int32_t {{Sym}}Plugin::getOutputShapes(DimsExprs const* inputs, int32_t nbInputs,
                                       DimsExprs const*, int32_t, DimsExprs* outputs,
                                       int32_t nbOutputs, IExprBuilder& exprBuilder) noexcept {
{{trt_shapes}}}

// Linear (row-major) layout, the op's declared dtypes: what the kernel takes.
bool {{Sym}}Plugin::supportsFormatCombination(int32_t pos, DynamicPluginTensorDesc const* inOut,
                                              int32_t nbInputs, int32_t) noexcept {
  DataType want = pos < nbInputs ? kInputTypes[pos] : kOutputTypes[pos - nbInputs];
  return inOut[pos].desc.format == TensorFormat::kLINEAR && inOut[pos].desc.type == want;
}

size_t {{Sym}}Plugin::getWorkspaceSize(DynamicPluginTensorDesc const*, int32_t,
                                       DynamicPluginTensorDesc const*, int32_t) const noexcept {
  return 0;  // the host-side scratch lives in the plugin (onShapeChange)
}

int32_t {{Sym}}Plugin::setTactic(int32_t) noexcept { return 0; }

int32_t {{Sym}}Plugin::onShapeChange(PluginTensorDesc const* in, int32_t nbInputs,
                                     PluginTensorDesc const* out, int32_t nbOutputs) noexcept {
  try {
    host_inputs_.resize(nbInputs);
    host_outputs_.resize(nbOutputs);
    for (int32_t i = 0; i < nbInputs; ++i) {
      host_inputs_[i].resize(static_cast<size_t>(Volume(in[i].dims)) * ElementSize(in[i].type));
    }
    for (int32_t i = 0; i < nbOutputs; ++i) {
      host_outputs_[i].resize(static_cast<size_t>(Volume(out[i].dims)) *
                              ElementSize(out[i].type));
    }
    return 0;
  } catch (const std::exception&) {
    return -1;
  }
}

int32_t {{Sym}}Plugin::enqueue(PluginTensorDesc const* inputDesc,
                               PluginTensorDesc const* outputDesc, void const* const* inputs,
                               void* const* outputs, void*, cudaStream_t stream) noexcept {
  try {
    const int32_t n_in = static_cast<int32_t>(host_inputs_.size());
    const int32_t n_out = static_cast<int32_t>(host_outputs_.size());
    if (n_in > kNumInputs || n_out != kNumOutputs) return -1;
    pt_tensor in[kNumInputs], out[kNumOutputs];
    std::vector<int64_t> in_dims[kNumInputs], out_dims[kNumOutputs];
    std::memset(in, 0, sizeof in);
    std::memset(out, 0, sizeof out);
    for (int32_t i = 0; i < n_in; ++i) {
      auto& host = host_inputs_[i];
      if (cudaMemcpyAsync(host.data(), inputs[i], host.size(), cudaMemcpyDeviceToHost, stream) !=
          cudaSuccess) {
        return -1;
      }
      in_dims[i].assign(inputDesc[i].dims.d, inputDesc[i].dims.d + inputDesc[i].dims.nbDims);
      in[i] = {kInputOnnxTypes[i], inputDesc[i].dims.nbDims, in_dims[i].data(), host.data()};
    }
    for (int32_t i = 0; i < n_out; ++i) {
      out_dims[i].assign(outputDesc[i].dims.d, outputDesc[i].dims.d + outputDesc[i].dims.nbDims);
      out[i] = {kOutputOnnxTypes[i], outputDesc[i].dims.nbDims, out_dims[i].data(),
                host_outputs_[i].data()};
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess) return -1;
    host_scratch_.resize({{sym}}_scratch_size(&params_, in, n_in));
    if ({{sym}}_compute(&params_, in, n_in, out, n_out,
                        host_scratch_.empty() ? nullptr : host_scratch_.data()) != PT_OK) {
      return -1;
    }
    for (int32_t i = 0; i < n_out; ++i) {
      if (cudaMemcpyAsync(outputs[i], host_outputs_[i].data(), host_outputs_[i].size(),
                          cudaMemcpyHostToDevice, stream) != cudaSuccess) {
        return -1;
      }
    }
    // The host buffers are reused by the next enqueue: wait for the copies.
    return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

IPluginV3* {{Sym}}Plugin::attachToContext(IPluginResourceContext*) noexcept { return clone(); }

PluginFieldCollection const* {{Sym}}Plugin::getFieldsToSerialize() noexcept {
  return &field_collection_;
}

{{Sym}}PluginCreator::{{Sym}}PluginCreator() {
  for (size_t i = 0; kAttributes[i].name != nullptr; ++i) {
    PluginFieldType type = PluginFieldType::kINT32;
    switch (kAttributes[i].type) {
      case PT_ATTR_FLOAT:
      case PT_ATTR_FLOATS: type = PluginFieldType::kFLOAT32; break;
      case PT_ATTR_STRING: type = PluginFieldType::kCHAR; break;
      default: break;
    }
    fields_.emplace_back(kAttributes[i].name, nullptr, type, 0);
  }
  field_collection_.nbFields = static_cast<int32_t>(fields_.size());
  field_collection_.fields = fields_.data();
}

PluginFieldCollection const* {{Sym}}PluginCreator::getFieldNames() noexcept {
  return &field_collection_;
}

// Plugin fields named like the node's attributes (the ONNX parser passes them so); fields this op
// does not declare (plugin_version, plugin_namespace, ...) are ignored.
IPluginV3* {{Sym}}PluginCreator::createPlugin(char const*, PluginFieldCollection const* fc,
                                              TensorRTPhase) noexcept {
  try {
    std::map<std::string, AttributeValue> attributes;
    std::vector<double> numbers;
    for (int32_t i = 0; fc != nullptr && i < fc->nbFields; ++i) {
      PluginField const& f = fc->fields[i];
      const AttributeSpec* spec = nullptr;
      for (size_t k = 0; kAttributes[k].name != nullptr; ++k) {
        if (std::strcmp(kAttributes[k].name, f.name) == 0) spec = &kAttributes[k];
      }
      if (spec == nullptr || f.data == nullptr) continue;
      AttributeValue v;
      v.type = spec->type;
      if (spec->type == PT_ATTR_STRING) {
        if (f.type != PluginFieldType::kCHAR) return nullptr;
        v.s.assign(static_cast<char const*>(f.data), static_cast<size_t>(f.length));
        v.s = v.s.c_str();  // drop a terminating NUL counted in length
      } else {
        if (!Numbers(f, &numbers) || numbers.empty()) return nullptr;
        if (spec->type == PT_ATTR_FLOAT) v.f = static_cast<float>(numbers[0]);
        if (spec->type == PT_ATTR_INT) v.i = static_cast<int64_t>(numbers[0]);
        for (double n : numbers) {
          if (spec->type == PT_ATTR_FLOATS) v.floats.push_back(static_cast<float>(n));
          if (spec->type == PT_ATTR_INTS) v.ints.push_back(static_cast<int64_t>(n));
        }
      }
      attributes[spec->name] = std::move(v);
    }
    auto* plugin = new {{Sym}}Plugin(std::move(attributes));
    if (!plugin->valid()) {
      delete plugin;
      return nullptr;
    }
    return plugin;
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool Register{{Sym}}PluginCreator() {
  static {{Sym}}PluginCreator creator;
  return getPluginRegistry()->registerCreator(creator, kPluginNamespace);
}

}  // namespace {{sym}}_trt

// The plugin-library interface IPluginRegistry::loadLibrary (and trtexec --dynamicPlugins) uses.
extern "C" {
__attribute__((visibility("default"))) void setLoggerFinder(nvinfer1::ILoggerFinder*) {}
__attribute__((visibility("default"))) nvinfer1::IPluginCreatorInterface* const* getCreators(
    int32_t& nbCreators) {
  static {{sym}}_trt::{{Sym}}PluginCreator creator;
  static nvinfer1::IPluginCreatorInterface* const creators[] = {&creator};
  nbCreators = 1;
  return creators;
}
}
)tpl";

constexpr const char* kTrtShapesSame = R"tpl(  if (nbInputs <= {{shape_input}}) return -1;
  (void)exprBuilder;
  for (int32_t i = 0; i < nbOutputs; ++i) outputs[i] = inputs[{{shape_input}}];
  return 0;
)tpl";

constexpr const char* kTrtShapesStatic = R"tpl(  (void)inputs;
  (void)nbInputs;
  for (int32_t i = 0; i < nbOutputs && i < kNumOutputs; ++i) {
    outputs[i].nbDims = static_cast<int32_t>(kOutputDims[i].size());
    for (int32_t d = 0; d < outputs[i].nbDims; ++d) {
      outputs[i].d[d] = exprBuilder.constant(kOutputDims[i][d]);
    }
  }
  return 0;
)tpl";

constexpr const char* kTrtReadme =
    R"tpl(# TensorRT adapter: plugin {{Op}} (version "{{trt_version}}", namespace "{{trt_namespace}}")

Scaffolded by `porttool scaffold-op` from node `{{node}}` of `{{model}}`
(sha256 `{{sha256}}`).

`{{Sym}}Plugin.{h,cpp}`: an `IPluginV3` (TensorRT 10+) with its `IPluginCreatorV3One`, over
`kernel/{{sym}}.c`. The ONNX parser looks a plugin up by (node `op_type`, node attribute
`plugin_version` or "1", node attribute `plugin_namespace` or ""): this one is
("{{Op}}", "{{trt_version}}", "{{trt_namespace}}"). The node's attributes become plugin fields of the
same names ({{trt_fields}}); output shapes follow op.json's rule ({{shape_rule}}); formats: linear,
the op's dtypes. `enqueue` runs the C kernel on the host (device -> host copy, compute, copy back):
correct first; replace its body with a CUDA kernel for speed.

## Build

    cmake -S . -B build -DTENSORRT_ROOT=/path/to/TensorRT-10.x     # CUDA toolkit required
    cmake --build build --target {{sym}}_trt_plugin                # build/lib{{sym}}_trt_plugin.so

## Model patch

{{trt_patch}}

## Load

    trtexec --onnx={{trt_model}} --dynamicPlugins=build/lib{{sym}}_trt_plugin.so

or in code, before parsing: `getPluginRegistry()->loadLibrary("build/lib{{sym}}_trt_plugin.so")`
(the library exports `getCreators` and `setLoggerFinder`), or link the sources in and call
`{{sym}}_trt::Register{{Sym}}PluginCreator()`. The same library must be loaded when an engine is
deserialized. "Plugin not found, are the plugin name, version, and namespace correct?" means the
library was not loaded or the node's op_type / plugin_version / plugin_namespace differ from the
above.
)tpl";

constexpr const char* kTrtCMake = R"tpl(
# ---- TensorRT adapter (tensorrt/) ----
set(TENSORRT_ROOT "" CACHE PATH "TensorRT 10+ root (include/NvInferRuntime.h, lib/libnvinfer.so)")
if(TENSORRT_ROOT)
  find_path(PT_TRT_INCLUDE_DIR NvInferRuntime.h PATHS ${TENSORRT_ROOT}/include NO_DEFAULT_PATH)
  find_library(PT_TRT_LIBRARY nvinfer PATHS ${TENSORRT_ROOT}/lib NO_DEFAULT_PATH)
  find_package(CUDAToolkit REQUIRED)
  if(NOT PT_TRT_INCLUDE_DIR OR NOT PT_TRT_LIBRARY)
    message(FATAL_ERROR "TENSORRT_ROOT=${TENSORRT_ROOT}: NvInferRuntime.h or libnvinfer not found")
  endif()
  add_library({{sym}}_trt_plugin SHARED tensorrt/{{Sym}}Plugin.cpp)
  target_include_directories({{sym}}_trt_plugin PRIVATE tensorrt ${PT_TRT_INCLUDE_DIR})
  target_link_libraries({{sym}}_trt_plugin PRIVATE {{sym}}_kernel ${PT_TRT_LIBRARY} CUDA::cudart)
  set_target_properties({{sym}}_trt_plugin PROPERTIES CXX_VISIBILITY_PRESET hidden)
else()
  message(STATUS "TENSORRT_ROOT not set: tensorrt/ not built")
endif()
)tpl";

AdapterFiles TrtAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  auto trt_type = [&](int32_t dtype) {
    std::string t = Names(dtype).trt;
    if (t.empty()) {
      ThrowBadInput("scaffold-op --target tensorrt: TensorRT has no {} tensors (node {})",
                    ir::DtypeName(dtype), spec.source_node);
    }
    return "DataType::" + t;
  };
  std::vector<std::string> in_types, out_types, in_onnx, out_onnx, fields;
  for (const auto& t : spec.inputs) {
    in_types.push_back(trt_type(t.dtype));
    in_onnx.push_back(std::to_string(t.dtype));
  }
  for (const auto& t : spec.outputs) {
    out_types.push_back(trt_type(t.dtype));
    out_onnx.push_back(std::to_string(t.dtype));
  }
  std::string version = "1", ns;
  for (const auto& a : spec.attributes) {
    if (a.name == "plugin_version" && a.default_value.is_string())
      version = a.default_value.get<std::string>();
    if (a.name == "plugin_namespace" && a.default_value.is_string())
      ns = a.default_value.get<std::string>();
    fields.push_back(fmt::format("`{}` {}", a.name, shape::AttributeTypeName(a.type)));
  }
  bool same = spec.shape_rule == "same_as_input";
  vars.push_back({"trt_version", version});
  vars.push_back({"trt_namespace", ns});
  vars.push_back({"trt_fields", fields.empty() ? "none" : Join(fields, ", ")});
  vars.push_back({"trt_input_types", Join(in_types, ", ")});
  vars.push_back({"trt_output_types", Join(out_types, ", ")});
  vars.push_back({"onnx_input_types", Join(in_onnx, ", ")});
  vars.push_back({"onnx_output_types", Join(out_onnx, ", ")});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"shape_input", std::to_string(spec.shape_input)});
  vars.push_back({"shape_rule", spec.shape_rule});
  vars.push_back(
      {"trt_static_dims", same ? ""
                               : "const std::vector<int64_t> kOutputDims[kNumOutputs] = {" +
                                     Join(StaticDims(spec), ", ") + "};\n"});
  vars.push_back({"trt_shapes", FillTemplate(same ? kTrtShapesSame : kTrtShapesStatic, vars)});
  vars.push_back({"trt_model", spec.source_model});
  vars.push_back(
      {"trt_patch",
       FillTemplate(
           "None while TensorRT has no importer of its own for `{{Op}}`: the parser then logs \"No "
           "importer\nregistered for op: {{Op}}. Attempting to import as plugin.\" and finds this "
           "one. The importers are\nkeyed by op_type alone, so for an op TensorRT imports natively "
           "(a standard ONNX op) rename the\nnode's op_type and `kPluginName` together. A node "
           "carrying `plugin_version` / `plugin_namespace`\nattributes must match "
           "`kPluginVersion` / `kPluginNamespace`.",
           vars)});
  AdapterFiles out;
  out.files["tensorrt/" + VarOf(vars, "Sym") + "Plugin.h"] = FillTemplate(kTrtHeader, vars);
  out.files["tensorrt/" + VarOf(vars, "Sym") + "Plugin.cpp"] = FillTemplate(kTrtSource, vars);
  out.files["tensorrt/README.md"] = FillTemplate(kTrtReadme, vars);
  out.cmake = FillTemplate(kTrtCMake, vars);
  return out;
}

// ---------------------------------------------------------------------------------------------
// TFLite Micro
// ---------------------------------------------------------------------------------------------

constexpr const char* kTflmHeader =
    R"tpl(// TFLite Micro registration for the custom op "{{Op}}" ({{domain}}::{{Op}}), scaffolded by porttool
// scaffold-op (source sha256 {{sha256}}).
#pragma once

#include "tensorflow/lite/micro/kernels/kernel_util.h"

namespace {{sym}}_tflm {

// The .tflite CUSTOM operator's custom_code, and the name to AddCustom() it under.
constexpr char kCustomName[] = "{{Op}}";

// init (attributes from custom_options), prepare (checks, scratch request), invoke (the kernel).
TFLMRegistration* Register_{{SYM}}();

}  // namespace {{sym}}_tflm
)tpl";

constexpr const char* kTflmSource =
    R"tpl(// TFLite Micro adapter for "{{Op}}" over kernel/{{sym}}.c, scaffolded by porttool scaffold-op from
// node {{node}} of {{model}} (sha256 {{sha256}}). No heap: the attribute copies live in the
// persistent arena, the kernel's scratch in the scratch arena (requested in prepare).
// Layout: the kernel indexes NCHW; a .tflite converted from NCHW ONNX usually holds NHWC tensors.
// Elementwise ops do not care; any other op must be given (or transposed to) NCHW.
#include "{{sym}}_tflm.h"

#include <string.h>

#include "flatbuffers/flexbuffers.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"

#include "{{sym}}.h"

namespace {{sym}}_tflm {
namespace {

constexpr int kMaxInputs = {{max_inputs}};
constexpr int kMinInputs = {{min_inputs}};
constexpr int kNumOutputs = {{num_outputs}};
constexpr int kMaxRank = 8;
const int32_t kInputTypes[kMaxInputs] = {{{onnx_input_types}}};

struct AttributeSpec {
  const char* name;
  int32_t type;  // PT_ATTR_*
};
// The node's attributes (op.json); the list ends with a null name.
const AttributeSpec kAttributes[] = {
{{attribute_table}}};

struct OpData {
  {{sym}}_params params;
  int scratch_index;
};

// TfLiteType -> ONNX dtype (0: not taken by the kernel).
int32_t OnnxType(TfLiteType type) {
  switch (type) {
    case kTfLiteFloat32: return 1;
    case kTfLiteUInt8: return 2;
    case kTfLiteInt8: return 3;
    case kTfLiteInt32: return 6;
    case kTfLiteInt64: return 7;
    default: return 0;
  }
}

bool Describe(TfLiteType type, const TfLiteIntArray* dims, void* data, int64_t* storage,
              pt_tensor* out) {
  if (dims->size > kMaxRank) return false;
  for (int i = 0; i < dims->size; ++i) storage[i] = dims->data[i];
  out->dtype = OnnxType(type);
  out->rank = dims->size;
  out->dims = storage;
  out->data = data;
  return out->dtype != 0;
}

// Attributes come from the operator's custom_options, a flexbuffer map keyed by attribute name;
// an attribute it does not hold keeps the source node's value.
void* Init(TfLiteContext* context, const char* buffer, size_t length) {
  OpData* d = static_cast<OpData*>(context->AllocatePersistentBuffer(context, sizeof(OpData)));
  if (d == nullptr) return nullptr;
  d->params = {{sym}}_default_params();
  d->scratch_index = -1;
  if (buffer == nullptr || length == 0) return d;
  const flexbuffers::Map m =
      flexbuffers::GetRoot(reinterpret_cast<const uint8_t*>(buffer), length).AsMap();
  for (int i = 0; kAttributes[i].name != nullptr; ++i) {
    const flexbuffers::Reference r = m[kAttributes[i].name];
    if (r.IsNull()) continue;
    pt_attribute a;
    memset(&a, 0, sizeof a);
    a.name = kAttributes[i].name;
    a.type = kAttributes[i].type;
    if (a.type == PT_ATTR_FLOAT) {
      a.f = r.AsFloat();
    } else if (a.type == PT_ATTR_INT) {
      a.i = r.AsInt64();
    } else if (a.type == PT_ATTR_STRING) {
      const flexbuffers::String s = r.AsString();
      char* copy = static_cast<char*>(context->AllocatePersistentBuffer(context, s.length() + 1));
      if (copy == nullptr) return nullptr;
      memcpy(copy, s.c_str(), s.length() + 1);
      a.s = copy;
    } else {  // an array: a typed or an untyped flexbuffer vector
      const bool typed = r.IsTypedVector();
      const flexbuffers::TypedVector tv = r.AsTypedVector();
      const flexbuffers::Vector v = r.AsVector();
      const size_t n = typed ? tv.size() : v.size();
      a.count = static_cast<int64_t>(n);
      if (a.type == PT_ATTR_FLOATS) {
        float* copy = static_cast<float*>(
            context->AllocatePersistentBuffer(context, sizeof(float) * (n + 1)));
        if (copy == nullptr) return nullptr;
        for (size_t j = 0; j < n; ++j) copy[j] = (typed ? tv[j] : v[j]).AsFloat();
        a.floats = copy;
      } else {
        int64_t* copy = static_cast<int64_t*>(
            context->AllocatePersistentBuffer(context, sizeof(int64_t) * (n + 1)));
        if (copy == nullptr) return nullptr;
        for (size_t j = 0; j < n; ++j) copy[j] = (typed ? tv[j] : v[j]).AsInt64();
        a.ints = copy;
      }
    }
    if ({{sym}}_set_attribute(&d->params, &a) != PT_OK) {
      MicroPrintf("{{Op}}: attribute %s rejected", a.name);
      return nullptr;
    }
  }
  return d;
}

TfLiteStatus Prepare(TfLiteContext* context, TfLiteNode* node) {
  OpData* d = static_cast<OpData*>(node->user_data);
  TF_LITE_ENSURE(context, d != nullptr);
  const int n_in = node->inputs->size;
  TF_LITE_ENSURE(context, n_in >= kMinInputs && n_in <= kMaxInputs);
  TF_LITE_ENSURE_EQ(context, node->outputs->size, kNumOutputs);
  tflite::MicroContext* micro = tflite::GetMicroContext(context);
  pt_tensor inputs[kMaxInputs];
  int64_t dims[kMaxInputs][kMaxRank];
  memset(inputs, 0, sizeof inputs);
  bool ok = true;
  for (int i = 0; i < n_in; ++i) {
    inputs[i].dtype = kInputTypes[i];
    TfLiteTensor* t = micro->AllocateTempInputTensor(node, i);
    if (t == nullptr) continue;  // an absent optional input
    ok = ok && Describe(t->type, t->dims, nullptr, dims[i], &inputs[i]) &&
         inputs[i].dtype == kInputTypes[i];
    micro->DeallocateTempTfLiteTensor(t);
  }
  TF_LITE_ENSURE_MSG(context, ok, "{{Op}}: input dtype or rank the kernel does not take");
  const size_t bytes = {{sym}}_scratch_size(&d->params, inputs, n_in);
  if (bytes > 0) {
    TF_LITE_ENSURE_STATUS(
        context->RequestScratchBufferInArena(context, bytes, &d->scratch_index));
  }
  return kTfLiteOk;
}

TfLiteStatus Invoke(TfLiteContext* context, TfLiteNode* node) {
  const OpData* d = static_cast<const OpData*>(node->user_data);
  const int n_in = node->inputs->size;
  pt_tensor inputs[kMaxInputs], outputs[kNumOutputs];
  int64_t in_dims[kMaxInputs][kMaxRank], out_dims[kNumOutputs][kMaxRank];
  memset(inputs, 0, sizeof inputs);
  memset(outputs, 0, sizeof outputs);
  for (int i = 0; i < n_in; ++i) {
    inputs[i].dtype = kInputTypes[i];
    const TfLiteEvalTensor* t = tflite::micro::GetEvalInput(context, node, i);
    if (t == nullptr) continue;
    TF_LITE_ENSURE(context, Describe(t->type, t->dims, t->data.data, in_dims[i], &inputs[i]));
  }
  for (int i = 0; i < kNumOutputs; ++i) {
    TfLiteEvalTensor* t = tflite::micro::GetEvalOutput(context, node, i);
    TF_LITE_ENSURE(context, t != nullptr);
    TF_LITE_ENSURE(context, Describe(t->type, t->dims, t->data.data, out_dims[i], &outputs[i]));
  }
  void* scratch = d->scratch_index >= 0 ? context->GetScratchBuffer(context, d->scratch_index)
                                        : nullptr;
  const int32_t status = {{sym}}_compute(&d->params, inputs, n_in, outputs, kNumOutputs, scratch);
  if (status != PT_OK) {
    MicroPrintf("%s", {{sym}}_status_string(status));
    return kTfLiteError;
  }
  return kTfLiteOk;
}

}  // namespace

TFLMRegistration* Register_{{SYM}}() {
  static TFLMRegistration registration = tflite::micro::RegisterOp(Init, Prepare, Invoke);
  return &registration;
}

}  // namespace {{sym}}_tflm
)tpl";

constexpr const char* kTflmReadme = R"tpl(# TFLite Micro adapter: custom op "{{Op}}"

Scaffolded by `porttool scaffold-op` from node `{{node}}` of `{{model}}`
(sha256 `{{sha256}}`).

`{{sym}}_tflm.{h,cc}`: `{{sym}}_tflm::Register_{{SYM}}()` returns a `TFLMRegistration` (init, prepare,
invoke) over `kernel/{{sym}}.c`. init reads the attributes from the operator's `custom_options`
(a flexbuffer map keyed by attribute name; absent ones keep the source node's values) into the
persistent arena; prepare checks inputs/outputs and requests the kernel's scratch from the arena;
invoke runs the kernel. No heap.

## Build

    cmake -S . -B build -DTFLM_ROOT=/path/to/tflite-micro \
        [-DTFLM_EXTRA_INCLUDE_DIRS="<flatbuffers>/include;..."]
    cmake --build build --target {{sym}}_tflm     # a static library to link with TFLM

## Model patch

The `.tflite` must hold the op as a CUSTOM operator with `custom_code` "{{Op}}" and its attributes
({{tflm_attrs}}) as a flexbuffer map in `custom_options`; how depends on the converter (with
TensorFlow: a `tf.function` marked `experimental_implements` / `allow_custom_ops=True`). Mind the
layout: the kernel indexes NCHW; converters from ONNX usually produce NHWC tensors (harmless for
elementwise ops).

## Load

    static tflite::MicroMutableOpResolver<N + 1> resolver;   // one slot more for the custom op
    resolver.AddCustom({{sym}}_tflm::kCustomName, {{sym}}_tflm::Register_{{SYM}}());

"Didn't find op for builtin opcode" / "Failed to get registration from op code CUSTOM": the op was
not added or the names differ; "Couldn't register custom op '{{Op}}', resolver size is too small":
raise the resolver's template argument.
)tpl";

constexpr const char* kTflmCMake = R"tpl(
# ---- TFLite Micro adapter (tflm/) ----
set(TFLM_ROOT "" CACHE PATH "tflite-micro source tree (tensorflow/lite/micro)")
set(TFLM_EXTRA_INCLUDE_DIRS "" CACHE STRING "More include dirs for TFLM (flatbuffers, ...)")
if(TFLM_ROOT)
  if(NOT EXISTS ${TFLM_ROOT}/tensorflow/lite/micro/kernels/kernel_util.h)
    message(FATAL_ERROR "TFLM_ROOT=${TFLM_ROOT}: no tensorflow/lite/micro/kernels/kernel_util.h")
  endif()
  add_library({{sym}}_tflm STATIC tflm/{{sym}}_tflm.cc)
  target_include_directories({{sym}}_tflm PUBLIC tflm ${TFLM_ROOT}
    ${TFLM_ROOT}/tensorflow/lite/micro/tools/make/downloads/flatbuffers/include
    ${TFLM_EXTRA_INCLUDE_DIRS})
  target_link_libraries({{sym}}_tflm PUBLIC {{sym}}_kernel)
else()
  message(STATUS "TFLM_ROOT not set: tflm/ not built")
endif()
)tpl";

AdapterFiles TflmAdapter(const CustomOpSpec& spec, ScaffoldVars vars) {
  std::vector<std::string> in_onnx, attrs;
  for (const auto& t : spec.inputs) in_onnx.push_back(std::to_string(t.dtype));
  for (const auto& a : spec.attributes) {
    attrs.push_back(fmt::format("`{}` {}", a.name, shape::AttributeTypeName(a.type)));
  }
  vars.push_back({"onnx_input_types", Join(in_onnx, ", ")});
  vars.push_back({"attribute_table", AttributeTable(spec, "nullptr")});
  vars.push_back({"tflm_attrs", attrs.empty() ? "none" : Join(attrs, ", ")});
  AdapterFiles out;
  out.files["tflm/" + spec.symbol + "_tflm.h"] = FillTemplate(kTflmHeader, vars);
  out.files["tflm/" + spec.symbol + "_tflm.cc"] = FillTemplate(kTflmSource, vars);
  out.files["tflm/README.md"] = FillTemplate(kTflmReadme, vars);
  out.cmake = FillTemplate(kTflmCMake, vars);
  return out;
}

}  // namespace

std::string FillTemplate(std::string text, const ScaffoldVars& vars) {
  for (const auto& [k, v] : vars) text = util::ReplaceAll(std::move(text), "{{" + k + "}}", v);
  // Only "{{identifier}}" is a placeholder: generated C++ may hold "{{1, 2}}" initialisers.
  for (size_t open = text.find("{{"); open != std::string::npos; open = text.find("{{", open + 2)) {
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 2, close - open - 2);
    bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                      std::all_of(name.begin(), name.end(),
                                  [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    if (identifier) ThrowInternal("template placeholder {{{{{}}}}} left unfilled", name);
  }
  return text;
}

const std::vector<std::string>& AdapterTargets() {
  static const std::vector<std::string> kTargets = {"ort", "rknn", "tensorrt", "tflm"};
  return kTargets;
}

std::vector<std::string> ParseAdapterTargets(const std::string& list) {
  const auto& all = AdapterTargets();
  if (list.empty() || list == "all") return all;
  std::vector<bool> chosen(all.size(), false);
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(begin, end - begin);
    auto it = std::find(all.begin(), all.end(), item);
    if (it == all.end()) {
      ThrowUsage("unknown --target '{}': valid targets are {} (comma-separated, or all)", item,
                 Join(all, ", "));
    }
    chosen[it - all.begin()] = true;
    begin = end + 1;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (chosen[i]) out.push_back(all[i]);
  }
  return out;
}

AdapterFiles GenerateAdapter(const std::string& target, const CustomOpSpec& spec,
                             const ScaffoldVars& vars, const std::string& formula, bool bias) {
  if (target == "ort") return OrtAdapter(spec, vars);
  if (target == "rknn") return RknnAdapter(spec, vars, formula, bias);
  if (target == "tensorrt") return TrtAdapter(spec, vars);
  if (target == "tflm") return TflmAdapter(spec, vars);
  ThrowUsage("unknown adapter target '{}'", target);
}

}  // namespace porttool::emit
