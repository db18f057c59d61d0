/* {{Op|c_comment}} kernel, scaffolded by porttool scaffold-op (source sha256 {{sha256}}). */
#include "{{sym}}.h"

#include <math.h>
#include <string.h>

{{sym}}_params {{sym}}_default_params(void) {
  {{sym}}_params p;
  memset(&p, 0, sizeof p);
{{param_defaults}}  return p;
}

int32_t {{sym}}_set_attribute({{sym}}_params* params, const pt_attribute* attr) {
{{param_setters}}  (void)params;
  (void)attr;
  return PT_BAD_ARGUMENT;
}

const char* {{sym}}_status_string(int32_t status) {
  switch (status) {
    case PT_OK: return "ok";
    case PT_NOT_IMPLEMENTED:
      return "{{domain|c_string}}::{{Op|c_string}}: kernel not implemented yet (write it in kernel/{{sym}}.c)";
    case PT_BAD_ARGUMENT:
      return "{{domain|c_string}}::{{Op|c_string}}: bad argument (input count, dtype, shape or attribute)";
    default: return "unknown status";
  }
}

static inline int64_t {{sym}}_count(const pt_tensor* t) {
  int64_t n = 1;
  int32_t i;
  for (i = 0; i < t->rank; ++i) n *= t->dims[i];
  return n;
}
