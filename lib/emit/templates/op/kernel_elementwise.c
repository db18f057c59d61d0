/* SIMD: SSE2 on x86-64, NEON on Arm (AArch64, or ARMv7 with -mfpu=neon); -DPT_NO_SIMD forces the
 * plain C path. Both SIMD paths compute the same formula with the same approximations. */
#if !defined(PT_NO_SIMD) && (defined(__SSE2__) || defined(_M_X64))
#define {{SYM}}_SSE2 1
#define {{SYM}}_SIMD 1
#include <emmintrin.h>
#elif !defined(PT_NO_SIMD) && (defined(__ARM_NEON) || defined(__ARM_NEON__))
#define {{SYM}}_NEON 1
#define {{SYM}}_SIMD 1
#include <arm_neon.h>
#endif

/* Scalar helpers: the plain C fallback, and the tail of the SIMD loop. */
static inline float pt_s_c(float v) { return v; }
static inline float pt_s_add(float a, float b) { return a + b; }
static inline float pt_s_sub(float a, float b) { return a - b; }
static inline float pt_s_mul(float a, float b) { return a * b; }
static inline float pt_s_div(float a, float b) { return a / b; }
static inline float pt_s_max(float a, float b) { return a > b ? a : b; }
static inline float pt_s_min(float a, float b) { return a < b ? a : b; }
static inline float pt_s_neg(float a) { return -a; }
static inline float pt_s_abs(float a) { return fabsf(a); }
static inline float pt_s_exp(float a) { return expf(a); }
static inline float pt_s_erf(float a) { return erff(a); }
static inline float pt_s_tanh(float a) { return tanhf(a); }
static inline float pt_s_gtsel(float a, float t) { return a > t ? a : 0.0f; }

static float {{sym}}_scalar(float x, const {{sym}}_params* p) {
  (void)p;
  return {{scalar_formula}};
}

#ifdef {{SYM}}_SSE2
/* SSE2 helpers. exp: Cephes range reduction + degree-5 polynomial (about 1 ulp); erf:
 * Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7); tanh from exp. Within the kit's atol of 1e-4. */
typedef __m128 pt_vec;
static inline pt_vec pt_v_load(const float* p) { return _mm_loadu_ps(p); }
static inline void pt_v_store(float* p, pt_vec v) { _mm_storeu_ps(p, v); }
static inline __m128 pt_v_c(float v) { return _mm_set1_ps(v); }
static inline __m128 pt_v_add(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
static inline __m128 pt_v_sub(__m128 a, __m128 b) { return _mm_sub_ps(a, b); }
static inline __m128 pt_v_mul(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
static inline __m128 pt_v_div(__m128 a, __m128 b) { return _mm_div_ps(a, b); }
static inline __m128 pt_v_max(__m128 a, __m128 b) { return _mm_max_ps(a, b); }
static inline __m128 pt_v_min(__m128 a, __m128 b) { return _mm_min_ps(a, b); }
static inline __m128 pt_v_neg(__m128 a) { return _mm_xor_ps(a, _mm_set1_ps(-0.0f)); }
static inline __m128 pt_v_abs(__m128 a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
static inline __m128 pt_v_gtsel(__m128 a, __m128 t) { return _mm_and_ps(_mm_cmpgt_ps(a, t), a); }
static inline __m128 pt_v_exp(__m128 x) {
  __m128 fx, tmp, y, z;
  __m128i n;
  x = _mm_min_ps(_mm_max_ps(x, _mm_set1_ps(-87.3f)), _mm_set1_ps(88.3f));
  fx = _mm_add_ps(_mm_mul_ps(x, _mm_set1_ps(1.44269504088896341f)), _mm_set1_ps(0.5f));
  tmp = _mm_cvtepi32_ps(_mm_cvttps_epi32(fx));
  fx = _mm_sub_ps(tmp, _mm_and_ps(_mm_cmpgt_ps(tmp, fx), _mm_set1_ps(1.0f)));
  x = _mm_sub_ps(x, _mm_mul_ps(fx, _mm_set1_ps(0.693359375f)));
  x = _mm_sub_ps(x, _mm_mul_ps(fx, _mm_set1_ps(-2.12194440e-4f)));
  z = _mm_mul_ps(x, x);
  y = _mm_set1_ps(1.9875691500e-4f);
  y = _mm_add_ps(_mm_mul_ps(y, x), _mm_set1_ps(1.3981999507e-3f));
  y = _mm_add_ps(_mm_mul_ps(y, x), _mm_set1_ps(8.3334519073e-3f));
  y = _mm_add_ps(_mm_mul_ps(y, x), _mm_set1_ps(4.1665795894e-2f));
  y = _mm_add_ps(_mm_mul_ps(y, x), _mm_set1_ps(1.6666665459e-1f));
  y = _mm_add_ps(_mm_mul_ps(y, x), _mm_set1_ps(5.0000001201e-1f));
  y = _mm_add_ps(_mm_add_ps(_mm_mul_ps(y, z), x), _mm_set1_ps(1.0f));
  n = _mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(fx), _mm_set1_epi32(127)), 23);
  return _mm_mul_ps(y, _mm_castsi128_ps(n));
}
static inline __m128 pt_v_erf(__m128 x) {
  __m128 sign = _mm_and_ps(x, _mm_set1_ps(-0.0f));
  __m128 a = pt_v_abs(x);
  __m128 t = _mm_div_ps(_mm_set1_ps(1.0f), _mm_add_ps(_mm_set1_ps(1.0f),
                                                      _mm_mul_ps(_mm_set1_ps(0.3275911f), a)));
  __m128 poly = _mm_set1_ps(1.061405429f);
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(-1.453152027f));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(1.421413741f));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(-0.284496736f));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(0.254829592f));
  poly = _mm_mul_ps(poly, t);
  __m128 y = _mm_sub_ps(_mm_set1_ps(1.0f), _mm_mul_ps(poly, pt_v_exp(pt_v_neg(_mm_mul_ps(a, a)))));
  return _mm_or_ps(y, sign);
}
static inline __m128 pt_v_tanh(__m128 x) {
  __m128 e = pt_v_exp(_mm_mul_ps(x, _mm_set1_ps(2.0f)));
  return _mm_sub_ps(_mm_set1_ps(1.0f),
                    _mm_div_ps(_mm_set1_ps(2.0f), _mm_add_ps(e, _mm_set1_ps(1.0f))));
}

#elif defined({{SYM}}_NEON)
/* NEON helpers: the same algorithms as the SSE2 path (exp: Cephes; erf: Abramowitz-Stegun
 * 7.1.26; tanh from exp). ARMv7 has no vector divide: reciprocal estimate + 2 Newton steps. */
typedef float32x4_t pt_vec;
static inline pt_vec pt_v_load(const float* p) { return vld1q_f32(p); }
static inline void pt_v_store(float* p, pt_vec v) { vst1q_f32(p, v); }
static inline pt_vec pt_v_c(float v) { return vdupq_n_f32(v); }
static inline pt_vec pt_v_add(pt_vec a, pt_vec b) { return vaddq_f32(a, b); }
static inline pt_vec pt_v_sub(pt_vec a, pt_vec b) { return vsubq_f32(a, b); }
static inline pt_vec pt_v_mul(pt_vec a, pt_vec b) { return vmulq_f32(a, b); }
#if defined(__aarch64__)
static inline pt_vec pt_v_div(pt_vec a, pt_vec b) { return vdivq_f32(a, b); }
#else
static inline pt_vec pt_v_div(pt_vec a, pt_vec b) {
  pt_vec r = vrecpeq_f32(b);
  r = vmulq_f32(vrecpsq_f32(b, r), r);
  r = vmulq_f32(vrecpsq_f32(b, r), r);
  return vmulq_f32(a, r);
}
#endif
static inline pt_vec pt_v_max(pt_vec a, pt_vec b) { return vmaxq_f32(a, b); }
static inline pt_vec pt_v_min(pt_vec a, pt_vec b) { return vminq_f32(a, b); }
static inline pt_vec pt_v_neg(pt_vec a) { return vnegq_f32(a); }
static inline pt_vec pt_v_abs(pt_vec a) { return vabsq_f32(a); }
static inline pt_vec pt_v_gtsel(pt_vec a, pt_vec t) {
  return vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(a, t), vreinterpretq_u32_f32(a)));
}
static inline pt_vec pt_v_exp(pt_vec x) {
  pt_vec fx, tmp, y, z;
  int32x4_t n;
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.3f));
  fx = vaddq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)), vdupq_n_f32(0.5f));
  tmp = vcvtq_f32_s32(vcvtq_s32_f32(fx));
  fx = vsubq_f32(tmp, vreinterpretq_f32_u32(vandq_u32(vcgtq_f32(tmp, fx),
                                                      vreinterpretq_u32_f32(vdupq_n_f32(1.0f)))));
  x = vsubq_f32(x, vmulq_f32(fx, vdupq_n_f32(0.693359375f)));
  x = vsubq_f32(x, vmulq_f32(fx, vdupq_n_f32(-2.12194440e-4f)));
  z = vmulq_f32(x, x);
  y = vdupq_n_f32(1.9875691500e-4f);
  y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(1.3981999507e-3f));
  y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(8.3334519073e-3f));
  y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(4.1665795894e-2f));
  y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(1.6666665459e-1f));
  y = vaddq_f32(vmulq_f32(y, x), vdupq_n_f32(5.0000001201e-1f));
  y = vaddq_f32(vaddq_f32(vmulq_f32(y, z), x), vdupq_n_f32(1.0f));
  n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(fx), vdupq_n_s32(127)), 23);
  return vmulq_f32(y, vreinterpretq_f32_s32(n));
}
static inline pt_vec pt_v_erf(pt_vec x) {
  uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
  pt_vec a = vabsq_f32(x);
  pt_vec t = pt_v_div(vdupq_n_f32(1.0f),
                      vaddq_f32(vdupq_n_f32(1.0f), vmulq_f32(vdupq_n_f32(0.3275911f), a)));
  pt_vec poly = vdupq_n_f32(1.061405429f);
  pt_vec y;
  poly = vaddq_f32(vmulq_f32(poly, t), vdupq_n_f32(-1.453152027f));
  poly = vaddq_f32(vmulq_f32(poly, t), vdupq_n_f32(1.421413741f));
  poly = vaddq_f32(vmulq_f32(poly, t), vdupq_n_f32(-0.284496736f));
  poly = vaddq_f32(vmulq_f32(poly, t), vdupq_n_f32(0.254829592f));
  poly = vmulq_f32(poly, t);
  y = vsubq_f32(vdupq_n_f32(1.0f), vmulq_f32(poly, pt_v_exp(vnegq_f32(vmulq_f32(a, a)))));
  return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(y), sign));
}
static inline pt_vec pt_v_tanh(pt_vec x) {
  pt_vec e = pt_v_exp(vmulq_f32(x, vdupq_n_f32(2.0f)));
  return vsubq_f32(vdupq_n_f32(1.0f), pt_v_div(vdupq_n_f32(2.0f), vaddq_f32(e, vdupq_n_f32(1.0f))));
}
#endif

#ifdef {{SYM}}_SIMD
static pt_vec {{sym}}_vector(pt_vec x, const {{sym}}_params* p) {
  (void)p;
  return {{vector_formula}};
}
#endif

size_t {{sym}}_scratch_size(const {{sym}}_params* params, const pt_tensor* inputs,
                            int32_t num_inputs) {
  (void)params;
  (void)inputs;
  (void)num_inputs;
  return 0; /* elementwise: no scratch */
}

int32_t {{sym}}_compute(const {{sym}}_params* params, const pt_tensor* inputs, int32_t num_inputs,
                        pt_tensor* outputs, int32_t num_outputs, void* scratch) {
  const float* x;
  float* y;
  int64_t n, i = 0;
  (void)scratch;
  if (num_inputs < 1 || num_inputs > {{max_inputs}} || num_outputs != 1) return PT_BAD_ARGUMENT;
  if (inputs[0].dtype != 1 || outputs[0].dtype != 1 || inputs[0].data == NULL) return PT_BAD_ARGUMENT;
  n = {{sym}}_count(&inputs[0]);
  if ({{sym}}_count(&outputs[0]) != n) return PT_BAD_ARGUMENT;
  x = (const float*)inputs[0].data;
  y = (float*)outputs[0].data;
{{bias_block}}#ifdef {{SYM}}_SIMD
  for (; i + 4 <= n; i += 4) pt_v_store(y + i, {{sym}}_vector(pt_v_load(x + i), params));
#endif
  for (; i < n; ++i) y[i] = {{sym}}_scalar(x[i], params);
  return PT_OK;
}
