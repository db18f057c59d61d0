/* The subset of Rockchip's rknn_api.h (RKNN runtime, librknnrt) that porttool's generated RKNN
 * runner uses, reproduced from the documented declarations (see
 * ../shared/reference/custom-ops-and-pipelines.md, section B) so that CI can compile the RKNN
 * backend without the vendor SDK. It has no implementation: link against the real librknnrt. */
#ifndef RKNN_API_H_STUB
#define RKNN_API_H_STUB

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RKNN_SUCC 0
#define RKNN_MAX_DIMS 16
#define RKNN_MAX_NAME_LEN 256

typedef uint64_t rknn_context;

typedef enum _rknn_query_cmd {
  RKNN_QUERY_IN_OUT_NUM = 0,
  RKNN_QUERY_INPUT_ATTR = 1,
  RKNN_QUERY_OUTPUT_ATTR = 2,
  RKNN_QUERY_PERF_DETAIL = 3,
  RKNN_QUERY_PERF_RUN = 4,
  RKNN_QUERY_SDK_VERSION = 5,
  RKNN_QUERY_MEM_SIZE = 6,
  RKNN_QUERY_CUSTOM_STRING = 7,
  RKNN_QUERY_NATIVE_INPUT_ATTR = 8,
  RKNN_QUERY_NATIVE_OUTPUT_ATTR = 9,
  RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR = 8,
  RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR = 9,
  RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR = 10,
  RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR = 11
} rknn_query_cmd;

typedef enum _rknn_tensor_type {
  RKNN_TENSOR_FLOAT32 = 0,
  RKNN_TENSOR_FLOAT16,
  RKNN_TENSOR_INT8,
  RKNN_TENSOR_UINT8,
  RKNN_TENSOR_INT16,
  RKNN_TENSOR_UINT16,
  RKNN_TENSOR_INT32,
  RKNN_TENSOR_UINT32,
  RKNN_TENSOR_INT64,
  RKNN_TENSOR_BOOL,
  RKNN_TENSOR_INT4,
  RKNN_TENSOR_BFLOAT16
} rknn_tensor_type;

typedef enum _rknn_tensor_qnt_type {
  RKNN_TENSOR_QNT_NONE = 0,
  RKNN_TENSOR_QNT_DFP,
  RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC
} rknn_tensor_qnt_type;

typedef enum _rknn_tensor_format {
  RKNN_TENSOR_NCHW = 0,
  RKNN_TENSOR_NHWC,
  RKNN_TENSOR_NC1HWC2,
  RKNN_TENSOR_UNDEFINED
} rknn_tensor_format;

typedef struct _rknn_input_output_num {
  uint32_t n_input;
  uint32_t n_output;
} rknn_input_output_num;

typedef struct _rknn_tensor_attr {
  uint32_t index;
  uint32_t n_dims;
  uint32_t dims[RKNN_MAX_DIMS];
  char name[RKNN_MAX_NAME_LEN];
  uint32_t n_elems;
  uint32_t size;
  rknn_tensor_format fmt;
  rknn_tensor_type type;
  rknn_tensor_qnt_type qnt_type;
  int8_t fl;
  int32_t zp;
  float scale;
  uint32_t w_stride;
  uint32_t size_with_stride;
  uint8_t pass_through;
  uint32_t h_stride;
} rknn_tensor_attr;

typedef struct _rknn_input {
  uint32_t index;
  void* buf;
  uint32_t size;
  uint8_t pass_through;
  rknn_tensor_type type;
  rknn_tensor_format fmt;
} rknn_input;

typedef struct _rknn_output {
  uint8_t want_float;
  uint8_t is_prealloc;
  uint32_t index;
  void* buf;
  uint32_t size;
} rknn_output;

typedef struct _rknn_tensor_memory {
  void* virt_addr;
  uint64_t phys_addr;
  int32_t fd;
  int32_t offset;
  uint32_t size;
  uint32_t flags;
  void* priv_data;
} rknn_tensor_mem;

typedef enum _rknn_mem_sync_mode {
  RKNN_MEMORY_SYNC_TO_DEVICE = 0x1,
  RKNN_MEMORY_SYNC_FROM_DEVICE = 0x2,
  RKNN_MEMORY_SYNC_BIDIRECTIONAL = 0x3
} rknn_mem_sync_mode;

typedef struct _rknn_init_extend rknn_init_extend;
typedef struct _rknn_run_extend rknn_run_extend;
typedef struct _rknn_output_extend rknn_output_extend;

int rknn_init(rknn_context* context, void* model, uint32_t size, uint32_t flag,
              rknn_init_extend* extend);
int rknn_destroy(rknn_context context);
int rknn_query(rknn_context context, rknn_query_cmd cmd, void* info, uint32_t size);
int rknn_inputs_set(rknn_context context, uint32_t n_inputs, rknn_input inputs[]);
int rknn_run(rknn_context context, rknn_run_extend* extend);
int rknn_outputs_get(rknn_context context, uint32_t n_outputs, rknn_output outputs[],
                     rknn_output_extend* extend);
int rknn_outputs_release(rknn_context context, uint32_t n_outputs, rknn_output outputs[]);
rknn_tensor_mem* rknn_create_mem(rknn_context ctx, uint32_t size);
int rknn_destroy_mem(rknn_context ctx, rknn_tensor_mem* mem);
int rknn_set_io_mem(rknn_context ctx, rknn_tensor_mem* mem, rknn_tensor_attr* attr);
int rknn_mem_sync(rknn_context context, rknn_tensor_mem* mem, rknn_mem_sync_mode mode);

#ifdef __cplusplus
}
#endif

#endif /* RKNN_API_H_STUB */
