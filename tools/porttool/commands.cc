#include "tools/porttool/commands.h"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/util/error.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

// Protobuf logs parse problems itself; porttool reports them as one-line errors instead.
void QuietProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

int RunGuarded(const RunFn& run) {
  try {
    return run();
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return ExitCodeFor(e.kind());
  } catch (const std::bad_alloc&) {
    spdlog::error("out of memory");
    return kExitBadInput;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {} (please report this)", e.what());
    return kExitInternal;
  }
}

}  // namespace

int Main(int argc, char** argv) {
  google::protobuf::SetLogHandler(&QuietProtobufLog);
  CLI::App app{"porttool: port ONNX models to NPUs, embedded boards and microcontrollers"};
  app.set_version_flag("--version", std::string("porttool ") + PORTTOOL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v/-q work after the subcommand too: `porttool check m.onnx -q`
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "More log output on stderr (repeat for trace)");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
  RunFn run;
  for (auto* reg : {&RegisterInspect, &RegisterCheck, &RegisterInferShapes, &RegisterChain,
                    &RegisterSplit, &RegisterExtract, &RegisterRun, &RegisterCompare,
                    &RegisterEmitHeader, &RegisterDecide, &RegisterRules, &RegisterPasses,
                    &RegisterScaffoldOp, &RegisterKit, &RegisterQuantizeCalibrate}) {
    reg(app, run);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  SetUpLogging(verbose, quiet);
  return RunGuarded(run);
}

}  // namespace porttool::cli
