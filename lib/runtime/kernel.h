// The kernel interface and registry. A kernel is a function over a KernelContext, registered by
// (domain, op type, opset range). Kernels must handle every attribute the ONNX spec defines for
// their opset range, or reject it with a clear error: call ctx.AllowAttributes({...}) first so an
// attribute the kernel does not know is an Error naming the node, never silently ignored.
// A kernel may add a prepare step run once at plan time (PrepareFn). Callers can pass their own
// registry (a copy of Default() plus custom-op kernels) to the Session.
// (R1, additive only: KernelContext gained set_subgraph_runner/RunSubgraph for If,
// set_model/model() for Constant's external data, and an AllowAttributes overload taking a vector;
// every existing signature is unchanged.) Registration is explicit (a Register<Family>Kernels
// function per file, listed in kernels/all_kernels.cc): static initialisers would be dropped by the
// static library link.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/epilogue.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {

class KernelContext {
 public:
  KernelContext(const onnx::NodeProto& node, int opset, std::vector<const Tensor*> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)) {
    outputs_.resize(node.output_size());
  }

  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }

  int input_count() const { return static_cast<int>(inputs_.size()); }
  // Whether optional input i was given (present and non-empty name).
  bool has_input(int i) const { return i < input_count() && inputs_[i] != nullptr; }
  // Input i; throws Error(kBadInput) naming the node when it is missing.
  const Tensor& input(int i) const;

  int output_count() const { return static_cast<int>(outputs_.size()); }
  // Whether output i is wanted (has a non-empty name).
  bool wants_output(int i) const;
  Tensor& output(int i) { return outputs_.at(i); }
  std::vector<Tensor>& outputs() { return outputs_; }

  // Attribute access. Get* return the default when the attribute is absent.
  bool HasAttribute(const std::string& name) const;
  const onnx::AttributeProto* Attribute(const std::string& name) const;
  int64_t GetInt(const std::string& name, int64_t def) const;
  float GetFloat(const std::string& name, float def) const;
  std::string GetString(const std::string& name, const std::string& def) const;
  std::vector<int64_t> GetInts(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> GetFloats(const std::string& name, std::vector<float> def = {}) const;
  // Throws Error(kBadInput) naming the node and attribute for any attribute not in `known`.
  void AllowAttributes(std::initializer_list<const char*> known) const;
  void AllowAttributes(const std::vector<std::string>& known) const;

  // Throws Error(kBadInput) "node 'X' (Op): <message>" — for unsupported attribute values,
  // dtypes and shape mismatches.
  [[noreturn]] void Fail(const std::string& message) const;

  // Runs a graph attribute (an If branch) with the caller's values in scope and returns its
  // outputs. The Session installs the runner; a kernel called outside a Session cannot run
  // subgraphs (Error kInternal).
  // `inputs` bind the graph's declared inputs in order (Loop's iteration number, condition and
  // carried values; Scan's states and slices); If passes none.
  using SubgraphRunner =
      std::function<std::vector<Tensor>(const onnx::GraphProto&, std::vector<Tensor> inputs)>;
  void set_subgraph_runner(SubgraphRunner runner) { subgraph_runner_ = std::move(runner); }
  std::vector<Tensor> RunSubgraph(const onnx::GraphProto& graph) const;
  std::vector<Tensor> RunSubgraph(const onnx::GraphProto& graph, std::vector<Tensor> inputs) const;
  // The model being run (to resolve external data in Constant values); may be null.
  void set_model(const io::Model* model) { model_ = model; }
  const io::Model* model() const { return model_; }

  // What the kernel's prepare step built for this node at plan time (see PrepareFn), or null.
  template <typename T>
  const T* prepared() const {
    return static_cast<const T*>(prepared_.get());
  }
  void set_prepared(std::shared_ptr<const void> state) { prepared_ = std::move(state); }

  // The fused elementwise tail the Session asks this kernel to apply to its output (epilogue.h),
  // or null. Only kernels registered with accepts_epilogue get one; they call
  // mark_epilogue_applied() once it is applied, or leave it, and the Session runs the tail.
  const Epilogue* epilogue() const { return epilogue_; }
  void set_epilogue(const Epilogue* epilogue) { epilogue_ = epilogue; }
  void mark_epilogue_applied() { epilogue_applied_ = true; }
  bool epilogue_applied() const { return epilogue_applied_; }

 private:
  const onnx::NodeProto& node_;
  int opset_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor> outputs_;
  SubgraphRunner subgraph_runner_;
  const io::Model* model_ = nullptr;
  std::shared_ptr<const void> prepared_;
  const Epilogue* epilogue_ = nullptr;
  bool epilogue_applied_ = false;
};

// The open end of a kernel's opset range ("this kernel and every later opset"), for
// KernelRegistry::Register(domain, op, since, kLatest, fn).
inline constexpr int kLatest = 99;

using KernelFn = std::function<void(KernelContext&)>;
// Optional plan-time step of a kernel, run once per node when the Session is built: it parses
// and validates attributes (ctx.Fail there fails the Session's construction, before anything
// runs) and may repack constant weights. In its context only inputs that are initializers are
// present; the others read as absent. What it returns reaches every run as ctx.prepared<T>().
using PrepareFn = std::function<std::shared_ptr<const void>(const KernelContext&)>;

class KernelRegistry {
 public:
  // The registry with every built-in kernel.
  static const KernelRegistry& Default();

  // Registers `fn` (and an optional plan-time `prepare`) for opsets [since, until] of
  // (domain, op). "" and "ai.onnx" are the same. A later registration of an overlapping range
  // wins, so a copy of Default() can override a built-in kernel.
  void Register(const std::string& domain, const std::string& op, int since, int until, KernelFn fn,
                PrepareFn prepare = nullptr);
  // Marks the kernels registered so far for (domain, op) as applying a fused epilogue
  // (KernelContext::epilogue). A later Register of the op (a custom kernel) starts unmarked, so
  // the Session never fuses into a kernel that would drop the tail.
  void AcceptEpilogue(const std::string& domain, const std::string& op);
  bool AcceptsEpilogue(const std::string& domain, const std::string& op, int opset) const;
  // Drops every kernel of (domain, op), so a custom kernel can replace a built-in one.
  void Remove(const std::string& domain, const std::string& op);
  // The kernel for the node's op at `opset`, or nullptr.
  const KernelFn* Find(const std::string& domain, const std::string& op, int opset) const;
  // Its prepare step, or nullptr when it has none.
  const PrepareFn* FindPrepare(const std::string& domain, const std::string& op, int opset) const;
  bool HasOp(const std::string& domain, const std::string& op) const;
  // "domain::op" for every registered op, sorted.
  std::vector<std::string> OpNames() const;

 private:
  struct Entry {
    int since;
    int until;
    KernelFn fn;
    PrepareFn prepare;
    bool accepts_epilogue = false;
  };
  const Entry* FindEntry(const std::string& domain, const std::string& op, int opset) const;
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> entries_;
};

// Normalises "ai.onnx" to "".
std::string CanonicalDomain(const std::string& domain);

}  // namespace porttool::runtime
