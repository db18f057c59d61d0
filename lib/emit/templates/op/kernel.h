/* {{Op|c_comment}} kernel ({{domain|c_comment}}::{{Op|c_comment}}), scaffolded by porttool scaffold-op from node {{node|c_comment}}
 * of {{model|c_comment}} (sha256 {{sha256}}).
 * C99, NCHW float32, no heap: scratch is passed in, sized by {{sym}}_scratch_size(). */
#ifndef {{SYM}}_KERNEL_H_
#define {{SYM}}_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#include "porttool_custom_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The node's attributes; {{sym}}_default_params() holds the values of the source node. */
typedef struct {{sym}}_params {
{{param_fields}}} {{sym}}_params;

{{sym}}_params {{sym}}_default_params(void);
/* Sets a parameter from an attribute; PT_BAD_ARGUMENT for an unknown name or type. */
int32_t {{sym}}_set_attribute({{sym}}_params* params, const pt_attribute* attr);
size_t {{sym}}_scratch_size(const {{sym}}_params* params, const pt_tensor* inputs,
                            int32_t num_inputs);
/* PT_OK, PT_BAD_ARGUMENT (counts, dtypes, shapes) or PT_NOT_IMPLEMENTED. */
int32_t {{sym}}_compute(const {{sym}}_params* params, const pt_tensor* inputs, int32_t num_inputs,
                        pt_tensor* outputs, int32_t num_outputs, void* scratch);
const char* {{sym}}_status_string(int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* {{SYM}}_KERNEL_H_ */
