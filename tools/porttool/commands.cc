#include "tools/porttool/commands.h"

#include <google/protobuf/stubs/common.h>
#include <google/protobuf/stubs/logging.h>
#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

#include "lib/io/atomic_file.h"
#include "lib/io/run_inputs.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/resource_limits.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "porttool_build_config.h"
#include "tools/porttool/cli_docs.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

// Protobuf logs parse problems itself; porttool reports them as one-line errors instead.
void QuietProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

void ReportError(ErrorKind kind, const std::string& message, bool json,
                 const std::string& node = {}, const std::string& tensor = {}) {
  spdlog::error("{}", message);
  if (json) PrintJson(ErrorJson(kind, message, node, tensor));
}

int RunGuarded(const RunFn& run, bool json) {
  try {
    return run();
  } catch (const Error& e) {
    ReportError(e.kind(), WithFlagHint(e.what()), json, e.node(), e.tensor());
    return ExitCodeFor(e.kind());
  } catch (const std::bad_alloc&) {
    ReportError(ErrorKind::kBadInput, "out of memory", json);
    return kExitBadInput;
  } catch (const std::exception& e) {
    ReportError(ErrorKind::kInternal,
                fmt::format("internal error: {} (please report this)", e.what()), json);
    return kExitInternal;
  }
}

std::string VersionText() {
  auto ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  return fmt::format("porttool {}\nONNX {} (IR version {}, ai.onnx opsets up to {})\nprotobuf {}",
                     PORTTOOL_VERSION, PORTTOOL_ONNX_VERSION, static_cast<int>(onnx::IR_VERSION),
                     ranges[""].second,
                     google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION));
}

// --json anywhere (or decide's --format json): errors become a JSON document on stdout too.
bool WantsJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" || a == "--format=json") return true;
    if (a == "--format" && i + 1 < argc && std::string(argv[i + 1]) == "json") return true;
  }
  return false;
}

// CLI11 says "A subcommand is required" for `porttool chek m.onnx`; name the slip instead.
std::optional<std::string> UnknownSubcommand(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!a.empty() && a[0] == '-') continue;  // -v, -q, --version, --help
    if (std::find(names.begin(), names.end(), a) != names.end()) return std::nullopt;
    auto close = util::ClosestNames(a, names, 1);
    return fmt::format("unknown subcommand '{}'{}; subcommands: {} (porttool --help)", a,
                       close.empty() ? "" : "; did you mean '" + close[0] + "'?",
                       util::Join(names, ", "));
  }
  return std::nullopt;
}

}  // namespace

void RegisterAll(CLI::App& app, RunFn& run) {
  for (auto* reg : {&RegisterPort,          &RegisterInspect,    &RegisterCheck,
                    &RegisterInferShapes,   &RegisterChain,      &RegisterSplit,
                    &RegisterExtract,       &RegisterRun,        &RegisterCompare,
                    &RegisterEmitHeader,    &RegisterEmitRunner, &RegisterDecide,
                    &RegisterRules,         &RegisterPasses,     &RegisterQuantizeCalibrate,
                    &RegisterFoldConstants, &RegisterSimplify,   &RegisterRewrite,
                    &RegisterScaffoldOp,    &RegisterKit,        &RegisterReduce,
                    &RegisterDiff}) {
    reg(app, run);
  }
}

int Main(int argc, char** argv) {
  google::protobuf::SetLogHandler(&QuietProtobufLog);
  CLI::App app{"porttool: port ONNX models to NPUs, embedded boards and microcontrollers"};
  app.set_version_flag("--version", VersionText());
  app.require_subcommand(1);
  app.fallthrough();  // -v/-q work after the subcommand too: `porttool check m.onnx -q`
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose,
               "More detail on stderr: -v per-stage timings and notes, -vv trace");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
  runtime::ResourceLimits limits;
  app.add_option(
         "--max-tensor-memory", limits.tensor_bytes,
         "Largest tensor the executor may allocate, e.g. 2GB (default: physical memory / 4)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--max-memory", limits.total_bytes,
                 "Tensor memory the executor may hold at once, e.g. 8GB (default: physical "
                 "memory / 2)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--max-loop-iterations", limits.loop_iterations,
                 "Iterations one Loop node may run before the run is refused as a runaway loop "
                 "(default: " +
                     std::to_string(runtime::kDefaultLoopIterations) + ")");
  RunFn run;
  RegisterAll(app, run);
  bool json = WantsJson(argc, argv);
  SetUpLogging(0, false);
  if (argc == 2 && (std::string(argv[1]) == "--bash-completion")) {
    std::cout << BashCompletion(app, ShippedTargetNames());
    return kExitOk;
  }
  if (argc == 2 && (std::string(argv[1]) == "--man")) {
    std::cout << ManPage(app, VersionText(), ShippedTargetNames());
    return kExitOk;
  }
  if (argc == 1) {  // a first try: show what there is rather than "A subcommand is required"
    std::cerr << app.help();
    return kExitUsage;
  }
  if (auto unknown = UnknownSubcommand(app, argc, argv)) {
    ReportError(ErrorKind::kUsage, *unknown, json);
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0 || !json) {
      int code = app.exit(e);
      return code == 0 ? kExitOk : kExitUsage;
    }
    ReportError(ErrorKind::kUsage, e.what(), json);
    return kExitUsage;
  }
  SetUpLogging(verbose, quiet);
  runtime::SetResourceLimits(limits);
  // Every subcommand that runs the executor (fold-constants, simplify, split --verify,
  // quantize-calibrate, kit, ...) gets the allocator policy, not only run and compare: without it
  // each intermediate tensor page-faults fresh memory (quantize-calibrate at --threads 1 spent
  // about a third of its time zeroing pages). Subcommands with --threads set the thread count.
  runtime::ApplyProcessSettings({});
  io::TrackRunInputs();  // from here on every output is checked against what the run read
  // Test hook (lib/io/atomic_file.h): the CLI tests fail the Nth output rename of a subprocess.
  if (const char* nth = std::getenv("PORTTOOL_TEST_FAIL_COMMIT"); nth && *nth) {
    io::SetRenameFaultForTesting(std::atoi(nth));
  }
  StageTimer total("total");
  return RunGuarded(run, json);
}

}  // namespace porttool::cli
