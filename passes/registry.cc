// The registry table: one line per pass. `porttool passes` lists them in this order.
#include <memory>

#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "passes/eliminate_identity.h"
#include "passes/pass.h"
#include "passes/stages.h"
#include "passes/topo_sort.h"

namespace porttool::passes {

const std::vector<std::unique_ptr<Pass>>& Registry() {
  static const auto* registry = [] {
    auto* r = new std::vector<std::unique_ptr<Pass>>();
    r->push_back(std::make_unique<InferShapesStage>());
    r->push_back(std::make_unique<CheckStage>());
    r->push_back(std::make_unique<TopoSortPass>());
    r->push_back(std::make_unique<EliminateIdentityPass>());
    return r;
  }();
  return *registry;
}

const Pass& FindPass(const std::string& id) {
  std::vector<std::string> ids;
  for (const auto& pass : Registry()) {
    if (pass->id() == id) return *pass;
    ids.push_back(pass->id());
  }
  auto close = util::ClosestNames(id, ids, 3);
  ThrowUsage("unknown pass '{}'{} (`porttool passes` lists them all)", id,
             close.empty() ? "" : "; did you mean: " + util::Join(close, ", ") + "?");
}

}  // namespace porttool::passes
