// The subcommand table. Each subcommand lives in cmd_<name>.cc with an options struct, a
// Register<Name> function that declares its options (with help text) on the app and sets
// `run` to its Run<Name> function, and returns nothing else. Main() parses, runs the selected
// subcommand, and maps porttool::Error to the documented exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace porttool::cli {

// What a Register function hands back: the code to run when its subcommand was selected.
using RunFn = std::function<int()>;

void RegisterInspect(CLI::App& app, RunFn& run);
void RegisterCheck(CLI::App& app, RunFn& run);
void RegisterInferShapes(CLI::App& app, RunFn& run);
void RegisterChain(CLI::App& app, RunFn& run);
void RegisterSplit(CLI::App& app, RunFn& run);
void RegisterExtract(CLI::App& app, RunFn& run);
void RegisterReduce(CLI::App& app, RunFn& run);
void RegisterRun(CLI::App& app, RunFn& run);
void RegisterCompare(CLI::App& app, RunFn& run);
void RegisterDiff(CLI::App& app, RunFn& run);
void RegisterEmitHeader(CLI::App& app, RunFn& run);
void RegisterEmitRunner(CLI::App& app, RunFn& run);
void RegisterDecide(CLI::App& app, RunFn& run);
void RegisterRules(CLI::App& app, RunFn& run);
void RegisterPasses(CLI::App& app, RunFn& run);
void RegisterScaffoldOp(CLI::App& app, RunFn& run);
void RegisterKit(CLI::App& app, RunFn& run);
void RegisterQuantizeCalibrate(CLI::App& app, RunFn& run);
void RegisterFoldConstants(CLI::App& app, RunFn& run);
void RegisterSimplify(CLI::App& app, RunFn& run);
void RegisterRewrite(CLI::App& app, RunFn& run);
void RegisterPort(CLI::App& app, RunFn& run);

// Every subcommand above, registered on `app` (Main's table; tests walk the options it declares).
void RegisterAll(CLI::App& app, RunFn& run);

int Main(int argc, char** argv);

}  // namespace porttool::cli
