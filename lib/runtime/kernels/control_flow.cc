// If: runs the chosen branch through the Session (KernelContext::RunSubgraph), which keeps the
// enclosing graph's values visible to the branch.
#include <fmt/format.h>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

void IfKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"then_branch", "else_branch"});
  const Tensor& cond = ctx.input(0);
  if (cond.size() != 1) ctx.Fail("condition must hold one value, got " + cond.DebugString());
  bool take_then = ReadScalar(ctx, cond) != 0;
  const char* branch = take_then ? "then_branch" : "else_branch";
  const auto* attr = ctx.Attribute(branch);
  if (attr == nullptr || !attr->has_g()) ctx.Fail(fmt::format("missing graph '{}'", branch));
  std::vector<Tensor> outs = ctx.RunSubgraph(attr->g());
  if (static_cast<int>(outs.size()) != ctx.output_count()) {
    ctx.Fail(fmt::format("{} returns {} values but the node has {} outputs", branch, outs.size(),
                         ctx.output_count()));
  }
  for (int i = 0; i < ctx.output_count(); ++i) ctx.output(i) = std::move(outs[i]);
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) { r.Register("", "If", 1, 99, IfKernel); }

}  // namespace porttool::runtime
