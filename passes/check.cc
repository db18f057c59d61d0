#include "passes/check.h"

#include <fmt/format.h>

#include "lib/analysis/check.h"

namespace porttool::passes {

PassResult CheckPass::Run(io::Model& model, const PassOptions&, PassContext&) const {
  analysis::CheckReport report = analysis::CheckModel(model);
  PassResult result;
  for (const auto& [f, more] : analysis::SelectFindings(report, {})) {
    std::string where = !f->node.empty()     ? " node '" + f->node + "'"
                        : !f->tensor.empty() ? " tensor '" + f->tensor + "'"
                                             : "";
    result.notes.push_back(fmt::format("{} [{}]{}: {}", analysis::SeverityName(f->severity), f->id,
                                       where, f->message));
    if (more > 0) {
      result.notes.push_back(fmt::format("{} [{}]: {}", analysis::SeverityName(f->severity), f->id,
                                         analysis::MoreLikeThis(more)));
    }
  }
  result.failed = report.HasErrors();
  return result;
}

}  // namespace porttool::passes
