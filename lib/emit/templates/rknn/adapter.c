/* RKNN runtime adapter for {{domain|c_comment}}::{{Op|c_comment}} (RKNN op type {{rknn_op}}), scaffolded by porttool
 * scaffold-op from node {{node|c_comment}} of {{model|c_comment}} (sha256 {{sha256}}).
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
