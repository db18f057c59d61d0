// ChainSession: a split pipeline run as one model. The segments a split wrote run in order, each
// fed from the chain's inputs and the tensors earlier segments produced (bridges pass by name),
// and the chain's outputs are the original model's outputs in its declaration order. Split
// verification, `port`'s end-to-end accuracy through quantized segments and anything else that
// must judge "the segments together" use it, so they run the chain the same way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {

class ChainSession {
 public:
  // `segments` (in execution order) must outlive the session. `inputs` are the chain's graph
  // inputs and `outputs` its graph outputs (normally the original model's). Every segment is
  // planned now; a segment that needs a tensor neither the inputs nor an earlier segment provides
  // is Error(kBadInput) naming segment and tensor, and so is an output no segment produces.
  ChainSession(const std::vector<const io::Model*>& segments, std::vector<InputSpec> inputs,
               std::vector<std::string> outputs, const SessionOptions& options = {});
  // The common case: the chain reproduces `original` (its inputs and outputs).
  ChainSession(const io::Model& original, const std::vector<const io::Model*>& segments,
               const SessionOptions& options = {});
  // The same with each segment's own options (one per segment): an accelerator segment computed
  // in float16 between float32 host segments.
  ChainSession(const io::Model& original, const std::vector<const io::Model*>& segments,
               const std::vector<SessionOptions>& per_segment);
  ~ChainSession();

  const std::vector<InputSpec>& inputs() const { return inputs_; }
  const std::vector<std::string>& output_names() const { return outputs_; }
  size_t segment_count() const { return sessions_.size(); }
  const Session& segment(size_t i) const { return *sessions_.at(i); }

  // Runs every segment once; returns the chain outputs in order.
  std::vector<NamedTensor> Run(const TensorMap& inputs);
  // Run, reporting every tensor any segment produces (segment inputs are not reported again).
  std::vector<NamedTensor> RunObserved(const TensorMap& inputs, const NodeObserver& observer);

 private:
  using Interface = std::pair<std::vector<InputSpec>, std::vector<std::string>>;
  // The interface of the model a chain reproduces: its real inputs and its outputs.
  static Interface InterfaceOf(const io::Model& model);
  ChainSession(const std::vector<const io::Model*>& segments, Interface interface,
               const SessionOptions& options);
  void CheckWiring() const;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<InputSpec> inputs_;
  std::vector<std::string> outputs_;
};

}  // namespace porttool::runtime
