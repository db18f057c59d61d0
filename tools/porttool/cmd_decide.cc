// Placeholder until this subcommand is implemented: registers nothing.
#include "tools/porttool/commands.h"

namespace porttool::cli {

void RegisterDecide(CLI::App&, RunFn&) {}

}  // namespace porttool::cli
