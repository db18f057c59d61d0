// The registry table: one line per pass. `porttool passes` lists them in this order.
#include <memory>

#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "passes/check.h"
#include "passes/constant_to_initializer.h"
#include "passes/convert_fp16.h"
#include "passes/convert_opset.h"
#include "passes/decompose_gelu.h"
#include "passes/eliminate_dead_code.h"
#include "passes/eliminate_identity.h"
#include "passes/eliminate_unused_initializers.h"
#include "passes/fold_constants.h"
#include "passes/fuse_conv_add.h"
#include "passes/fuse_conv_bn.h"
#include "passes/fuse_conv_mul.h"
#include "passes/gelu_to_tanh.h"
#include "passes/hardswish.h"
#include "passes/infer_shapes.h"
#include "passes/inline_if.h"
#include "passes/name_nodes.h"
#include "passes/pass.h"
#include "passes/replace_with_custom_op.h"
#include "passes/resize_nearest_half_pixel.h"
#include "passes/resize_to_upsample.h"
#include "passes/topo_sort.h"

namespace porttool::passes {

const std::vector<std::unique_ptr<Pass>>& Registry() {
  static const auto* registry = [] {
    auto* r = new std::vector<std::unique_ptr<Pass>>();
    r->push_back(std::make_unique<InferShapesPass>());
    r->push_back(std::make_unique<CheckPass>());
    r->push_back(std::make_unique<TopoSortPass>());
    r->push_back(std::make_unique<NameNodesPass>());
    r->push_back(std::make_unique<EliminateIdentityPass>());
    r->push_back(std::make_unique<FoldConstantsPass>());
    r->push_back(std::make_unique<InlineIfPass>());
    r->push_back(std::make_unique<ConstantToInitializerPass>());
    r->push_back(std::make_unique<EliminateDeadCodePass>());
    r->push_back(std::make_unique<EliminateUnusedInitializersPass>());
    r->push_back(std::make_unique<FuseConvBnPass>());
    r->push_back(std::make_unique<FuseConvMulPass>());
    r->push_back(std::make_unique<FuseConvAddPass>());
    r->push_back(std::make_unique<ResizeToUpsamplePass>());
    r->push_back(std::make_unique<ResizeNearestHalfPixelPass>());
    r->push_back(std::make_unique<DecomposeGeluPass>());
    r->push_back(std::make_unique<GeluToTanhPass>());
    r->push_back(std::make_unique<FuseHardSwishPass>());
    r->push_back(std::make_unique<DecomposeHardSwishPass>());
    r->push_back(std::make_unique<ReplaceWithCustomOpPass>());
    r->push_back(std::make_unique<ConvertOpsetPass>());
    r->push_back(std::make_unique<ConvertFp16Pass>());
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
