// Function multi-versioning for the few hot loops the executor writes itself (depthwise conv,
// pooling, resize, exp/erf): the build targets baseline x86-64, so these loops get AVX-512 and
// AVX2+FMA clones chosen at load time, and still run on any x86-64. The clones are named by ISA
// level (x86-64-v4/v3), which GCC's resolver checks by CPU features: "arch=haswell" clones are
// chosen only on Intel Haswell-family CPUs (the resolver asks __builtin_cpu_is), so an AMD EPYC
// ran the SSE2 baseline — a vectorised exp loop was 10x slower there.
// Private to lib/runtime/kernels.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PORTTOOL_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
// The few AVX-512 kernels written with intrinsics (an instruction generic vectors cannot
// express, or a register tile sized for 512-bit pipes): compiled for x86-64-v4 and called only
// where HasAvx512().
#define PORTTOOL_HAVE_AVX512_KERNELS 1
#define PORTTOOL_AVX512 __attribute__((target("arch=x86-64-v4")))
#else
#define PORTTOOL_SIMD_CLONES
#endif

#define PORTTOOL_ALWAYS_INLINE inline __attribute__((always_inline))
// The same for a lambda, written after its parameter list: [](V8f v) PORTTOOL_ALWAYS_INLINE_LAMBDA
// { ... }. Needed where a lambda takes a vector type (it must inline into each clone).
#define PORTTOOL_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))

#ifdef PORTTOOL_HAVE_AVX512_KERNELS
namespace porttool::runtime::kernels {
inline bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("x86-64-v4");
  return has;
}
}  // namespace porttool::runtime::kernels
#endif
