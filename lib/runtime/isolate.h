// Per-layer local error of a candidate model against a reference that shares its tensor names
// (float vs QDQ, float vs fp16, before vs after a pass), beside the accumulated error, as
// RKNN's accuracy_analysis shows them: where the candidate loses accuracy, not only where the
// loss shows. For every tensor T that both models' nodes produce, the accumulated error is B's T
// from B's own run against A's T; the local error is T computed by B's nodes from A's values of
// the shared tensors those nodes read, against A's T. "B's nodes" is the producing cone of T in
// B cut at shared names, graph inputs and initializers: for a plain op, the op alone; for a QDQ
// model, the float op with the DequantizeLinear nodes feeding it (weight and activation) and the
// QuantizeLinear before them, so the local error of a Conv counts its weights' and its inputs'
// quantization and nothing upstream.
//
// Memory: per sample, A runs first and its shared tensors go to a temporary file (SpillFile) as
// they are produced; then B runs and each shared tensor it produces is compared with A's copy
// read back a chunk at a time (accumulated); then, with B's run over, each cone is evaluated
// alone (node by node, its tensors freed after their last use in the cone) on A's values read
// back from the file, and compared with A's T (local). Peak memory is one run's live tensors (the
// larger of A's and B's) plus one cone's, whatever the number of samples: the statistics of every
// tensor accumulate across samples as running sums and coarse error histograms, no tensor is
// kept from one sample to the next. The alternatives cost more: A and B side by side hold both
// runs' live tensors (2.3x one run's on PP-OCRv4 det, measured for --per-tensor), and evaluating
// cones during A's run keeps A's values of every cut tensor until its last cone has run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/compare.h"

namespace porttool::runtime {

struct IsolatedTensor {
  std::string tensor;
  std::string node, op;             // B's node that produces it
  int order = 0;                    // that node's position in B's topological order
  std::vector<std::string> from_a;  // the shared tensors its cone reads (A's values)
  int cone_nodes = 0;               // B's nodes evaluated to compute it (1 for a plain op)
  TensorStats local, accumulated;
};

// A node that has no local error: the other model lacks what it reads or what it produces, or
// its cone cannot be evaluated on its own (a subgraph, an op without a built-in kernel).
struct NotComparable {
  std::string model;  // "a" | "b": whose node
  std::string node, op, tensor, reason;
};

struct IsolateResult {
  size_t samples = 0;
  // Worst local error first: by local SQNR, then accumulated SQNR, then B's order.
  std::vector<IsolatedTensor> tensors;
  std::vector<NotComparable> not_comparable;
  std::vector<TensorComparison> outputs;       // A's outputs, accumulated over the samples
  std::vector<std::string> unmatched_outputs;  // A's outputs B lacks
  bool within_tolerance = true;                // every output compared and within tolerance
};

// Accumulates over samples (AddSample once per sample, then Result). Uses options.tolerance and
// per_output (for within_tolerance), session, kernels_b (B's full runs; cones run the built-in
// kernels) and scratch_dir (room for A's shared tensors of one sample).
class IsolateComparison {
 public:
  // Both models must outlive the object. Error(kUsage) when the two models' nodes share no
  // tensor name; the executor's errors for a model it cannot run.
  IsolateComparison(const io::Model& a, const io::Model& b, const CompareOptions& options);
  ~IsolateComparison();
  IsolateComparison(const IsolateComparison&) = delete;
  IsolateComparison& operator=(const IsolateComparison&) = delete;

  // One sample: the inputs of A (B takes those it declares).
  void AddSample(const TensorMap& inputs);
  IsolateResult Result() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace porttool::runtime
