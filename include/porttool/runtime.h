/* porttool runtime C API: porttool's reference executor behind a C99 interface, so that C
 * programs (the runners `porttool emit-runner` generates, board-side test programs, other
 * languages through an FFI) can load an ONNX model, ask for its inputs and outputs, and run it
 * on buffers they own. It is the host runtime of a split pipeline on a Linux board and the
 * executor of accelerator segments in CI.
 *
 * Conventions: every function that can fail returns a pt_status (PT_OK == 0); the reason is
 * then available as text from pt_last_error() and as the same code from pt_last_error_code(),
 * both per thread and valid until the next failing call on that thread. Inputs are read in place
 * (never copied, never modified); outputs are written into the caller's buffers, which the
 * library never allocates nor frees. A session may be used by one thread at a time.
 * Link with `pkg-config --cflags --libs porttool-runtime`. */
#ifndef PORTTOOL_RUNTIME_H_
#define PORTTOOL_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PT_API __attribute__((visibility("default")))
#else
#define PT_API
#endif

/* Codes match the porttool command line's exit codes. */
typedef enum pt_status {
  PT_OK = 0,
  PT_ERR_USAGE = 2,     /* a wrong argument: NULL pointer, index out of range, too small buffer */
  PT_ERR_BAD_INPUT = 3, /* unreadable or unsupported model, input of the wrong dtype or shape */
  PT_ERR_INTERNAL = 4   /* a porttool bug: please report it */
} pt_status;

/* Element types: the ONNX TensorProto.DataType numbers. The executor computes float16 in
 * float32, so a float16 model output is reported (and written) as PT_FLOAT. */
typedef enum pt_dtype {
  PT_UNDEFINED = 0,
  PT_FLOAT = 1,
  PT_UINT8 = 2,
  PT_INT8 = 3,
  PT_UINT16 = 4,
  PT_INT16 = 5,
  PT_INT32 = 6,
  PT_INT64 = 7,
  PT_BOOL = 9,
  PT_DOUBLE = 11,
  PT_UINT32 = 12,
  PT_UINT64 = 13
} pt_dtype;

#define PT_MAX_RANK 8

typedef struct pt_session pt_session;

typedef struct pt_session_options {
  int threads; /* this session's kernel threads (0: all cores); other sessions keep their own */
} pt_session_options;

/* A model input or output as declared: dims[i] == -1 where the model leaves a dim dynamic. */
typedef struct pt_tensor_info {
  const char* name; /* owned by the session */
  int32_t dtype;    /* pt_dtype */
  size_t rank;
  int64_t dims[PT_MAX_RANK];
} pt_tensor_info;

/* A caller-owned buffer. For an input: name (NULL means the model's input at the same
 * position), dtype, rank, dims and data are read. For an output: name (NULL: position), data and
 * bytes (capacity) are read; dtype, rank and dims are written by pt_session_run. */
typedef struct pt_tensor {
  const char* name;
  int32_t dtype;
  size_t rank;
  int64_t dims[PT_MAX_RANK];
  void* data;
  size_t bytes;
} pt_tensor;

PT_API void pt_session_options_init(pt_session_options* options);

/* Loads and plans the model (an op without a kernel fails here, not at run time). `options`
 * may be NULL. On failure *session is NULL. */
PT_API pt_status pt_session_create(const char* model_path, const pt_session_options* options,
                                   pt_session** session);
PT_API void pt_session_free(pt_session* session); /* NULL is a no-op */

PT_API size_t pt_session_input_count(const pt_session* session);
PT_API size_t pt_session_output_count(const pt_session* session);
/* The kernel threads this session's runs use: its own count, or all cores when it asked for 0.
 * Another session's count does not change it. */
PT_API int pt_session_threads(const pt_session* session);
PT_API pt_status pt_session_input_info(const pt_session* session, size_t index,
                                       pt_tensor_info* info);
PT_API pt_status pt_session_output_info(const pt_session* session, size_t index,
                                        pt_tensor_info* info);

/* Runs once. Every model input must be given exactly once; inputs are checked for dtype and
 * shape against the model. `outputs` may list any subset of the model's outputs; each buffer
 * must hold the output (PT_ERR_USAGE naming the output and the bytes needed otherwise). For a
 * 64-byte-aligned buffer the kernel that produces the output writes it straight into the buffer
 * (no allocation, no copy); other buffers, and outputs that are views of other tensors (Reshape
 * of an input, an initializer), are filled by a copy. */
PT_API pt_status pt_session_run(pt_session* session, const pt_tensor* inputs, size_t n_inputs,
                                pt_tensor* outputs, size_t n_outputs);

/* Bytes of one element of `dtype` (0 for an unknown dtype). */
PT_API size_t pt_dtype_size(int32_t dtype);

PT_API const char* pt_last_error(void);
PT_API pt_status pt_last_error_code(void);

PT_API const char* pt_version(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTTOOL_RUNTIME_H_ */
