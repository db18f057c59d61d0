/* See pl_layout.h. Loops are ordered so that the packed (device) side is written or read
 * sequentially: that side is typically uncached or DMA memory. */
#include "pl_layout.h"

int8_t pl_quantize1(float x, float scale, int32_t zp) {
  /* Round half to even, as nearbyintf in the default rounding mode, without a libm call: adding
   * and subtracting 1.5 * 2^23 leaves the integer part of any |v| < 2^22. The clamp comes first
   * so that v stays in that range (and NaN becomes -128 instead of undefined behaviour). */
  float v = x / scale;
  if (!(v > -256.0f)) v = -256.0f;
  if (v > 256.0f) v = 256.0f;
  v = (v + 12582912.0f) - 12582912.0f + (float)zp;
  if (v < -128.0f) v = -128.0f;
  if (v > 127.0f) v = 127.0f;
  return (int8_t)v;
}

void pl_quantize_i8(const float* x, size_t n, float scale, int32_t zp, int8_t* q) {
  size_t i;
  for (i = 0; i < n; ++i) q[i] = pl_quantize1(x[i], scale, zp);
}

void pl_dequantize_i8(const int8_t* q, size_t n, float scale, int32_t zp, float* x) {
  size_t i;
  for (i = 0; i < n; ++i) x[i] = (float)((int32_t)q[i] - zp) * scale;
}

void pl_fake_quant(const float* x, size_t n, float scale, int32_t zp, float* out) {
  size_t i;
  for (i = 0; i < n; ++i) out[i] = (float)((int32_t)pl_quantize1(x[i], scale, zp) - zp) * scale;
}

int64_t pl_w_stride(int64_t w, int64_t align) {
  if (align <= 1) return w;
  return (w + align - 1) / align * align;
}

size_t pl_nc1hwc2_elems(const int64_t nchw[4], int64_t c2, int64_t w_stride) {
  int64_t c1 = (nchw[1] + c2 - 1) / c2;
  return (size_t)(nchw[0] * c1 * nchw[2] * w_stride * c2);
}

/* Walks the packed buffer in order; calls back with the NCHW index or -1 for padding. */
#define PL_FOR_EACH_PACKED(dims, c2, w_stride, BODY)                                \
  do {                                                                              \
    int64_t n_, c1_, h_, w_, k_, p_ = 0;                                            \
    const int64_t C_ = (dims)[1], H_ = (dims)[2], W_ = (dims)[3];                   \
    const int64_t C1_ = (C_ + (c2)-1) / (c2);                                       \
    for (n_ = 0; n_ < (dims)[0]; ++n_)                                              \
      for (c1_ = 0; c1_ < C1_; ++c1_)                                               \
        for (h_ = 0; h_ < H_; ++h_)                                                 \
          for (w_ = 0; w_ < (w_stride); ++w_)                                       \
            for (k_ = 0; k_ < (c2); ++k_, ++p_) {                                   \
              const int64_t c_ = c1_ * (c2) + k_;                                   \
              const int64_t src_ =                                                  \
                  (c_ < C_ && w_ < W_) ? ((n_ * C_ + c_) * H_ + h_) * W_ + w_ : -1; \
              BODY                                                                  \
            }                                                                       \
  } while (0)

void pl_pack_nc1hwc2_i8(const int8_t* nchw, const int64_t dims[4], int64_t c2, int64_t w_stride,
                        int8_t pad, int8_t* packed) {
  PL_FOR_EACH_PACKED(dims, c2, w_stride, { packed[p_] = src_ >= 0 ? nchw[src_] : pad; });
}

void pl_unpack_nc1hwc2_i8(const int8_t* packed, const int64_t dims[4], int64_t c2, int64_t w_stride,
                          int8_t* nchw) {
  PL_FOR_EACH_PACKED(dims, c2, w_stride, {
    if (src_ >= 0) nchw[src_] = packed[p_];
  });
}

void pl_quantize_pack_nc1hwc2(const float* nchw, const int64_t dims[4], int64_t c2,
                              int64_t w_stride, float scale, int32_t zp, int8_t* packed) {
  const int8_t pad = pl_quantize1(0.0f, scale, zp);
  PL_FOR_EACH_PACKED(dims, c2, w_stride,
                     { packed[p_] = src_ >= 0 ? pl_quantize1(nchw[src_], scale, zp) : pad; });
}

void pl_unpack_dequantize_nc1hwc2(const int8_t* packed, const int64_t dims[4], int64_t c2,
                                  int64_t w_stride, float scale, int32_t zp, float* nchw) {
  PL_FOR_EACH_PACKED(dims, c2, w_stride, {
    if (src_ >= 0) nchw[src_] = (float)((int32_t)packed[p_] - zp) * scale;
  });
}

void pl_nchw_to_nhwc_f32(const float* in, const int64_t dims[4], float* out) {
  int64_t n, c, hw;
  const int64_t C = dims[1], HW = dims[2] * dims[3];
  for (n = 0; n < dims[0]; ++n)
    for (c = 0; c < C; ++c)
      for (hw = 0; hw < HW; ++hw) out[(n * HW + hw) * C + c] = in[(n * C + c) * HW + hw];
}

void pl_nhwc_to_nchw_f32(const float* in, const int64_t dims[4], float* out) {
  int64_t n, c, hw;
  const int64_t C = dims[1], HW = dims[2] * dims[3];
  for (n = 0; n < dims[0]; ++n)
    for (c = 0; c < C; ++c)
      for (hw = 0; hw < HW; ++hw) out[(n * C + c) * HW + hw] = in[(n * HW + hw) * C + c];
}
