/* porttool's compile-only stand-in for ONNX Runtime's onnxruntime_c_api.h, shipped so that
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
