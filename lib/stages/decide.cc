#include "lib/stages/decide.h"

namespace porttool::stages {

decide::DecisionReport DecideStage(const io::Model& model, const decide::DecideOptions& options) {
  return decide::Decide(model, options);
}

}  // namespace porttool::stages
