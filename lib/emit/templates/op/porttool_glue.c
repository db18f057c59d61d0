/* porttool custom-op ABI entry for {{domain|c_comment}}::{{Op|c_comment}}: what `porttool --custom-op` loads. */
#include "{{sym}}.h"

#if defined(__GNUC__) || defined(__clang__)
#define PT_EXPORT __attribute__((visibility("default")))
#else
#define PT_EXPORT
#endif

static int32_t {{sym}}_params_from(const pt_attribute* attrs, int32_t num_attrs,
                                   {{sym}}_params* p) {
  int32_t i;
  *p = {{sym}}_default_params();
  for (i = 0; i < num_attrs; ++i) {
    int32_t status = {{sym}}_set_attribute(p, &attrs[i]);
    if (status != PT_OK) return status;
  }
  return PT_OK;
}

static size_t {{sym}}_abi_scratch(const pt_tensor* inputs, int32_t num_inputs,
                                  const pt_attribute* attrs, int32_t num_attrs) {
  {{sym}}_params p;
  if ({{sym}}_params_from(attrs, num_attrs, &p) != PT_OK) return 0;
  return {{sym}}_scratch_size(&p, inputs, num_inputs);
}

static int32_t {{sym}}_abi_compute(const pt_tensor* inputs, int32_t num_inputs, pt_tensor* outputs,
                                   int32_t num_outputs, const pt_attribute* attrs,
                                   int32_t num_attrs, void* scratch) {
  {{sym}}_params p;
  int32_t status = {{sym}}_params_from(attrs, num_attrs, &p);
  if (status != PT_OK) return status;
  return {{sym}}_compute(&p, inputs, num_inputs, outputs, num_outputs, scratch);
}

static const pt_custom_op {{sym}}_op = {PT_CUSTOM_OP_ABI_VERSION, "{{domain|c_string}}", "{{Op|c_string}}",
                                        {{sym}}_abi_scratch, {{sym}}_abi_compute,
                                        {{sym}}_status_string};

PT_EXPORT const pt_custom_op* porttool_custom_op_v1(void) { return &{{sym}}_op; }
