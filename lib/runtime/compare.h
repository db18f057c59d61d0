// Numerical comparison of tensors and of two models run on the same inputs: max abs and relative
// error, cosine similarity and SQNR (dB), and a tolerance test in numpy.allclose form. The
// per-tensor mode compares every intermediate tensor the two models share by name, ranked from
// worst SQNR, to locate where a rewrite or a quantization starts to diverge.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

struct TensorStats {
  bool comparable = true;  // false when dtype class or shape differ (see note)
  std::string note;
  int64_t count = 0;
  double max_abs = 0;            // max |b - a|
  double max_rel = 0;            // max |b - a| / max(|a|, 1e-6)
  double cosine = 1;             // a·b / (|a| |b|); 1 when both are all zero
  double sqnr_db = 0;            // 10 log10(sum a^2 / sum (b - a)^2); +inf when identical
  bool within_tolerance = true;  // every |b - a| <= atol + rtol * |a|
};

// `reference` is a, `candidate` is b. Any numeric or bool dtypes; values compared as doubles.
TensorStats CompareTensors(const Tensor& reference, const Tensor& candidate, double rtol,
                           double atol);

struct TensorComparison {
  std::string name;
  TensorStats stats;
};

struct CompareOptions {
  double rtol = 1e-3;
  double atol = 1e-4;
  bool per_tensor = false;
  SessionOptions session;
  // B's kernels when they differ from A's (custom kernels under test against built-in ones).
  const KernelRegistry* kernels_b = nullptr;
};

struct ModelComparison {
  std::vector<TensorComparison> outputs;        // in model A's output order
  std::vector<TensorComparison> intermediates;  // per-tensor mode: worst SQNR first
  std::vector<std::string> unmatched_outputs;   // outputs of A that B does not produce
  bool within_tolerance = true;                 // every output compared and within tolerance
};

// Runs A (reference) and B on `inputs` (fed to each model's inputs by name) and compares outputs
// with the same name. Per-tensor mode keeps A's shared intermediates until B produces them.
ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options);

}  // namespace porttool::runtime
