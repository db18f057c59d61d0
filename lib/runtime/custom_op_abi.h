/* porttool custom-op ABI, version 1: the contract between porttool's reference executor and the
 * shared library a scaffold-op package builds. porttool dlopen()s the library, calls the entry
 * point PT_CUSTOM_OP_ENTRY to get a pt_custom_op, refuses it unless abi_version matches and
 * (domain, op_type) match op.json, and then calls compute() for every node of that op with
 * preallocated outputs and caller-owned scratch: the kernel never allocates. Plain C so that any
 * compiler and any SDK adapter can share it; the struct only grows at the end, with a new version.
 */
#ifndef PORTTOOL_CUSTOM_OP_ABI_H_
#define PORTTOOL_CUSTOM_OP_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PT_CUSTOM_OP_ABI_VERSION 1u
#define PT_CUSTOM_OP_ENTRY "porttool_custom_op_v1"

/* compute() status codes. Anything but PT_OK is an error porttool reports with status_string. */
#define PT_OK 0
#define PT_NOT_IMPLEMENTED 1
#define PT_BAD_ARGUMENT 2

/* Attribute types: the values of onnx.AttributeProto.AttributeType. */
#define PT_ATTR_FLOAT 1
#define PT_ATTR_INT 2
#define PT_ATTR_STRING 3
#define PT_ATTR_FLOATS 6
#define PT_ATTR_INTS 7

/* A dense row-major tensor. dtype is onnx.TensorProto.DataType (1 = float32). Inputs are
 * read-only; an absent optional input has data == NULL. */
typedef struct pt_tensor {
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  void* data;
} pt_tensor;

/* One attribute of the node, as the model holds it (absent attributes are not passed: the kernel
 * applies its defaults). */
typedef struct pt_attribute {
  const char* name;
  int32_t type;
  int64_t i;
  float f;
  const char* s;
  int64_t count; /* elements of ints / floats */
  const int64_t* ints;
  const float* floats;
} pt_attribute;

typedef struct pt_custom_op {
  uint32_t abi_version; /* PT_CUSTOM_OP_ABI_VERSION */
  const char* domain;
  const char* op_type;
  /* Bytes of scratch compute() needs for these inputs. */
  size_t (*scratch_size)(const pt_tensor* inputs, int32_t num_inputs, const pt_attribute* attrs,
                         int32_t num_attrs);
  /* Fills outputs (already allocated with the shapes op.json's shape rule gives). */
  int32_t (*compute)(const pt_tensor* inputs, int32_t num_inputs, pt_tensor* outputs,
                     int32_t num_outputs, const pt_attribute* attrs, int32_t num_attrs,
                     void* scratch);
  const char* (*status_string)(int32_t status);
} pt_custom_op;

typedef const pt_custom_op* (*pt_custom_op_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTTOOL_CUSTOM_OP_ABI_H_ */
