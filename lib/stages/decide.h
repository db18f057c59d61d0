// DecideStage: the decision report (`porttool decide`): facts from the model, the target profile,
// a facts file and flags, the decision table, the verdict and the five-step procedure
// (lib/decide/report.h). `port` extends the same report with what it did automatically.
#pragma once

#include "lib/decide/report.h"

namespace porttool::stages {

decide::DecisionReport DecideStage(const io::Model& model, const decide::DecideOptions& options);

}  // namespace porttool::stages
