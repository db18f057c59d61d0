#include "lib/emit/scaffold_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "lib/emit/c_names.h"
#include "lib/emit/embedded_files.h"
#include "lib/emit/kit.h"
#include "lib/io/atomic_file.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/shapes_by_execution.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"
#include "lib/util/sha256.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

using util::ClosestNames;
using util::Join;
using util::Sha256File;
using util::StartsWith;

namespace fs = std::filesystem;
using shape::CustomOpSpec;

// A kernel porttool can write. `formula` is one expression in `x` and `p->attr`, written with
// @-functions that expand to the scalar (pt_s_*), the SIMD (pt_v_*: SSE2 or NEON) or the numpy
// (_*, RKNN toolkit class) helpers, so all paths compute the same formula. Constants go through
// @c().
struct KnownKernel {
  const char* op;
  const char* formula;
  std::vector<std::pair<const char*, float>> float_attrs;  // name, ONNX default
  bool bias = false;                                       // optional input 1 added along last axis
};

const std::vector<KnownKernel>& KnownKernels() {
  static const std::vector<KnownKernel> kernels = {
      {"Gelu",
       "@mul(@mul(@c(0.5f), x), @add(@c(1.0f), @erf(@mul(x, @c(0.70710678118654752f)))))",
       {}},
      {"FastGelu",
       "@mul(@mul(@c(0.5f), x), @add(@c(1.0f), @tanh(@mul(@c(0.7978845608028654f), @add(x, "
       "@mul(@c(0.044715f), @mul(x, @mul(x, x))))))))",
       {},
       true},
      {"QuickGelu", "@div(x, @add(@c(1.0f), @exp(@mul(@c(-p->alpha), x))))", {{"alpha", 1.702f}}},
      {"HardSwish",
       "@mul(x, @max(@c(0.0f), @min(@c(1.0f), @add(@mul(x, @c(1.0f / 6.0f)), @c(0.5f)))))",
       {}},
      {"HardSigmoid",
       "@max(@c(0.0f), @min(@c(1.0f), @add(@mul(@c(p->alpha), x), @c(p->beta))))",
       {{"alpha", 0.2f}, {"beta", 0.5f}}},
      {"Relu", "@max(x, @c(0.0f))", {}},
      {"LeakyRelu",
       "@add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @min(x, @c(0.0f))))",
       {{"alpha", 0.01f}}},
      {"Elu",
       "@add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @sub(@exp(@min(x, @c(0.0f))), @c(1.0f))))",
       {{"alpha", 1.0f}}},
      {"Selu",
       "@mul(@c(p->gamma), @add(@max(x, @c(0.0f)), @mul(@c(p->alpha), @sub(@exp(@min(x, "
       "@c(0.0f))), @c(1.0f)))))",
       {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}},
      {"Sigmoid", "@div(@c(1.0f), @add(@c(1.0f), @exp(@neg(x))))", {}},
      {"Tanh", "@tanh(x)", {}},
      {"Softsign", "@div(x, @add(@c(1.0f), @abs(x)))", {}},
      {"Exp", "@exp(x)", {}},
      {"Erf", "@erf(x)", {}},
      {"Abs", "@abs(x)", {}},
      {"Neg", "@neg(x)", {}},
      {"ThresholdedRelu", "@gtsel(x, @c(p->alpha))", {{"alpha", 1.0f}}},
  };
  return kernels;
}

const KnownKernel* FindKnown(const std::string& op_type) {
  for (const auto& k : KnownKernels()) {
    if (ToLower(k.op) == ToLower(op_type)) return &k;
  }
  return nullptr;
}

std::string Expand(std::string formula, const std::string& prefix) {
  for (size_t pos; (pos = formula.find('@')) != std::string::npos;) {
    formula.replace(pos, 1, prefix);
  }
  return formula;
}

std::string Fill(const std::string& text, const ScaffoldVars& vars) {
  return FillTemplate(text, vars);
}

int32_t TypeOf(const ir::GraphView& view, const std::string& name) {
  for (const auto* list :
       {&view.graph().input(), &view.graph().value_info(), &view.graph().output()}) {
    for (const auto& vi : *list) {
      if (vi.name() == name) return vi.type().tensor_type().elem_type();
    }
  }
  if (const auto* init = view.Initializer(name)) return init->data_type();
  return 0;
}

shape::CustomOpTensor DescribeTensor(const ir::GraphView& view, const std::string& name,
                                     const std::string& role) {
  shape::CustomOpTensor t;
  t.name = role;
  t.dtype = TypeOf(view, name);
  if (t.dtype == 0) t.dtype = onnx::TensorProto::FLOAT;
  for (const auto* list :
       {&view.graph().input(), &view.graph().value_info(), &view.graph().output()}) {
    for (const auto& vi : *list) {
      if (vi.name() != name) continue;
      if (auto dims = ir::StaticShape(vi.type())) t.shape = *dims;
      if (vi.type().tensor_type().has_shape()) t.rank = vi.type().tensor_type().shape().dim_size();
    }
  }
  if (const auto* init = view.Initializer(name)) {
    t.shape.assign(init->dims().begin(), init->dims().end());
    t.rank = init->dims_size();
  }
  return t;
}

nlohmann::json AttributeValue(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::INT:
      return a.i();
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    default:
      ThrowBadInput("attribute '{}' has type {}, which scaffold-op cannot pass to a C kernel",
                    a.name(), static_cast<int>(a.type()));
  }
}

const onnx::NodeProto& FindNode(const io::Model& model, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& node : model.proto.graph().node()) {
    if (node.name() == name) return node;
    names.push_back(node.name());
  }
  auto close = ClosestNames(name, names);
  ThrowUsage("no node '{}' in the model's main graph{}", name,
             close.empty() ? "" : " (did you mean " + Join(close, ", ") + "?)");
}

constexpr const char* kKernelHeader =
    R"tpl(/* {{Op}} kernel ({{domain}}::{{Op}}), scaffolded by porttool scaffold-op from node {{node}}
 * of {{model}} (sha256 {{sha256}}).
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
)tpl";

constexpr const char* kKernelCommon =
    R"tpl(/* {{Op}} kernel, scaffolded by porttool scaffold-op (source sha256 {{sha256}}). */
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
      return "{{domain}}::{{Op}}: kernel not implemented yet (write it in kernel/{{sym}}.c)";
    case PT_BAD_ARGUMENT:
      return "{{domain}}::{{Op}}: bad argument (input count, dtype, shape or attribute)";
    default: return "unknown status";
  }
}

static inline int64_t {{sym}}_count(const pt_tensor* t) {
  int64_t n = 1;
  int32_t i;
  for (i = 0; i < t->rank; ++i) n *= t->dims[i];
  return n;
}
)tpl";

constexpr const char* kElementwiseBody = R"tpl(
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
)tpl";

// FastGelu's optional bias: y = x + bias (bias along the last axis) first, then the activation
// runs in place on y.
constexpr const char* kBiasBlock = R"tpl(  if (num_inputs > 1 && inputs[1].data != NULL) {
    const float* b = (const float*)inputs[1].data;
    int64_t len = {{sym}}_count(&inputs[1]), j;
    if (inputs[1].dtype != 1 || inputs[0].rank < 1 || len != inputs[0].dims[inputs[0].rank - 1])
      return PT_BAD_ARGUMENT;
    for (j = 0; j < n; ++j) y[j] = x[j] + b[j % len];
    x = y;
  }
)tpl";

constexpr const char* kSkeletonBody = R"tpl(
/* No reference implementation is known to porttool for {{domain}}::{{Op}}: write it here.
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
)tpl";

constexpr const char* kGlue =
    R"tpl(/* porttool custom-op ABI entry for {{domain}}::{{Op}}: what `porttool --custom-op` loads. */
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

static const pt_custom_op {{sym}}_op = {PT_CUSTOM_OP_ABI_VERSION, "{{domain}}", "{{Op}}",
                                        {{sym}}_abi_scratch, {{sym}}_abi_compute,
                                        {{sym}}_status_string};

PT_EXPORT const pt_custom_op* porttool_custom_op_v1(void) { return &{{sym}}_op; }
)tpl";

constexpr const char* kTestProgram =
    R"tpl(/* Runs the {{Op}} kernel on its test kit (test/kit/kit.h) and prints "N passed, N failed".
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
)tpl";

constexpr const char* kCMake =
    R"tpl(# {{domain}}::{{Op}} custom-op package, scaffolded by porttool scaffold-op from node {{node}} of
# {{model}} (sha256 {{sha256}}). The kernel, the porttool ABI library and the kit tests always
# build; the ONNX schema builds when libonnx is found.
cmake_minimum_required(VERSION 3.16)
project(porttool_{{sym}} C CXX)
set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_C_VISIBILITY_PRESET hidden)
enable_testing()

add_library({{sym}}_kernel STATIC kernel/{{sym}}.c)
target_include_directories({{sym}}_kernel PUBLIC kernel)
find_library(PT_LIBM m)
if(PT_LIBM)
  target_link_libraries({{sym}}_kernel PUBLIC ${PT_LIBM})
endif()

# libporttool_{{sym}}.so: `porttool run|compare|check ... --custom-op <this dir>` loads it.
add_library(porttool_{{sym}} SHARED kernel/{{sym}}_porttool.c)
target_link_libraries(porttool_{{sym}} PRIVATE {{sym}}_kernel)

add_executable({{sym}}_test test/{{sym}}_test.c)
target_link_libraries({{sym}}_test PRIVATE {{sym}}_kernel)
add_test(NAME {{sym}}_kit COMMAND {{sym}}_test)
add_executable({{sym}}_test_scalar test/{{sym}}_test.c kernel/{{sym}}.c)
target_include_directories({{sym}}_test_scalar PRIVATE kernel)
target_compile_definitions({{sym}}_test_scalar PRIVATE PT_NO_SIMD)
if(PT_LIBM)
  target_link_libraries({{sym}}_test_scalar PRIVATE ${PT_LIBM})
endif()
add_test(NAME {{sym}}_kit_scalar COMMAND {{sym}}_test_scalar)

find_package(ONNX QUIET)
if(ONNX_FOUND OR TARGET onnx)
  find_package(Protobuf REQUIRED)
  add_executable({{sym}}_schema_test schema/{{sym}}_schema.cc schema/{{sym}}_schema_test.cc)
  target_link_libraries({{sym}}_schema_test PRIVATE onnx onnx_proto protobuf::libprotobuf)
  add_test(NAME {{sym}}_schema COMMAND {{sym}}_schema_test)
else()
  message(STATUS "libonnx not found: schema/{{sym}}_schema.cc not built")
endif()
)tpl";

constexpr const char* kSchema =
    R"tpl(// ONNX schema for {{domain}}::{{Op}}, scaffolded by porttool scaffold-op (source sha256
// {{sha256}}). Call Register{{Sym}}Schema() once before onnx::checker::check_model or
// onnx::shape_inference::InferShapes so both accept the op and shapes flow through it.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

void Register{{Sym}}Schema() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count("{{domain}}") == 0) ranges.AddDomainToVersion("{{domain}}", 1, {{version}});
  if (onnx::OpSchemaRegistry::Schema("{{Op}}", {{version}}, "{{domain}}") != nullptr) return;
  onnx::OpSchema schema;
  schema.SetName("{{Op}}").SetDomain("{{domain}}").SinceVersion({{version}});
{{schema_io}}  schema.TypeAndShapeInferenceFunction([](onnx::InferenceContext& ctx) {
{{schema_infer}}  });
  onnx::RegisterSchema(std::move(schema));
}
)tpl";

constexpr const char* kSchemaTest =
    R"tpl(// Registers the {{Op}} schema, builds a one-node model with the shapes of node {{node}}, and
// checks that the ONNX checker accepts it and shape inference infers the output shape.
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

void Register{{Sym}}Schema();

int main() {
  Register{{Sym}}Schema();
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  opset = model.add_opset_import();
  opset->set_domain("{{domain}}");
  opset->set_version({{version}});
  auto* g = model.mutable_graph();
  g->set_name("schema_test");
  auto* node = g->add_node();
  node->set_op_type("{{Op}}");
  node->set_domain("{{domain}}");
{{test_inputs}}  node->add_output("y");
  int failed = 0;
  const onnx::TypeProto* inferred = nullptr;
  try {
    onnx::shape_inference::InferShapes(model);
    for (const auto& vi : g->value_info()) {
      if (vi.name() == "y") inferred = &vi.type();
    }
    if (inferred == nullptr) throw std::runtime_error("no type inferred for the output");
    auto* out = g->add_output();
    out->set_name("y");
    *out->mutable_type() = *inferred;
    g->clear_value_info();
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::printf("schema: %s\n", e.what());
    failed = 1;
  }
  const std::vector<long long> want = {{{want_dims}}};
  if (!failed) {
    const auto& shape = g->output(0).type().tensor_type().shape();
    failed = shape.dim_size() != static_cast<int>(want.size());
    for (int i = 0; !failed && i < shape.dim_size(); ++i) {
      failed = shape.dim(i).dim_value() != want[i];
    }
    std::printf("inferred output rank %d\n", shape.dim_size());
  }
  std::printf("%d passed, %d failed\n", 1 - failed, failed);
  return failed;
}
)tpl";

constexpr const char* kReadme = R"tpl(# {{domain}}::{{Op}} custom-op package

Scaffolded by `porttool scaffold-op` from node `{{node}}` of `{{model}}` (sha256 `{{sha256}}`).
`op.json` describes the op; every file here follows from it.

- `kernel/{{sym}}.{h,c}`: the C99 kernel (NCHW float32, no heap, SSE2 / NEON paths + plain C
  fallback; {{kernel_state}}).
- `kernel/{{sym}}_porttool.c`: the porttool custom-op ABI entry (`porttool_custom_op_v1`).
- `schema/{{sym}}_schema.cc`: the ONNX OpSchema with shape inference, registered through libonnx.
- `test/kit/`: the op's test kit (ONNX backend layout + `kit.h`); `test/{{sym}}_test.c` runs the
  kernel on it and prints `N passed, N failed`.
{{adapters_doc}}
Build and test:

    cmake -S . -B build && cmake --build build && ctest --test-dir build

Run a model with this kernel in porttool's executor, or compare it against the built-in one:

    porttool run MODEL --custom-op . --random-inputs
    porttool compare MODEL MODEL --custom-op .   # MODEL_B uses this kernel
{{adapters_build}})tpl";

using Vars = std::vector<std::pair<std::string, std::string>>;

std::string CFloat(double v) { return fmt::format("{:a}f", static_cast<float>(v)); }

// The params struct, its defaults (the source node's values) and the attribute setters.
void ParamCode(const CustomOpSpec& spec, Vars& vars) {
  std::string fields, defaults, setters;
  for (const auto& a : spec.attributes) {
    std::string f = SanitizeCIdentifier(a.name);
    std::string check = fmt::format(
        "  if (strcmp(attr->name, {}) == 0) {{\n    if (attr->type != PT_ATTR_{}) return "
        "PT_BAD_ARGUMENT;\n",
        CStringLiteral(a.name), ToUpper(shape::AttributeTypeName(a.type)));
    const auto& d = a.default_value;
    switch (a.type) {
      case onnx::AttributeProto::FLOAT:
        fields += fmt::format("  float {};\n", f);
        if (d.is_number()) defaults += fmt::format("  p.{} = {};\n", f, CFloat(d.get<double>()));
        setters += check + fmt::format("    params->{} = attr->f;\n", f);
        break;
      case onnx::AttributeProto::INT:
        fields += fmt::format("  int64_t {};\n", f);
        if (d.is_number()) defaults += fmt::format("  p.{} = {}LL;\n", f, d.get<int64_t>());
        setters += check + fmt::format("    params->{} = attr->i;\n", f);
        break;
      case onnx::AttributeProto::STRING:
        fields += fmt::format("  const char* {};\n", f);
        if (d.is_string())
          defaults += fmt::format("  p.{} = {};\n", f, CStringLiteral(d.get<std::string>()));
        setters += check + fmt::format("    params->{} = attr->s;\n", f);
        break;
      default: {
        bool ints = a.type == onnx::AttributeProto::INTS;
        fields +=
            fmt::format("  const {}* {};\n  int64_t {}_count;\n", ints ? "int64_t" : "float", f, f);
        std::vector<std::string> items;
        for (const auto& v : d) {
          items.push_back(ints ? fmt::format("{}LL", v.get<int64_t>()) : CFloat(v.get<double>()));
        }
        if (!items.empty()) {
          defaults += fmt::format(
              "  {{\n    static const {} d[{}] = {{{}}};\n    p.{} = d;\n    "
              "p.{}_count = {};\n  }}\n",
              ints ? "int64_t" : "float", items.size(), Join(items, ", "), f, f, items.size());
        }
        setters += check + fmt::format(
                               "    params->{} = attr->{};\n    params->{}_count = "
                               "attr->count;\n",
                               f, ints ? "ints" : "floats", f);
      }
    }
    setters += "    return PT_OK;\n  }\n";
  }
  if (fields.empty()) fields = "  int32_t unused; /* the op has no attributes */\n";
  vars.push_back({"param_fields", fields});
  vars.push_back({"param_defaults", defaults});
  vars.push_back({"param_setters", setters});
}

std::string KernelSource(const CustomOpSpec& spec, const Vars& vars) {
  std::string body;
  if (const KnownKernel* known = FindKnown(spec.op_type)) {
    Vars v = vars;
    v.push_back({"scalar_formula", Expand(known->formula, "pt_s_")});
    v.push_back({"vector_formula", Expand(known->formula, "pt_v_")});
    v.push_back({"bias_block", known->bias ? Fill(kBiasBlock, vars) : ""});
    body = Fill(kElementwiseBody, v);
  } else {
    std::string doc;
    for (const auto& t : spec.inputs) {
      doc += fmt::format("\n *   {} {} rank {}{}", t.name, ir::DtypeName(t.dtype), t.rank,
                         t.optional ? " (optional)" : "");
    }
    Vars v = vars;
    v.push_back({"io_doc", doc});
    body = Fill(kSkeletonBody, v);
  }
  return Fill(kKernelCommon, vars) + body;
}

std::string SchemaSource(const CustomOpSpec& spec, Vars vars) {
  std::string io, infer;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    io += fmt::format(
        "  schema.Input({}, \"{}\", \"\", \"T{}\", onnx::OpSchema::{});\n"
        "  schema.TypeConstraint(\"T{}\", {{\"tensor({})\"}}, \"\");\n",
        i, spec.inputs[i].name, i, spec.inputs[i].optional ? "Optional" : "Single", i,
        ir::DtypeName(spec.inputs[i].dtype) == "float32" ? "float"
                                                         : ir::DtypeName(spec.inputs[i].dtype));
  }
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const auto& o = spec.outputs[i];
    io += fmt::format(
        "  schema.Output({}, \"{}\", \"\", \"O{}\");\n"
        "  schema.TypeConstraint(\"O{}\", {{\"tensor({})\"}}, \"\");\n",
        i, o.name, i, i, ir::DtypeName(o.dtype) == "float32" ? "float" : ir::DtypeName(o.dtype));
    if (spec.shape_rule == "same_as_input") {
      infer += fmt::format(
          "    onnx::propagateElemTypeFromInputToOutput(ctx, {0}, {1});\n"
          "    if (onnx::hasInputShape(ctx, {0})) onnx::propagateShapeFromInputToOutput(ctx, {0}, "
          "{1});\n",
          spec.shape_input, i);
      continue;
    }
    infer += fmt::format("    onnx::updateOutputElemType(ctx, {}, {});\n", i, o.dtype);
    infer += fmt::format(
        "    {{\n      auto* s = onnx::getOutputShape(ctx, {});\n      s->clear_dim();\n", i);
    for (int64_t d : o.shape) infer += fmt::format("      s->add_dim()->set_dim_value({});\n", d);
    infer += "    }\n";
  }
  for (const auto& a : spec.attributes) {
    io += fmt::format("  schema.Attr(\"{}\", \"\", onnx::AttributeProto::{}, false);\n", a.name,
                      ToUpper(shape::AttributeTypeName(a.type)));
  }
  if (infer.empty()) infer = "    (void)ctx;\n";
  vars.push_back({"schema_io", io});
  vars.push_back({"schema_infer", infer});
  return Fill(kSchema, vars);
}

std::string SchemaTestSource(const CustomOpSpec& spec, Vars vars) {
  std::string inputs;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& t = spec.inputs[i];
    if (t.optional && t.shape.empty()) continue;
    inputs += fmt::format(
        "  node->add_input(\"x{0}\");\n  {{\n    auto* tt = g->add_input();\n    "
        "tt->set_name(\"x{0}\");\n"
        "    auto* type = tt->mutable_type()->mutable_tensor_type();\n    "
        "type->set_elem_type({1});\n"
        "    auto* shape = type->mutable_shape();\n",
        i, t.dtype);
    for (int64_t d : t.shape)
      inputs += fmt::format("    shape->add_dim()->set_dim_value({});\n", d);
    inputs += "  }\n";
  }
  std::vector<std::string> dims;
  for (int64_t d : spec.outputs[0].shape) dims.push_back(std::to_string(d));
  vars.push_back({"test_inputs", inputs});
  vars.push_back({"want_dims", Join(dims, ", ")});
  return Fill(kSchemaTest, vars);
}

std::string TestSource(const CustomOpSpec& spec, const std::string& kit_prefix, int num_inputs,
                       Vars vars) {
  if (!FindKnown(spec.op_type) || kit_prefix.empty()) {
    return Fill(
        "/* The {{Op}} kernel is a skeleton: this test fails until kernel/{{sym}}.c is written. "
        "*/\n"
        "#include <stdio.h>\n#include <string.h>\n\n#include \"../kernel/{{sym}}.h\"\n\n"
        "int main(void) {\n  pt_tensor inputs[{{max_inputs}}], outputs[{{num_outputs}}];\n"
        "  {{sym}}_params params = {{sym}}_default_params();\n  int32_t status;\n"
        "  memset(inputs, 0, sizeof inputs);\n  memset(outputs, 0, sizeof outputs);\n"
        "  status = {{sym}}_compute(&params, inputs, {{max_inputs}}, outputs, {{num_outputs}}, "
        "NULL);\n"
        "  printf(\"%s\\n\", {{sym}}_status_string(status));\n"
        "  printf(\"%d passed, %d failed\\n\", status == PT_OK, status != PT_OK);\n"
        "  return status == PT_OK ? 0 : 1;\n}\n",
        vars);
  }
  std::string setup;
  std::string kit_upper = ToUpper(kit_prefix);
  for (int i = 0; i < num_inputs; ++i) {
    setup += fmt::format(
        "  inputs[{0}].dtype = 1;\n  inputs[{0}].rank = {1}_INPUT_{0}_RANK;\n"
        "  inputs[{0}].dims = {2}_input_{0}_dims;\n  inputs[{0}].data = (void*){2}_input_{0};\n",
        i, kit_upper, kit_prefix);
  }
  vars.push_back({"KIT", kit_upper});
  vars.push_back({"kit", kit_prefix});
  vars.push_back({"input_setup", setup});
  return Fill(kTestProgram, vars);
}

Vars SpecVars(const CustomOpSpec& spec) {
  size_t required = 0;
  for (const auto& t : spec.inputs) required += t.optional ? 0 : 1;
  std::string sym_camel = spec.symbol;
  sym_camel[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sym_camel[0])));
  return {{"sym", spec.symbol},
          {"SYM", ToUpper(spec.symbol)},
          {"Sym", sym_camel},
          {"Op", spec.op_type},
          {"domain", spec.domain},
          {"version", std::to_string(spec.since_version)},
          {"node", spec.source_node},
          {"model", spec.source_model},
          {"sha256", spec.source_sha256},
          {"min_inputs", std::to_string(required)},
          {"max_inputs", std::to_string(spec.inputs.size())},
          {"num_outputs", std::to_string(spec.outputs.size())},
          {"kernel_state", FindKnown(spec.op_type) ? "a working implementation"
                                                   : "a skeleton returning PT_NOT_IMPLEMENTED"}};
}

// The op's kit goes to test/kit/; the executor must be able to run the node (a skeleton op has
// no reference numerics, so no kit).
std::string WriteKit(const io::Model& model, const ScaffoldOptions& options,
                     const fs::path& out_dir, ScaffoldResult& result, int& num_inputs) {
  fs::path staging = out_dir / "test" / ".kit-staging";
  fs::remove_all(staging);
  KitOptions kit_options;
  kit_options.select = KitOptions::Select::kNode;
  kit_options.name = options.node;
  kit_options.seed = options.seed;
  std::vector<KitSummary> kits;
  try {
    kits = MakeKits(model, kit_options, staging);
  } catch (const Error& e) {
    fs::remove_all(staging);
    result.notes.push_back(std::string("no test kit: ") + e.what());
    return "";
  }
  fs::remove_all(out_dir / "test" / "kit");
  fs::rename(staging / kits.at(0).dir, out_dir / "test" / "kit");
  fs::remove_all(staging);
  num_inputs = 0;
  for (const auto& e : fs::directory_iterator(out_dir / "test" / "kit" / "test_data_set_0")) {
    if (StartsWith(e.path().filename().string(), "input_")) ++num_inputs;
  }
  return SanitizeCIdentifier(ToLower(kits[0].dir));
}

}  // namespace

ScaffoldVars TemplateVarsFor(const CustomOpSpec& spec) {
  Vars vars = SpecVars(spec);
  ParamCode(spec, vars);
  return vars;
}

bool HasKnownKernel(const std::string& op_type) { return FindKnown(op_type) != nullptr; }

CustomOpSpec DescribeNode(const io::Model& source, const std::string& node_name) {
  const onnx::NodeProto& original = FindNode(source, node_name);
  io::Model model = source;
  shape::InferShapes(model);
  try {
    runtime::CompleteShapesByExecution(model);
  } catch (const Error&) {
    // Shapes stay as inference left them; the op.json then records ranks without dims.
  }
  ir::GraphView view(model.proto.graph());
  CustomOpSpec spec;
  spec.domain = original.domain().empty() ? "ai.onnx" : original.domain();
  spec.op_type = original.op_type();
  for (const auto& op : model.proto.opset_import()) {
    std::string d = op.domain().empty() ? "ai.onnx" : op.domain();
    if (d == spec.domain) spec.since_version = static_cast<int>(op.version());
  }
  spec.symbol = SanitizeCIdentifier(ToLower(spec.op_type));
  const KnownKernel* known = FindKnown(spec.op_type);
  spec.kernel = known ? spec.symbol : "skeleton";
  for (int i = 0; i < original.input_size(); ++i) {
    auto t = DescribeTensor(view, original.input(i), i == 0 ? "X" : fmt::format("input_{}", i));
    t.optional = original.input(i).empty() || (known && known->bias && i == 1);
    spec.inputs.push_back(std::move(t));
  }
  if (known && known->bias && spec.inputs.size() == 1) {
    spec.inputs.push_back({"bias", onnx::TensorProto::FLOAT, 1, {}, true});
  }
  for (int i = 0; i < original.output_size(); ++i) {
    spec.outputs.push_back(
        DescribeTensor(view, original.output(i), i == 0 ? "Y" : fmt::format("output_{}", i)));
  }
  for (const auto& a : original.attribute()) {
    spec.attributes.push_back({a.name(), a.type(), AttributeValue(a)});
  }
  if (known) {
    for (const auto& [name, value] : known->float_attrs) {
      bool present = std::any_of(spec.attributes.begin(), spec.attributes.end(),
                                 [&name = name](const auto& a) { return a.name == name; });
      if (!present) spec.attributes.push_back({name, onnx::AttributeProto::FLOAT, value});
    }
  }
  std::sort(spec.attributes.begin(), spec.attributes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  const auto& in0 = spec.inputs.front();
  bool elementwise = known || (spec.outputs.size() == 1 && spec.outputs[0].shape == in0.shape &&
                               spec.outputs[0].dtype == in0.dtype && !in0.shape.empty());
  // An output whose shape neither inference nor an executor run could see (an op unknown to
  // both) gets input 0's shape: a stated assumption in op.json, to edit, never a silent rank 0.
  bool unknown = std::any_of(spec.outputs.begin(), spec.outputs.end(),
                             [](const auto& t) { return t.rank < 0; });
  spec.shape_rule = elementwise || unknown ? "same_as_input" : "static";
  spec.source_model = source.path.filename().string();
  spec.source_sha256 = source.path.empty() ? "" : Sha256File(source.path);
  spec.source_node = original.name();
  return spec;
}

ScaffoldResult ScaffoldOp(const io::Model& model, const ScaffoldOptions& options,
                          const fs::path& out_dir) {
  ScaffoldResult result;
  result.spec = DescribeNode(model, options.node);
  for (const auto& out : result.spec.outputs) {
    if (out.rank < 0) {
      result.notes.push_back(fmt::format(
          "the shape of output {} is unknown: op.json assumes it has the shape and type of input "
          "0 (edit shape_rule if not)",
          out.name));
    }
  }
  const CustomOpSpec& spec = result.spec;
  Vars vars = TemplateVarsFor(spec);
  fs::create_directories(out_dir / "test");
  int num_inputs = 0;
  std::string kit_prefix = FindKnown(spec.op_type)
                               ? WriteKit(model, options, out_dir, result, num_inputs)
                               : std::string();
  const KnownKernel* known = FindKnown(spec.op_type);
  std::map<std::string, std::string> adapter_files;
  std::string adapter_cmake, adapters_doc, adapters_build;
  static const std::map<std::string, std::string> kAdapterDoc = {
      {"ort",
       "- `ort/`: ONNX Runtime custom-op library (`RegisterCustomOps`, C API), "
       "`-DONNXRUNTIME_ROOT=`; without it, compile-checked against `ort/stub/`."},
      {"rknn",
       "- `rknn/`: RKNN runtime custom op (`rknn_custom_op` compute callback), rknn_server "
       "plugin, RKNN-Toolkit2 Python class; `-DRKNN_SDK_ROOT=`."},
      {"tensorrt", "- `tensorrt/`: TensorRT IPluginV3 plugin and creator; `-DTENSORRT_ROOT=`."},
      {"tflm", "- `tflm/`: TFLite Micro registration (init/prepare/invoke); `-DTFLM_ROOT=`."},
  };
  for (const auto& target : options.targets) {
    AdapterFiles a =
        GenerateAdapter(target, spec, vars, known ? known->formula : "", known && known->bias);
    adapter_files.insert(a.files.begin(), a.files.end());
    adapter_cmake += a.cmake;
    adapters_doc +=
        kAdapterDoc.at(target) + " Load step and model patch: `" + target + "/README.md`.\n";
  }
  if (!options.targets.empty()) {
    adapters_build =
        "\nSDK adapters build when their SDK root is given to CMake (see each README), e.g.\n\n"
        "    cmake -S . -B build -DONNXRUNTIME_ROOT=/opt/onnxruntime\n";
  }
  vars.push_back({"adapters_doc", adapters_doc});
  vars.push_back({"adapters_build", adapters_build});
  std::map<std::string, std::string> files = {
      {"op.json", util::DumpJson(OpSpecToJson(spec), 2) + "\n"},
      {"README.md", Fill(kReadme, vars)},
      {"CMakeLists.txt", Fill(kCMake, vars) + adapter_cmake},
      {"kernel/porttool_custom_op.h", std::string(RuntimeFile("custom_op_abi.h"))},
      {"kernel/" + spec.symbol + ".h", Fill(kKernelHeader, vars)},
      {"kernel/" + spec.symbol + ".c", KernelSource(spec, vars)},
      {"kernel/" + spec.symbol + "_porttool.c", Fill(kGlue, vars)},
      {"schema/" + spec.symbol + "_schema.cc", SchemaSource(spec, vars)},
      {"schema/" + spec.symbol + "_schema_test.cc", SchemaTestSource(spec, vars)},
      {"test/" + spec.symbol + "_test.c", TestSource(spec, kit_prefix, num_inputs, vars)},
  };
  files.insert(adapter_files.begin(), adapter_files.end());
  for (const auto& [name, text] : files) {
    fs::create_directories((out_dir / name).parent_path());
    io::WriteFileAtomic(out_dir / name, text);
    result.files.push_back(name);
  }
  if (!kit_prefix.empty()) result.files.push_back("test/kit/");
  return result;
}

}  // namespace porttool::emit
