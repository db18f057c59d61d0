// One registration function per kernel family (one file each under lib/runtime/kernels/).
#pragma once

#include "lib/runtime/kernel.h"

namespace porttool::runtime {

// Elementwise math, activations, logic, comparison, Where, Cast, Clip.
void RegisterElementwiseKernels(KernelRegistry& r);
// Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Slice, Gather,
// GatherElements, Expand, Tile, Pad, Shape, Size, Constant, ConstantOfShape, Range, Identity,
// Dropout.
void RegisterShapeKernels(KernelRegistry& r);
// ReduceMean/Sum/Max/Min/Prod/L2, ArgMax, TopK, Softmax, LogSoftmax.
void RegisterReduceKernels(KernelRegistry& r);
// QuantizeLinear, DequantizeLinear.
void RegisterQuantKernels(KernelRegistry& r);
// QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger, DynamicQuantizeLinear.
void RegisterQuantIntegerKernels(KernelRegistry& r);
// If, Loop, Scan.
void RegisterControlFlowKernels(KernelRegistry& r);
// com.microsoft Gelu, FastGelu, QuickGelu.
void RegisterContribKernels(KernelRegistry& r);
// Conv, ConvTranspose.
void RegisterConvKernels(KernelRegistry& r);
// MatMul, Gemm.
void RegisterMatMulKernels(KernelRegistry& r);
// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
void RegisterPoolKernels(KernelRegistry& r);
// BatchNormalization, LayerNormalization, InstanceNormalization.
void RegisterNormKernels(KernelRegistry& r);
// Resize, Upsample, DepthToSpace, SpaceToDepth.
void RegisterResizeKernels(KernelRegistry& r);

// GatherND, ScatterND, ScatterElements, Scatter, OneHot, Compress, NonZero, Unique, Trilu,
// EyeLike, CumSum, ReverseSequence.
void RegisterIndexingKernels(KernelRegistry& r);
// Shrink, BitShift, Det, MeanVarianceNormalization, LRN.
void RegisterMathKernels(KernelRegistry& r);
// RNN, GRU, LSTM.
void RegisterRecurrentKernels(KernelRegistry& r);
// HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix.
void RegisterSignalKernels(KernelRegistry& r);
// NonMaxSuppression, MaxUnpool.
void RegisterDetectionKernels(KernelRegistry& r);
// Einsum (einsum.cc).
void RegisterEinsumKernels(KernelRegistry& r);
// GridSample (grid_sample.cc).
void RegisterGridSampleKernels(KernelRegistry& r);
// RoiAlign (roi_align.cc).
void RegisterRoiAlignKernels(KernelRegistry& r);
// TfIdfVectorizer (tfidf_vectorizer.cc).
void RegisterTfIdfVectorizerKernels(KernelRegistry& r);

}  // namespace porttool::runtime
