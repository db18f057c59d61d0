#include "lib/runtime/plan_constants.h"

#include <set>

#include "lib/runtime/kernel.h"
#include "lib/runtime/node_evaluator.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

// Ops whose output is no larger than their inputs allow (at most their product, for Gather and a
// broadcast), deterministic, without subgraphs: evaluating them on small inputs is cheap.
const std::set<std::string> kShapeArithmetic = {
    "Abs",      "Add",   "Cast",  "Concat",  "Div", "Flatten",   "Gather",
    "Identity", "Max",   "Min",   "Mul",     "Neg", "Reshape",   "Shape",
    "Size",     "Slice", "Split", "Squeeze", "Sub", "Transpose", "Unsqueeze"};

}  // namespace

PlanConstants::PlanConstants(const ir::GraphView& view, const std::vector<int>& order,
                             const std::vector<int>& opsets,
                             const std::unordered_map<std::string, Tensor>& constants,
                             const io::Model* model)
    : view_(view),
      opsets_(opsets),
      constants_(constants),
      model_(model),
      step_of_(view.node_count()) {
  for (size_t step = 0; step < order.size(); ++step) step_of_[order[step]] = step;
}

const Tensor* PlanConstants::Find(const std::string& name, int depth) {
  if (name.empty()) return nullptr;
  if (auto it = constants_.find(name); it != constants_.end()) return &it->second;
  if (auto it = computed_.find(name); it != computed_.end()) return &it->second;
  const int producer = view_.Producer(name);
  if (producer < 0 || depth >= kMaxDepth || !Evaluate(producer, depth)) return nullptr;
  auto it = computed_.find(name);
  return it == computed_.end() ? nullptr : &it->second;
}

bool PlanConstants::Evaluate(int index, int depth) {
  if (refused_.count(index)) return false;
  const auto& node = view_.node(index);
  const bool eligible = CanonicalDomain(node.domain()).empty() &&
                        kShapeArithmetic.count(node.op_type()) &&
                        ir::GraphView::CapturedNames(node).empty();
  std::vector<const Tensor*> inputs;
  for (const auto& in : node.input()) {
    if (!eligible) break;
    const Tensor* t = in.empty() ? nullptr : Find(in, depth + 1);
    if (!in.empty() && (t == nullptr || t->size() > kMaxElements)) break;
    inputs.push_back(t);
  }
  if (!eligible || inputs.size() != static_cast<size_t>(node.input_size())) {
    refused_.insert(index);
    return false;
  }
  std::vector<Tensor> outputs;
  try {
    outputs = EvaluateNode(node, opsets_[step_of_[index]], inputs, model_);
  } catch (const Error&) {
    // A malformed node fails when it runs, where it reports itself; here it is just not constant.
    refused_.insert(index);
    return false;
  }
  for (int i = 0; i < node.output_size() && i < static_cast<int>(outputs.size()); ++i) {
    if (!node.output(i).empty()) computed_[node.output(i)] = std::move(outputs[i]);
  }
  return true;
}

}  // namespace porttool::runtime
