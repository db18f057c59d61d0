/* Segments through porttool's C API: one session per segment, inputs read in place from the
 * arena or the caller's buffers, outputs written straight into their arena slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_backend.h"

struct pl_runner {
  pt_session* session;
};

/* The segment file must declare exactly the tensors pipeline.json gave it. */
static int pl_check_io(const pt_session* s, const pl_segment* seg, int is_input, char* err,
                       size_t err_len) {
  size_t n = is_input ? pt_session_input_count(s) : pt_session_output_count(s);
  size_t want = is_input ? seg->n_inputs : seg->n_outputs;
  const int* ids = is_input ? seg->inputs : seg->outputs;
  const char* what = is_input ? "input" : "output";
  size_t i, j, d;
  if (n != want) {
    snprintf(err, err_len, "the file has %u %ss, the pipeline expects %u", (unsigned)n, what,
             (unsigned)want);
    return 1;
  }
  for (i = 0; i < want; ++i) {
    const pl_tensor* t = &pl_tensors[ids[i]];
    pt_tensor_info info;
    int found = 0;
    for (j = 0; j < n && !found; ++j) {
      if (is_input)
        pt_session_input_info(s, j, &info);
      else
        pt_session_output_info(s, j, &info);
      found = strcmp(info.name, t->name) == 0;
    }
    if (!found) {
      snprintf(err, err_len, "the file has no %s '%s' (pipeline.json does not match it)", what,
               t->name);
      return 1;
    }
    if (info.dtype != t->dtype || (info.rank != 0 && info.rank != t->rank)) {
      snprintf(err, err_len, "%s '%s': the file declares dtype %d rank %u, the pipeline %d rank %u",
               what, t->name, (int)info.dtype, (unsigned)info.rank, (int)t->dtype,
               (unsigned)t->rank);
      return 1;
    }
    for (d = 0; d < info.rank; ++d) {
      if (info.dims[d] >= 0 && info.dims[d] != t->dims[d]) {
        snprintf(err, err_len, "%s '%s': dim %u is %lld in the file, %lld in the pipeline", what,
                 t->name, (unsigned)d, (long long)info.dims[d], (long long)t->dims[d]);
        return 1;
      }
    }
  }
  return 0;
}

pl_runner* pl_pt_open(const pl_segment* seg, const char* path, char* err, size_t err_len) {
  pl_runner* r = (pl_runner*)calloc(1, sizeof *r);
  pt_session_options options;
  pt_session_options_init(&options);
  options.threads = PIPELINE_THREADS;
  if (r == NULL) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  if (pt_session_create(path, &options, &r->session) != PT_OK) {
    snprintf(err, err_len, "%s", pt_last_error());
    free(r);
    return NULL;
  }
  if (pl_check_io(r->session, seg, 1, err, err_len) ||
      pl_check_io(r->session, seg, 0, err, err_len)) {
    pl_pt_close(r);
    return NULL;
  }
  return r;
}

int pl_pt_run(pl_runner* r, const pl_segment* seg, void* const* in, void* const* out, char* err,
              size_t err_len) {
  pt_tensor ti[64], to[64];
  size_t i;
  for (i = 0; i < seg->n_inputs; ++i) ti[i] = pl_pt_tensor(&pl_tensors[seg->inputs[i]], in[i]);
  for (i = 0; i < seg->n_outputs; ++i) to[i] = pl_pt_tensor(&pl_tensors[seg->outputs[i]], out[i]);
  if (pt_session_run(r->session, ti, seg->n_inputs, to, seg->n_outputs) != PT_OK) {
    snprintf(err, err_len, "%s", pt_last_error());
    return 1;
  }
  return 0;
}

void pl_pt_close(pl_runner* r) {
  if (r == NULL) return;
  pt_session_free(r->session);
  free(r);
}
