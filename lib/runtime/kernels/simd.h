// Function multi-versioning for the few hot loops the executor writes itself (depthwise conv,
// pooling, resize): the build targets baseline x86-64, so these loops get AVX-512 and AVX2 clones
// chosen at load time, and still run on any x86-64. Private to lib/runtime/kernels.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PORTTOOL_SIMD_CLONES \
  __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define PORTTOOL_SIMD_CLONES
#endif

#define PORTTOOL_ALWAYS_INLINE inline __attribute__((always_inline))
