// eliminate-unused-initializers: drops weights nothing reads.
//
// Before: initializers {W, W_old}; y = Conv(x, W)
// After:  initializers {W};        y = Conv(x, W)
//
// Preconditions: an initializer that is also a graph input is kept (callers may feed it).
// Why: fusions and folds leave the replaced weights behind; they cost file size and flash.
#include "passes/eliminate_unused_initializers.h"

#include <fmt/format.h>

#include "lib/ir/rewrite.h"

namespace porttool::passes {

PassResult EliminateUnusedInitializersPass::Run(io::Model& model, const PassOptions&,
                                                PassContext&) const {
  PassResult result;
  auto removed = ir::RemoveUnusedInitializers(*model.proto.mutable_graph());
  result.changes = static_cast<int>(removed.size());
  if (!removed.empty()) {
    result.notes.push_back(fmt::format("removed {} unused initializer(s), first '{}'",
                                       removed.size(), removed.front()));
  }
  return result;
}

}  // namespace porttool::passes
