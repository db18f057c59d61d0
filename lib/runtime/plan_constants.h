// Values a plan can know before any run beyond initializers and Constant nodes: the small
// constant subgraphs exporters write for an attribute-like input. tf2onnx computes M-LSD's Pad
// amounts as a Concat of a Split of an initializer (NHWC order to NCHW), so the pads are constant
// though no initializer holds them; the session's plan-time fusions (pad_fusion.h) need them.
//
// Only nodes that cannot grow data are evaluated (shape arithmetic: Split, Concat, Slice, Gather,
// Reshape, Cast, elementwise integer maths ...), each on inputs of at most kMaxElements values, at
// most kMaxDepth producers deep: a few microseconds at plan time whatever the model. The values
// are computed by the executor's own kernels (node_evaluator.h), as a run would compute them; the
// nodes still run in every run (nothing here changes what runs).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

class PlanConstants {
 public:
  static constexpr int64_t kMaxElements = 64;
  static constexpr int kMaxDepth = 8;

  // `order` (node indices in run order) and `opsets` (the opset of each step's domain) as the
  // plan has them; `constants` the graph's initializers and precomputed Constant outputs. All
  // must outlive this object.
  PlanConstants(const ir::GraphView& view, const std::vector<int>& order,
                const std::vector<int>& opsets,
                const std::unordered_map<std::string, Tensor>& constants, const io::Model* model);

  // The value of `name` when it is a constant or computable from constants as above, else null.
  const Tensor* Find(const std::string& name) { return Find(name, 0); }

 private:
  const Tensor* Find(const std::string& name, int depth);
  // Runs node `index` on its constant inputs, storing its outputs; false when it cannot.
  bool Evaluate(int index, int depth);

  const ir::GraphView& view_;
  const std::vector<int>& opsets_;
  const std::unordered_map<std::string, Tensor>& constants_;
  const io::Model* model_;
  std::vector<size_t> step_of_;  // node index -> step
  std::unordered_map<std::string, Tensor> computed_;
  std::unordered_set<int> refused_;  // nodes found not evaluable (not asked again)
};

}  // namespace porttool::runtime
