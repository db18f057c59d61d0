/* No reference implementation is known to porttool for {{domain|c_comment}}::{{Op|c_comment}}: write it here.
 * Inputs:{{io_doc}}
 * Until then compute() reports PT_NOT_IMPLEMENTED — never a silent pass-through. */

size_t {{sym}}_scratch_size(const {{sym}}_params* params, const pt_tensor* inputs,
                            int32_t num_inputs) {
  (void)params;
  (void)inputs;
  (void)num_inputs;
  return 0; /* bytes of temporary memory compute() needs */
}

int32_t {{sym}}_compute(const {{sym}}_params* params, const pt_tensor* inputs, int32_t num_inputs,
                        pt_tensor* outputs, int32_t num_outputs, void* scratch) {
  (void)params;
  (void)scratch;
  (void)outputs;
  (void){{sym}}_count;
  if (num_inputs < {{min_inputs}} || num_inputs > {{max_inputs}} || num_outputs != {{num_outputs}})
    return PT_BAD_ARGUMENT;
  (void)inputs;
  return PT_NOT_IMPLEMENTED;
}
