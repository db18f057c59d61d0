#include "lib/runtime/chain.h"

#include <fmt/format.h>

#include <set>
#include <tuple>

#include "lib/util/error.h"

namespace porttool::runtime {

ChainSession::ChainSession(const std::vector<const io::Model*>& segments,
                           std::vector<InputSpec> inputs, std::vector<std::string> outputs,
                           const SessionOptions& options)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  for (const io::Model* segment : segments) {
    sessions_.push_back(std::make_unique<Session>(*segment, options));
  }
  CheckWiring();
}

// From the graph, not from a session of it: planning the whole model would prepare every kernel
// of it once more, beside the segments' own.
ChainSession::Interface ChainSession::InterfaceOf(const io::Model& model) {
  std::vector<std::string> outputs;
  for (const auto& o : model.proto.graph().output()) outputs.push_back(o.name());
  return {InputSpecsOf(model), std::move(outputs)};
}

ChainSession::ChainSession(const io::Model& original, const std::vector<const io::Model*>& segments,
                           const SessionOptions& options)
    : ChainSession(segments, InterfaceOf(original), options) {}

ChainSession::ChainSession(const std::vector<const io::Model*>& segments, Interface interface,
                           const SessionOptions& options)
    : ChainSession(segments, std::move(interface.first), std::move(interface.second), options) {}

ChainSession::ChainSession(const io::Model& original, const std::vector<const io::Model*>& segments,
                           const std::vector<SessionOptions>& per_segment) {
  if (per_segment.size() != segments.size()) {
    ThrowInternal("chain: {} segment(s) but {} option set(s)", segments.size(), per_segment.size());
  }
  std::tie(inputs_, outputs_) = InterfaceOf(original);
  for (size_t i = 0; i < segments.size(); ++i) {
    sessions_.push_back(std::make_unique<Session>(*segments[i], per_segment[i]));
  }
  CheckWiring();
}

ChainSession::~ChainSession() = default;

// Wiring errors are found before anything runs: names only, so it costs nothing per run.
void ChainSession::CheckWiring() const {
  std::set<std::string> available;
  for (const auto& in : inputs_) available.insert(in.name);
  for (size_t i = 0; i < sessions_.size(); ++i) {
    for (const auto& spec : sessions_[i]->inputs()) {
      if (!available.count(spec.name)) {
        throw Error(ErrorKind::kBadInput,
                    fmt::format("segment {} needs '{}', which neither the model inputs nor an "
                                "earlier segment provides",
                                i + 1, spec.name),
                    "", spec.name);
      }
    }
    for (const auto& name : sessions_[i]->output_names()) available.insert(name);
  }
  for (const auto& name : outputs_) {
    if (!available.count(name)) {
      throw Error(ErrorKind::kBadInput, fmt::format("output '{}' is produced by no segment", name),
                  "", name);
    }
  }
}

std::vector<NamedTensor> ChainSession::Run(const TensorMap& inputs) {
  return RunObserved(inputs, nullptr);
}

std::vector<NamedTensor> ChainSession::RunObserved(const TensorMap& inputs,
                                                   const NodeObserver& observer) {
  TensorMap pool = inputs;  // everything available to later segments, by name
  for (auto& session : sessions_) {
    TensorMap feed;
    for (const auto& spec : session->inputs()) feed[spec.name] = pool.at(spec.name);
    std::vector<NamedTensor> produced =
        observer ? session->RunObserved(feed, observer) : session->Run(feed);
    for (auto& out : produced) pool[out.name] = std::move(out.value);
  }
  std::vector<NamedTensor> result;
  for (const auto& name : outputs_) result.push_back({name, pool.at(name)});
  return result;
}

}  // namespace porttool::runtime
