// Einsum's equation parser and evaluator, exposed to the kernel file and to its tests: the tests
// run every equation through both evaluation paths (the GEMM-based one the kernel uses and the
// plain summation loop) so each is the other's oracle. Private to lib/runtime/kernels.
#pragma once

#include <string>
#include <vector>

#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime::kernels {

// A parsed equation. Letters are ids 0..51 ('A'..'Z' then 'a'..'z', so the implicit output's
// alphabetical order is numpy's ASCII order); kEinsumEllipsis marks where "..." stands.
inline constexpr int kEinsumEllipsis = -1;
struct EinsumEquation {
  std::string text;                      // as written, for messages
  std::vector<std::vector<int>> inputs;  // one term per input
  std::vector<int> output;               // explicit, or derived by the implicit-mode rule
  bool explicit_output = false;
};

// Parses and validates the equation against the node's input count; fails naming the node, the
// attribute and its value on any syntax error.
EinsumEquation ParseEinsumEquation(const KernelContext& ctx, const std::string& equation,
                                   int input_count);

enum class EinsumPath {
  kFast,     // pairwise contraction through GEMM, permutation copies and row sums
  kGeneral,  // one summation loop over every label (the reference the fast path is tested on)
};

// Evaluates the equation on `inputs` (numeric, one dtype). Shape errors (a term naming more dims
// than its input has, labels bound to incompatible sizes) fail naming the node.
Tensor EvaluateEinsum(const KernelContext& ctx, const EinsumEquation& eq,
                      const std::vector<const Tensor*>& inputs, EinsumPath path);

}  // namespace porttool::runtime::kernels
