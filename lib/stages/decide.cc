#include "lib/stages/decide.h"

#include "lib/ir/graph_view.h"

namespace porttool::stages {

decide::DecisionReport DecideStage(const io::Model& model, const decide::DecideOptions& options) {
  ir::RequireDefinedNames(model.proto.graph());
  return decide::Decide(model, options);
}

}  // namespace porttool::stages
