// Session: runs an ONNX model with the built-in kernels (or a registry the caller passes).
// Construction plans the whole model once (topological order, a kernel for every node including
// those inside If/Loop/Scan bodies, each kernel's prepare step, the point
// after which each intermediate is dead) so that an unsupported op is reported before anything
// runs. Run() validates the inputs against the model, executes node by node, frees every
// intermediate after its last use, and hands each produced tensor to an optional observer —
// calibration and per-tensor comparison see every value without it staying in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"
#include "lib/shape/input_values.h"

namespace porttool::ir {
class GraphView;
}  // namespace porttool::ir

namespace porttool::runtime {

struct SessionOptions {
  bool fail_on_nan = false;  // NaN/Inf in an input: Error(kBadInput) instead of a warning
  // Kernels to run with; null means KernelRegistry::Default(). Must outlive the session. Pass a
  // copy of Default() with extra Register calls to run custom operators.
  const KernelRegistry* registry = nullptr;
  // Kernel threads of this session's runs (lib/runtime/execution.h); 0: the caller's scope, else
  // the program's default. Two sessions with different counts each keep their own.
  int threads = 0;
  // Run every node as the model has it: no fused conv tails (fusion.h), no Pad folded into a
  // Conv (pad_fusion.h). Observed runs never fuse; this turns fusion off for the others too (to
  // compare fused against unfused).
  bool no_fusion = false;
  // Compute as an accelerator that keeps float tensors in float16 (float16.h): float weights are
  // rounded once, graph inputs and every float tensor a node produces at the op boundary; inside
  // an op the kernel accumulates in float32, as the NPUs do. Fused conv tails stay fused (the
  // NPU fuses them too). Tensors that overflow 65504 are recorded (Session::Float16Overflows).
  // float64 tensors stay float64 (no NPU computes them; Session::float16_kept_float64 names them).
  bool float16 = false;
  // Under float16: the nodes (by name, in any graph) that compute in float32, as when they run on
  // the host CPU beside the accelerator: their outputs are not rounded, nor the weights and graph
  // inputs that only they read. Error(kUsage) naming the names no node of the model has.
  std::set<std::string> float32_nodes = {};
  // Resize as ONNX Runtime's CPU kernel computes it, bit for bit (ExecutionEnv::
  // ort_compatible_resize): for comparing against ONNX Runtime without one-ulp differences that
  // a quantized model downstream amplifies. Off leaves the program's default (the setting is
  // inherited, never turned off by a session).
  bool ort_compatible_resize = false;
};

// A float tensor whose values passed float16's range under SessionOptions::float16: it became
// ±inf on the device. `node` is the producer (for an initializer, the first node reading it).
struct Float16Overflow {
  std::string tensor, node;
  float max_abs = 0;  // the largest finite magnitude before rounding
  // The tensor is a weight (an initializer or a Constant node's value) and `node` the first node
  // reading it.
  bool weight = false;
};

using TensorMap = std::map<std::string, Tensor>;
// Called with every tensor a node of the main graph produces, right after the node ran.
using Observer = std::function<void(const std::string& name, const Tensor& value)>;

// What RunObserved reports for each produced tensor: also the node that produced it, and whether
// that node sits inside an If branch (calibration needs both: op types decide what gets
// quantized, and branch tensors need ranges too).
struct ProducedTensor {
  const std::string& name;
  const Tensor& value;
  const onnx::NodeProto& node;
  bool in_subgraph;
};
using NodeObserver = std::function<void(const ProducedTensor&)>;

// A graph input the caller must feed: dtype and dims as declared (-1 where dynamic or unknown).
struct InputSpec {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  bool has_shape = false;
};

struct NamedTensor {
  std::string name;
  Tensor value;
};

class Session {
 public:
  // `model` must outlive the session. Throws Error(kBadInput) naming op, domain, opset and node
  // for an op without a kernel, and for malformed graphs (cycles, unreadable initializers).
  explicit Session(const io::Model& model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<InputSpec>& inputs() const { return inputs_; }
  std::vector<std::string> output_names() const;

  // Runs once. Inputs are checked for presence and unknown names (Error kUsage: a naming slip),
  // then dtype, rank and static dims (Error kBadInput: the data is wrong), naming the input.
  // Returns the graph outputs in declaration order.
  std::vector<NamedTensor> Run(const TensorMap& inputs, const Observer& observer = nullptr);
  // Run, reporting every tensor produced anywhere (If branches included) with its node.
  std::vector<NamedTensor> RunObserved(const TensorMap& inputs, const NodeObserver& observer);
  // Run, producing the named graph outputs directly in caller-owned memory where the kernel
  // allows it (the returned tensor then points into the buffer; otherwise it is the executor's
  // own and the caller copies). Buffers must stay valid while the results are used.
  std::vector<NamedTensor> RunInto(const TensorMap& inputs,
                                   const std::map<std::string, OutputBuffer>& buffers);
  // Run as an unobserved run does (fused), calling `after_node` with each main-graph node once
  // it ran: a fused conv reports the time of its whole tail (and of a Pad folded into it), and
  // the nodes it absorbed none (a profile of what actually runs, like ONNX Runtime's after its
  // fusions).
  std::vector<NamedTensor> RunTimed(const TensorMap& inputs,
                                    const std::function<void(const onnx::NodeProto&)>& after_node);

  // How many nodes of the main graph unobserved runs fold into a conv: tails into the conv
  // before them (fusion.h), Pads into the Conv after them (pad_fusion.h).
  int fused_nodes() const;

  // Warnings from the last Run (NaN/Inf in inputs when fail_on_nan is off).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Under SessionOptions::float16: every tensor that overflowed in the runs so far (an
  // initializer at planning), once each, with the largest magnitude seen; in graph order of first
  // overflow.
  const std::vector<Float16Overflow>& float16_overflows() const { return overflows_; }
  // Under SessionOptions::float16: the float64 tensors met so far (initializers at planning, the
  // rest as runs produce them), kept float64, once each in the order met.
  const std::vector<std::string>& float16_kept_float64() const { return kept_float64_; }

 private:
  struct Plan;
  struct Scope;
  const Plan& PlanFor(const onnx::GraphProto& graph);
  void BuildPlan(const onnx::GraphProto& graph);
  std::shared_ptr<const void> Prepare(const PrepareFn& prepare, const onnx::NodeProto& node,
                                      int opset, const Plan& plan);
  std::vector<Tensor> Execute(const Plan& plan, Scope& scope, const NodeObserver* observer,
                              bool nested);
  void ValidateInputs(const TensorMap& inputs);
  struct BoundOutput;
  std::optional<BoundOutput> FindBoundOutput(const onnx::NodeProto& node) const;

  const io::Model& model_;
  SessionOptions options_;
  std::map<std::string, int> opsets_;
  std::unordered_map<const onnx::GraphProto*, std::unique_ptr<Plan>> plans_;
  std::vector<InputSpec> inputs_;
  std::vector<std::string> warnings_;
  std::vector<Float16Overflow> overflows_;
  std::vector<std::string> kept_float64_;
  std::unordered_set<std::string> kept_float64_names_;
  // Under float16: the float tensors not rounded, what SessionOptions::float32_nodes computes in
  // float32: the kept nodes' outputs; the initializers, Constant values and graph inputs only
  // kept nodes read.
  std::unordered_set<std::string> unrounded_;
  std::unordered_set<std::string> node_names_;  // every graph's, to check float32_nodes
  // The value as this session computes: under float16, rounded (and an overflow recorded).
  Tensor AtSessionPrecision(const Tensor& t, const std::string& name, const std::string& node);
  // Adds this graph's tensors to unrounded_.
  void MarkUnroundedTensors(const ir::GraphView& view);
  const std::map<std::string, OutputBuffer>* output_buffers_ = nullptr;      // during RunInto
  const std::function<void(const onnx::NodeProto&)>* after_node_ = nullptr;  // during RunTimed
};

// The inputs a session of `model` asks for (graph inputs that are not initializers), read from the
// graph without planning it. Error(kBadInput) for an input the executor cannot take.
std::vector<InputSpec> InputSpecsOf(const io::Model& model);

// A random tensor for `spec`: floats uniform in [0, 1), integers in [0, 10), bool coin flips; with
// a range, floats in [lo, hi) and integers in [lo, hi] (Error(kUsage) for a range an integer type
// cannot draw from, or a range on a bool input). Every dim must be static (pin dynamic ones with
// --input-shape first); Error(kUsage) otherwise.
Tensor RandomTensor(const InputSpec& spec, std::mt19937_64& rng,
                    const std::optional<shape::ValueRange>& range = std::nullopt);
// One random tensor per model input, reproducible for a seed. `ranges` may name inputs this
// session does not have (one map serves a model and its segments): those are ignored; callers
// check the names against the model they were given for (shape::CheckInputRanges).
TensorMap RandomInputs(const Session& session, uint64_t seed,
                       const shape::InputRanges& ranges = {});
// `given` plus a random tensor for every model input it lacks (same values as RandomInputs for
// those inputs).
TensorMap CompleteWithRandom(const Session& session, TensorMap given, uint64_t seed,
                             const shape::InputRanges& ranges = {});
// The same from the inputs' specs (InputSpecsOf), for callers with no session of the model: a
// session plans every kernel (packs the conv weights), which costs about as much as a run.
TensorMap RandomInputs(const std::vector<InputSpec>& inputs, uint64_t seed,
                       const shape::InputRanges& ranges = {});
TensorMap CompleteWithRandom(const std::vector<InputSpec>& inputs, TensorMap given, uint64_t seed,
                             const shape::InputRanges& ranges = {});

}  // namespace porttool::runtime
