/* The {{Op|c_comment}} kernel is a skeleton: this test fails until kernel/{{sym}}.c is written. */
#include <stdio.h>
#include <string.h>

#include "../kernel/{{sym}}.h"

int main(void) {
  pt_tensor inputs[{{max_inputs}}], outputs[{{num_outputs}}];
  {{sym}}_params params = {{sym}}_default_params();
  int32_t status;
  memset(inputs, 0, sizeof inputs);
  memset(outputs, 0, sizeof outputs);
  status = {{sym}}_compute(&params, inputs, {{max_inputs}}, outputs, {{num_outputs}}, NULL);
  printf("%s\n", {{sym}}_status_string(status));
  printf("%d passed, %d failed\n", status == PT_OK, status != PT_OK);
  return status == PT_OK ? 0 : 1;
}
