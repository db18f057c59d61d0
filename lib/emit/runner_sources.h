// The static C files of a generated pipeline runner (lib/emit/runner_c/), embedded into porttool
// at configure time so that `emit-runner` works from an installed binary. The files stay plain C
// in the source tree, where they are formatted, reviewed and unit-tested like any other code.
#pragma once

#include <string>
#include <vector>

namespace porttool::emit {

struct RunnerSource {
  std::string name;  // file name inside the package, e.g. "pl_layout.c"
  std::string text;
};

const std::vector<RunnerSource>& RunnerSources();

}  // namespace porttool::emit
