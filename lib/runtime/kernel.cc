#include "lib/runtime/kernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {

std::string CanonicalDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

const Tensor& KernelContext::input(int i) const {
  if (!has_input(i)) Fail(fmt::format("required input {} is missing", i));
  return *inputs_[i];
}

bool KernelContext::wants_output(int i) const {
  return i < node_.output_size() && !node_.output(i).empty();
}

const onnx::AttributeProto* KernelContext::Attribute(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool KernelContext::HasAttribute(const std::string& name) const {
  return Attribute(name) != nullptr;
}

int64_t KernelContext::GetInt(const std::string& name, int64_t def) const {
  const auto* a = Attribute(name);
  return a ? a->i() : def;
}

float KernelContext::GetFloat(const std::string& name, float def) const {
  const auto* a = Attribute(name);
  return a ? a->f() : def;
}

std::string KernelContext::GetString(const std::string& name, const std::string& def) const {
  const auto* a = Attribute(name);
  return a ? a->s() : def;
}

std::vector<int64_t> KernelContext::GetInts(const std::string& name,
                                            std::vector<int64_t> def) const {
  const auto* a = Attribute(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}

std::vector<float> KernelContext::GetFloats(const std::string& name, std::vector<float> def) const {
  const auto* a = Attribute(name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : def;
}

void KernelContext::AllowAttributes(std::initializer_list<const char*> known) const {
  AllowAttributes(std::vector<std::string>(known.begin(), known.end()));
}

void KernelContext::AllowAttributes(const std::vector<std::string>& known) const {
  for (const auto& a : node_.attribute()) {
    if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
      Fail(fmt::format("attribute '{}' is not supported by this executor (it handles: {})",
                       a.name(), known.empty() ? "none" : util::Join(known, ", ")));
    }
  }
}

void KernelContext::Fail(const std::string& message) const {
  throw Error(ErrorKind::kBadInput,
              fmt::format("node '{}' ({}): {}", node_.name(), node_.op_type(), message),
              node_.name());
}

std::vector<Tensor> KernelContext::RunSubgraph(const onnx::GraphProto& graph) const {
  return RunSubgraph(graph, {});
}

std::vector<Tensor> KernelContext::RunSubgraph(const onnx::GraphProto& graph,
                                               std::vector<Tensor> inputs) const {
  if (!subgraph_runner_) {
    ThrowInternal("node '{}' ({}): subgraph run outside a Session", node_.name(), node_.op_type());
  }
  if (static_cast<int>(inputs.size()) != graph.input_size()) {
    Fail(fmt::format("subgraph '{}' declares {} inputs but is given {}", graph.name(),
                     graph.input_size(), inputs.size()));
  }
  return subgraph_runner_(graph, std::move(inputs));
}

void KernelRegistry::Register(const std::string& domain, const std::string& op, int since,
                              int until, KernelFn fn, PrepareFn prepare) {
  auto& list = entries_[{CanonicalDomain(domain), op}];
  list.insert(list.begin(), {since, until, std::move(fn), std::move(prepare)});
}

const KernelRegistry::Entry* KernelRegistry::FindEntry(const std::string& domain,
                                                       const std::string& op, int opset) const {
  auto it = entries_.find({CanonicalDomain(domain), op});
  if (it == entries_.end()) return nullptr;
  for (const auto& e : it->second) {
    if (opset >= e.since && opset <= e.until) return &e;
  }
  return nullptr;
}

void KernelRegistry::Remove(const std::string& domain, const std::string& op) {
  entries_.erase({CanonicalDomain(domain), op});
}

const KernelFn* KernelRegistry::Find(const std::string& domain, const std::string& op,
                                     int opset) const {
  const Entry* e = FindEntry(domain, op, opset);
  return e ? &e->fn : nullptr;
}

const PrepareFn* KernelRegistry::FindPrepare(const std::string& domain, const std::string& op,
                                             int opset) const {
  const Entry* e = FindEntry(domain, op, opset);
  return e && e->prepare ? &e->prepare : nullptr;
}

void KernelRegistry::AcceptEpilogue(const std::string& domain, const std::string& op) {
  auto it = entries_.find({CanonicalDomain(domain), op});
  if (it == entries_.end()) return;
  for (auto& e : it->second) e.accepts_epilogue = true;
}

bool KernelRegistry::AcceptsEpilogue(const std::string& domain, const std::string& op,
                                     int opset) const {
  const Entry* e = FindEntry(domain, op, opset);
  return e && e->accepts_epilogue;
}

bool KernelRegistry::HasOp(const std::string& domain, const std::string& op) const {
  return entries_.count({CanonicalDomain(domain), op}) > 0;
}

std::vector<std::string> KernelRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [key, _] : entries_) {
    names.push_back((key.first.empty() ? "ai.onnx" : key.first) + "::" + key.second);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace porttool::runtime
