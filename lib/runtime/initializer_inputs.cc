#include "lib/runtime/initializer_inputs.h"

#include <fmt/format.h>

#include <set>

#include "lib/ir/initializer_inputs.h"
#include "lib/util/strings.h"

namespace porttool::runtime {

std::vector<std::string> FeedInitializerInputs(io::Model& model, const TensorMap& given) {
  std::vector<std::string> fed;
  for (const auto& name : ir::InitializerInputs(model.proto.graph())) {
    if (given.count(name)) fed.push_back(name);
  }
  if (fed.empty()) return fed;
  const std::set<std::string> drop(fed.begin(), fed.end());
  auto* initializers = model.proto.mutable_graph()->mutable_initializer();
  for (int i = initializers->size() - 1; i >= 0; --i) {
    if (drop.count(initializers->Get(i).name())) initializers->DeleteSubrange(i, 1);
  }
  return fed;
}

std::string FedInitializersNote(const std::vector<std::string>& names) {
  return fmt::format(
      "{} given value(s) replace initializer(s) the model also lists as graph inputs: {} (the "
      "model's own values are used when none is given)",
      names.size(), util::JoinFirst(names));
}

}  // namespace porttool::runtime
