#include "lib/stages/decide.h"

#include "lib/ir/graph_view.h"
#include "lib/stages/target.h"

namespace porttool::stages {

decide::DecisionReport DecideStage(const io::Model& model, const decide::DecideOptions& options) {
  ir::RequireDefinedNames(model.proto.graph());
  // What decide::Decide cannot check (it knows no passes) but check, split and port reject at
  // load, so decide fails on the same files, with the same message: the profile's rewrites and
  // the remedies' pass ids.
  if (!options.target.empty()) LoadTargetProfile(options.rules_dir, options.target);
  ValidateRemedyPasses(options.rules_dir / "decision" / "remedies.json");
  return decide::Decide(model, options);
}

}  // namespace porttool::stages
