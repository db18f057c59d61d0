#include "lib/stages/custom_ops.h"

#include "lib/shape/custom_op_schema.h"

namespace porttool::stages {

std::unique_ptr<CustomOps> LoadCustomOps(const std::vector<std::filesystem::path>& dirs,
                                         const io::Model* model, bool with_kernels) {
  auto ops = std::make_unique<CustomOps>();
  for (const auto& dir : dirs) {
    if (with_kernels) {
      ops->set.Load(dir);
    } else {
      auto spec = shape::ReadOpSpec(dir);
      shape::RegisterCustomOpSchema(spec);
      if (model) shape::CheckModelAgainstSpec(model->proto, spec, (dir / "op.json").string());
    }
  }
  if (model) ops->set.CheckModel(model->proto);
  if (!ops->set.empty()) {
    ops->kernels = ops->set.MakeRegistry(/*override_builtin=*/true);
    ops->fill_kernels = ops->set.MakeRegistry(/*override_builtin=*/false);
  }
  return ops;
}

}  // namespace porttool::stages
