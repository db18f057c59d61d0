// AnalyzedModel: the model as the decision engine sees it — shapes inferred (with the user's
// --input-shape pins), a lookup of every tensor's type and dims, constant values for the inputs
// constraint checks need (Resize scales, Gather indices), and the model-derived facts: op
// histogram, compute layers, control flow, custom domains, transformer-like patterns, params,
// MACs per node, peak activation bytes and dynamic inputs. The caller's model is not modified.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/decide/facts.h"
#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/shape/input_shapes.h"

namespace porttool::decide {

struct TensorInfo {
  int32_t dtype = 0;          // onnx::TensorProto::DataType; 0 when unknown
  bool has_shape = false;     // rank known
  std::vector<int64_t> dims;  // -1 for an unknown or symbolic dim
  bool IsStatic() const;
  std::optional<uint64_t> Bytes() const;  // when static with a fixed-size dtype
};

struct NodeCost {
  int index = -1;
  std::string name;
  std::string op;
  uint64_t macs = 0;
};

struct ModelFacts {
  int nodes = 0;
  int compute_layers = 0;
  int control_flow_ops = 0;
  int custom_domain_ops = 0;
  int attention_patterns = 0;
  int layernorm_patterns = 0;
  int64_t opset = 0;
  uint64_t params_bytes = 0;
  std::map<std::string, int> op_histogram;  // "Conv", "com.microsoft:Gelu"
  std::vector<std::string> custom_domains;
  std::optional<uint64_t> peak_activation_bytes;  // needs static shapes
  std::string peak_activation_note;               // why it is unknown
  std::optional<uint64_t> total_macs;             // nullopt when some counted node lacks shapes
  std::vector<NodeCost> macs_by_node;             // counted nodes, heaviest first
  std::vector<std::string> dynamic_inputs;        // "x[0]=N"
  std::vector<std::string> notes;                 // shape inference notes
};

// "Conv" for ai.onnx ops, "com.microsoft:Gelu" otherwise: the key target profiles use.
std::string OpKey(const onnx::NodeProto& node);
// Compute layers carry the arithmetic (see docs/facts.md model.compute_layers).
bool IsComputeLayer(const onnx::NodeProto& node);

// A model-to-model step run on the analysed copy before anything is derived from it.
using ModelTransform = std::function<void(io::Model&)>;

class AnalyzedModel {
 public:
  // The model as the target's converter sees it: copies `model`, pins `shapes`, completes shapes
  // (runtime::CompleteShapes: inference, then one executor run), runs `fold` (the seam for the
  // passes' fold-constants; the caller's model is never touched), marks the nodes whose value is
  // static (analysis::StaticValueNodes: converters fold them) and derives the facts.
  // Throws Error(kUsage) for bad --input-shape pins.
  AnalyzedModel(const io::Model& model, const shape::InputShapes& shapes,
                const ModelTransform& fold = {});

  const io::Model& model() const { return model_; }
  const onnx::GraphProto& graph() const { return model_.proto.graph(); }
  const ir::GraphView& view() const { return *view_; }
  const ModelFacts& facts() const { return facts_; }

  // Type and dims of a tensor (graph input/output, value_info or initializer); nullptr if unknown.
  const TensorInfo* Info(const std::string& tensor) const;
  // Whether `tensor` is an initializer, the output of a Constant node or of a static-value node.
  bool IsConstant(const std::string& tensor) const;
  // Node `index` computes a value known at conversion time (shape arithmetic on static shapes,
  // ops on constants): the converter folds it, so it is never placed on the target.
  bool IsStaticValue(int index) const { return static_nodes_[index]; }
  // Values of a small numeric constant tensor (<= 4096 elements) as doubles.
  std::optional<std::vector<double>> ConstantValues(const std::string& tensor) const;
  // Downstream of node `index` there is a compute layer (it is in the backbone, not the tail).
  bool FeedsComputeLayer(int index) const { return feeds_compute_[index]; }

  // Adds the model.* facts to `facts` with origin "model".
  void AddFacts(const FactCatalog& catalog, Facts& facts) const;

 private:
  void IndexTensors();
  void MarkStaticValues();
  void DeriveFacts();
  void FindTail();

  io::Model model_;
  std::unique_ptr<ir::GraphView> view_;
  std::map<std::string, TensorInfo> infos_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::vector<bool> feeds_compute_;
  std::vector<bool> static_nodes_;
  std::set<std::string> static_tensors_;
  ModelFacts facts_;
};

}  // namespace porttool::decide
