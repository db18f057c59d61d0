#include "lib/runtime/kernels/all_kernels.h"

namespace porttool::runtime {

const KernelRegistry& KernelRegistry::Default() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    RegisterElementwiseKernels(*r);
    RegisterShapeKernels(*r);
    RegisterReduceKernels(*r);
    RegisterQuantKernels(*r);
    RegisterQuantIntegerKernels(*r);
    RegisterControlFlowKernels(*r);
    RegisterContribKernels(*r);
    RegisterConvKernels(*r);
    RegisterMatMulKernels(*r);
    RegisterPoolKernels(*r);
    RegisterNormKernels(*r);
    RegisterResizeKernels(*r);
    RegisterIndexingKernels(*r);
    RegisterMathKernels(*r);
    RegisterRecurrentKernels(*r);
    RegisterSignalKernels(*r);
    RegisterDetectionKernels(*r);
    RegisterEinsumKernels(*r);
    RegisterGridSampleKernels(*r);
    RegisterRoiAlignKernels(*r);
    RegisterTfIdfVectorizerKernels(*r);
    return r;
  }();
  return *registry;
}

}  // namespace porttool::runtime
