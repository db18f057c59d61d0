/* Runs the {{Op|c_comment}} kernel on its test kit (test/kit/kit.h) and prints "N passed, N failed".
 * Built twice by CMake: with the SIMD path and with -DPT_NO_SIMD (plain C). No heap. */
#include <math.h>
#include <stdio.h>

#include "../kernel/{{sym}}.h"
#include "kit/kit.h"

static float out_0[{{KIT}}_OUTPUT_0_COUNT > 0 ? {{KIT}}_OUTPUT_0_COUNT : 1];
static unsigned char scratch[1 << 16];

int main(void) {
  pt_tensor inputs[{{KIT}}_NUM_INPUTS > 0 ? {{KIT}}_NUM_INPUTS : 1];
  pt_tensor outputs[1];
  {{sym}}_params params = {{sym}}_default_params();
  int passed = 0, failed = 0;
  int32_t status;
  long i, worst = 0;
  double worst_err = 0;
{{input_setup}}  outputs[0].dtype = 1;
  outputs[0].rank = {{KIT}}_OUTPUT_0_RANK;
  outputs[0].dims = {{kit}}_output_0_dims;
  outputs[0].data = out_0;
  if ({{sym}}_scratch_size(&params, inputs, {{KIT}}_NUM_INPUTS) > sizeof scratch) {
    printf("scratch: need more than %u bytes\n", (unsigned)sizeof scratch);
    return 1;
  }
  status = {{sym}}_compute(&params, inputs, {{KIT}}_NUM_INPUTS, outputs, 1, scratch);
  if (status != PT_OK) {
    printf("%s: %s\n", {{KIT}}_OUTPUT_0_NAME, {{sym}}_status_string(status));
    failed = 1;
  } else {
    int ok = 1;
    for (i = 0; i < {{KIT}}_OUTPUT_0_COUNT; ++i) {
      double want = {{kit}}_output_0[i], got = out_0[i], err = fabs(got - want);
      if (!(err <= {{KIT}}_ATOL + {{KIT}}_RTOL * fabs(want))) ok = 0;
      if (err > worst_err || err != err) worst_err = err, worst = i;
    }
    printf("%s: max_abs %.3g at element %ld (want %.9g got %.9g)\n", {{KIT}}_OUTPUT_0_NAME,
           worst_err, worst, (double){{kit}}_output_0[worst], (double)out_0[worst]);
    if (ok) passed = 1; else failed = 1;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
