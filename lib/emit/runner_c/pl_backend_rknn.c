/* Accelerator segments on a Rockchip NPU through librknnrt. At open, every input and output
 * attribute is queried and checked against the pipeline (element count, dims, and the bridge's
 * scale and zero point for int8 bridges): a .rknn converted from another segment or with another
 * calibration fails loudly here instead of producing wrong numbers. 4-D float inputs are handed
 * over as NHWC (the runtime's documented input layout); int8 bridges as int8 with the bridge's
 * scale and zero point. Outputs come back as float (want_float) straight into their arena slot;
 * with PIPELINE_RKNN_ZERO_COPY they are read from device memory in the native NC1HWC2 layout
 * (sized by size_with_stride), after an explicit cache sync. */
#include <math.h>
#include <rknn_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_backend.h"
#include "pl_layout.h"

struct pl_runner {
  rknn_context ctx;
  uint32_t n_in, n_out;
  rknn_tensor_attr in_attr[64], out_attr[64];
  void* staging[64]; /* NHWC / int8 copies of the inputs */
  rknn_tensor_mem* out_mem[64];
};

static int pl_rknn_fail(char* err, size_t len, const char* what, const char* tensor, int code) {
  snprintf(err, len, "%s%s%s (rknn error %d)", what, tensor ? " for " : "", tensor ? tensor : "",
           code);
  return 1;
}

/* The attribute must describe the same tensor the pipeline planned. */
static int pl_check_attr(const rknn_tensor_attr* a, const pl_tensor* t, char* err, size_t len) {
  if ((size_t)a->n_elems != pl_elements(t)) {
    snprintf(err, len,
             "'%s': the .rknn has %u elements, pipeline.json %u (was it converted from "
             "this segment?)",
             t->name, (unsigned)a->n_elems, (unsigned)pl_elements(t));
    return 1;
  }
  if (a->n_dims != t->rank) {
    snprintf(err, len, "'%s': the .rknn has rank %u, pipeline.json %u", t->name,
             (unsigned)a->n_dims, (unsigned)t->rank);
    return 1;
  }
  if (t->quantized && a->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC &&
      (a->zp != t->zero_point || fabsf(a->scale - t->scale) > 1e-6f * fabsf(t->scale))) {
    snprintf(err, len,
             "'%s': the .rknn quantizes with scale %g zero point %d, the pipeline's "
             "table with %g / %d: convert with the same calibration",
             t->name, (double)a->scale, (int)a->zp, (double)t->scale, (int)t->zero_point);
    return 1;
  }
  return 0;
}

static int pl_query_all(pl_runner* r, const pl_segment* seg, char* err, size_t len) {
  rknn_input_output_num num;
  uint32_t i;
  int rc = rknn_query(r->ctx, RKNN_QUERY_IN_OUT_NUM, &num, sizeof num);
  if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_query(IN_OUT_NUM)", NULL, rc);
  if (num.n_input != seg->n_inputs || num.n_output != seg->n_outputs || num.n_input > 64 ||
      num.n_output > 64) {
    snprintf(err, len, "the .rknn has %u inputs and %u outputs, the segment %u and %u",
             (unsigned)num.n_input, (unsigned)num.n_output, (unsigned)seg->n_inputs,
             (unsigned)seg->n_outputs);
    return 1;
  }
  r->n_in = num.n_input;
  r->n_out = num.n_output;
  for (i = 0; i < r->n_in; ++i) {
    const pl_tensor* t = &pl_tensors[seg->inputs[i]];
    r->in_attr[i].index = i;
    rc = rknn_query(r->ctx, RKNN_QUERY_INPUT_ATTR, &r->in_attr[i], sizeof r->in_attr[i]);
    if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_query(INPUT_ATTR)", t->name, rc);
    if (pl_check_attr(&r->in_attr[i], t, err, len)) return 1;
    r->staging[i] = malloc(t->bytes);
    if (r->staging[i] == NULL) return snprintf(err, len, "out of memory"), 1;
  }
  for (i = 0; i < r->n_out; ++i) {
    const pl_tensor* t = &pl_tensors[seg->outputs[i]];
    rknn_query_cmd cmd =
        PIPELINE_RKNN_ZERO_COPY ? RKNN_QUERY_NATIVE_OUTPUT_ATTR : RKNN_QUERY_OUTPUT_ATTR;
    r->out_attr[i].index = i;
    rc = rknn_query(r->ctx, cmd, &r->out_attr[i], sizeof r->out_attr[i]);
    if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_query(OUTPUT_ATTR)", t->name, rc);
    if (!PIPELINE_RKNN_ZERO_COPY && pl_check_attr(&r->out_attr[i], t, err, len)) return 1;
    if (PIPELINE_RKNN_ZERO_COPY) {
      r->out_mem[i] = rknn_create_mem(r->ctx, r->out_attr[i].size_with_stride);
      if (r->out_mem[i] == NULL) return pl_rknn_fail(err, len, "rknn_create_mem", t->name, -1);
      rc = rknn_set_io_mem(r->ctx, r->out_mem[i], &r->out_attr[i]);
      if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_set_io_mem", t->name, rc);
    }
  }
  return 0;
}

pl_runner* pl_rknn_open(const pl_segment* seg, const char* path, char* err, size_t err_len) {
  char rknn_path[4096];
  size_t n = strlen(path);
  int rc;
  pl_runner* r = (pl_runner*)calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  /* NN_accelerator.onnx -> NN_accelerator.rknn, converted by the vendor toolkit */
  snprintf(rknn_path, sizeof rknn_path, "%.*s.rknn", (int)(n > 5 ? n - 5 : n), path);
  rc = rknn_init(&r->ctx, rknn_path, 0, 0, NULL);
  if (rc != RKNN_SUCC) {
    snprintf(err, err_len,
             "rknn_init(%s) failed (%d): convert the segment with RKNN-Toolkit2 "
             "(rknn.load_onnx('%s'), rknn.build(...), rknn.export_rknn('%s'))",
             rknn_path, rc, path, rknn_path);
    free(r);
    return NULL;
  }
  if (pl_query_all(r, seg, err, err_len) != 0) {
    pl_rknn_close(r);
    return NULL;
  }
  return r;
}

static void pl_set_input(const pl_tensor* t, const void* src, void* staging, rknn_input* in) {
  memset(in, 0, sizeof *in);
  in->buf = staging;
  in->fmt = t->rank == 4 ? RKNN_TENSOR_NHWC : RKNN_TENSOR_UNDEFINED;
  if (t->rank == 4) {
    pl_nchw_to_nhwc_f32((const float*)src, t->dims, (float*)staging);
  } else {
    memcpy(staging, src, t->bytes);
  }
  in->type = RKNN_TENSOR_FLOAT32;
  in->size = (uint32_t)t->bytes;
  if (t->quantized) { /* int8 with the bridge's parameters, in place: int8 fits in the floats */
    pl_quantize_i8((const float*)staging, pl_elements(t), t->scale, t->zero_point,
                   (int8_t*)staging);
    in->type = RKNN_TENSOR_INT8;
    in->size = (uint32_t)pl_elements(t);
  }
}

static int pl_get_outputs(pl_runner* r, const pl_segment* seg, void* const* out, char* err,
                          size_t len) {
  rknn_output outs[64];
  uint32_t i;
  int rc;
  if (PIPELINE_RKNN_ZERO_COPY) {
    for (i = 0; i < r->n_out; ++i) {
      const pl_tensor* t = &pl_tensors[seg->outputs[i]];
      const rknn_tensor_attr* a = &r->out_attr[i];
      rc = rknn_mem_sync(r->ctx, r->out_mem[i], RKNN_MEMORY_SYNC_FROM_DEVICE);
      if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_mem_sync", t->name, rc);
      if (a->fmt != RKNN_TENSOR_NC1HWC2 || a->type != RKNN_TENSOR_INT8 || t->rank != 4) {
        snprintf(err, len, "'%s': zero-copy handles int8 NC1HWC2 outputs only", t->name);
        return 1;
      }
      pl_unpack_dequantize_nc1hwc2((const int8_t*)r->out_mem[i]->virt_addr, t->dims, a->dims[4],
                                   a->w_stride, a->scale, a->zp, (float*)out[i]);
    }
    return 0;
  }
  memset(outs, 0, sizeof outs);
  for (i = 0; i < r->n_out; ++i) {
    outs[i].index = i;
    outs[i].want_float = 1;
    outs[i].is_prealloc = 1;
    outs[i].buf = out[i];
    outs[i].size = (uint32_t)pl_tensors[seg->outputs[i]].bytes;
  }
  rc = rknn_outputs_get(r->ctx, r->n_out, outs, NULL);
  if (rc != RKNN_SUCC) return pl_rknn_fail(err, len, "rknn_outputs_get", NULL, rc);
  rknn_outputs_release(r->ctx, r->n_out, outs);
  for (i = 0; i < r->n_out; ++i) { /* an NHWC float output goes back to NCHW */
    const pl_tensor* t = &pl_tensors[seg->outputs[i]];
    if (r->out_attr[i].fmt == RKNN_TENSOR_NHWC && t->rank == 4) {
      {
        float* tmp = (float*)malloc(t->bytes);
        if (tmp == NULL) return snprintf(err, len, "out of memory"), 1;
        memcpy(tmp, out[i], t->bytes);
        pl_nhwc_to_nchw_f32(tmp, t->dims, (float*)out[i]);
        free(tmp);
      }
    }
  }
  return 0;
}

int pl_rknn_run(pl_runner* r, const pl_segment* seg, void* const* in, void* const* out, char* err,
                size_t err_len) {
  rknn_input ins[64];
  uint32_t i;
  int rc;
  for (i = 0; i < r->n_in; ++i) {
    pl_set_input(&pl_tensors[seg->inputs[i]], in[i], r->staging[i], &ins[i]);
    ins[i].index = i;
  }
  rc = rknn_inputs_set(r->ctx, r->n_in, ins);
  if (rc != RKNN_SUCC) return pl_rknn_fail(err, err_len, "rknn_inputs_set", NULL, rc);
  rc = rknn_run(r->ctx, NULL);
  if (rc != RKNN_SUCC) return pl_rknn_fail(err, err_len, "rknn_run", NULL, rc);
  return pl_get_outputs(r, seg, out, err, err_len);
}

void pl_rknn_close(pl_runner* r) {
  uint32_t i;
  if (r == NULL) return;
  for (i = 0; i < 64; ++i) {
    free(r->staging[i]);
    if (r->out_mem[i]) rknn_destroy_mem(r->ctx, r->out_mem[i]);
  }
  rknn_destroy(r->ctx);
  free(r);
}
