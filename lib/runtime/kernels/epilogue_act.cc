// The fused epilogue's transcendental activations: Sigmoid, SiLU and GELU (erf form). Compiled
// as elementwise.cc's Sigmoid and Erf spans are (FMA contraction allowed inside the
// approximations, unlike epilogue_rows.cc), and each written as the chain of nodes it replaces,
// one rounding per node, so a fused activation gives the bits of the unfused nodes.
#include "lib/runtime/kernels/epilogue_rows.h"
#include "lib/runtime/kernels/simd.h"
#include "lib/runtime/kernels/vector_math.h"

namespace porttool::runtime::kernels {

PORTTOOL_SIMD_CLONES void ActivateTranscendental(const EpilogueSpec& s, float* y, int64_t n) {
  switch (s.act) {
    case EpilogueAct::kSigmoid:
      Map16(y, y, n, [](V16f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return SigmoidV(v); });
      break;
    case EpilogueAct::kSilu:
      Map16(y, y, n, [](V16f v) PORTTOOL_ALWAYS_INLINE_LAMBDA { return v * SigmoidV(v); });
      break;
    case EpilogueAct::kGelu: {
      const float k = s.gelu_k, one = s.gelu_one, half = s.gelu_half;
      const bool divides = s.gelu_divides, gate_half = s.gelu_gate_half;
      Map16(y, y, n, [&](V16f v) PORTTOOL_ALWAYS_INLINE_LAMBDA {
        const V16f t = divides ? v / k : v * k;
        // Each step stored to a variable: one rounding per node, never fused across nodes.
        const V16f e = ErfV(t);
        const V16f u = e + one;
        if (gate_half) {
          const V16f g = u * half;
          return v * g;
        }
        const V16f w = v * u;
        return w * half;
      });
      break;
    }
    default:
      break;
  }
}

}  // namespace porttool::runtime::kernels
