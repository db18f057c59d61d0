#include "tools/porttool/common_options.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

#include "lib/runtime/tensor_io.h"
#include "lib/util/json_text.h"
#include "lib/util/strings.h"
#include "passes/input_shape_spec.h"
#include "porttool_build_config.h"

namespace porttool::cli {
namespace fs = std::filesystem;

CLI::Option* AddModelArg(CLI::App& cmd, std::string& path) {
  return cmd.add_option("model", path, "ONNX model file (.onnx)")->required();
}

CLI::Option* AddJsonFlag(CLI::App& cmd, bool& json) {
  return cmd.add_flag("--json", json,
                      "Print one JSON document to stdout instead of text (errors too: "
                      "{\"error\": {...}})");
}

CLI::Option* AddInputShapeOption(CLI::App& cmd, std::vector<std::string>& specs) {
  return cmd.add_option(
      "--input-shape", specs,
      "Pin an input's dims before inference: NAME:DIMS, e.g. x:1x3x640x640 "
      "(repeat, or separate with ',' for several inputs; NAME:scalar for rank 0)");
}

CLI::Option* AddInputOption(CLI::App& cmd, std::vector<std::string>& specs) {
  return cmd.add_option("--input", specs,
                        "An input value: NAME=FILE (.npy or ONNX TensorProto .pb); repeat per "
                        "input");
}

CLI::Option* AddSeedOption(CLI::App& cmd, uint64_t& seed, const std::string& what) {
  seed = kDefaultSeed;
  return cmd.add_option("--seed", seed, "Seed for " + what)->capture_default_str();
}

CLI::Option* AddThreadsOption(CLI::App& cmd, int& threads) {
  return cmd.add_option("--threads", threads, "Threads for kernels (default: all cores)")
      ->check(InRange(1, 1024));
}

CLI::Option* AddRulesDirOption(CLI::App& cmd, std::string& dir) {
  return cmd.add_option("--rules-dir", dir,
                        "Directory with decision/ and targets/ (default: $PORTTOOL_RULES_DIR, "
                        "else the installed share/porttool/rules, else the source tree's "
                        "rules/)");
}

CLI::Option* AddTargetOption(CLI::App& cmd, std::string& target, const std::string& what) {
  return cmd.add_option("--target", target,
                        what +
                            ": a profile name (rules/targets/NAME.json) or the path to a "
                            "profile JSON");
}

CLI::Validator InRange(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < min || v > max) {
          return fmt::format("{} is out of range: expected a number from {} to {}", text, min, max);
        }
        return {};
      },
      fmt::format("NUMBER in [{} - {}]", min, max));
}

shape::InputShapes ParseShapeFlags(const std::vector<std::string>& specs) {
  try {
    return passes::ParseInputShapes(specs);
  } catch (const Error& e) {
    throw Error(e.kind(), std::string("--input-shape: ") + e.what(), e.node(), e.tensor());
  }
}

runtime::TensorMap ReadInputFlags(const std::vector<std::string>& specs) {
  runtime::TensorMap tensors;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      ThrowUsage("--input '{}': expected NAME=FILE (a .npy or .pb file)", spec);
    }
    std::string name = spec.substr(0, eq);
    if (tensors.count(name)) ThrowUsage("--input: '{}' is given more than once", name);
    tensors[name] = runtime::ReadTensorFile(spec.substr(eq + 1));
  }
  return tensors;
}

namespace {

// A rules directory that holds no rules fails the same way (exit 3) whatever reads it.
fs::path CheckedRulesDir(const fs::path& dir, const char* origin) {
  std::error_code ec;
  if (!fs::is_directory(dir / "decision", ec) && !fs::is_directory(dir / "targets", ec)) {
    ThrowBadInput(
        "no rule files under {} (from {}; a rules directory holds decision/ and "
        "targets/)",
        dir.string(), origin);
  }
  return dir;
}

}  // namespace

fs::path ResolveRulesDir(const std::string& flag) {
  if (!flag.empty()) return CheckedRulesDir(flag, "--rules-dir");
  if (const char* env = std::getenv("PORTTOOL_RULES_DIR"); env && *env) {
    return CheckedRulesDir(env, "$PORTTOOL_RULES_DIR");
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "porttool" / "rules";
    if (fs::is_directory(installed / "targets", ec)) return installed;
  }
  return fs::path(PORTTOOL_SOURCE_DIR) / "rules";
}

decide::TargetProfile LoadTargetFlag(const std::string& rules_dir_flag, const std::string& target) {
  return decide::LoadTarget(ResolveRulesDir(rules_dir_flag), target);
}

io::Model LoadModel(const std::string& path) {
  StageTimer timer("load " + path);
  io::Model model = io::Load(path);
  spdlog::debug("{}: {} nodes, {} initializers, {} referenced file(s)", path,
                model.proto.graph().node_size(), model.proto.graph().initializer_size(),
                io::ReferencedFiles(model).size());
  return model;
}

namespace {

void Refuse(const io::Model& model, const fs::path& output, bool in_place, const char* fix) {
  if (in_place || output.empty()) return;
  if (auto input = io::InputFileAt(model, output)) {
    ThrowUsage("refusing to write '{}': it is {} '{}'; {}", output.string(),
               *input == model.path ? "the input model" : "external data of the input model",
               model.path.string(), fix);
  }
}

}  // namespace

void RefuseOverwritingInput(const io::Model& model, const fs::path& output) {
  Refuse(model, output, false, "choose another output file");
}

CLI::Option* AddCustomOpOption(CLI::App& cmd, std::vector<std::string>& dirs) {
  return cmd.add_option("--custom-op", dirs,
                        "A scaffold-op package directory: registers its op.json schema and runs "
                        "its built kernel library (repeat for several ops)");
}

std::unique_ptr<CustomOps> LoadCustomOps(const std::vector<std::string>& dirs,
                                         const io::Model* model, bool with_kernels) {
  auto ops = std::make_unique<CustomOps>();
  for (const auto& dir : dirs) {
    if (with_kernels) {
      ops->set.Load(dir);
    } else {
      auto spec = shape::ReadOpSpec(dir);
      shape::RegisterCustomOpSchema(spec);
      if (model) shape::CheckModelAgainstSpec(model->proto, spec, dir + "/op.json");
    }
  }
  if (model) ops->set.CheckModel(model->proto);
  if (!ops->set.empty()) {
    ops->kernels = ops->set.MakeRegistry(/*override_builtin=*/true);
    ops->fill_kernels = ops->set.MakeRegistry(/*override_builtin=*/false);
  }
  return ops;
}

void AddModelOutputOptions(CLI::App& cmd, ModelOutputOptions& out, bool required) {
  auto* o = cmd.add_option("-o,--output", out.output, "Where to write the resulting model");
  if (required) o->required();
  cmd.add_option("--external-data", out.external_data,
                 "Write weights to an external data file next to the output (FILE, or 'auto' "
                 "for <output>.data); needed for models over protobuf's 2 GB limit")
      ->expected(0, 1)
      ->default_str("auto");
  cmd.add_option("--external-threshold", out.external_threshold,
                 "With --external-data: tensors of at least this many bytes go external")
      ->capture_default_str();
  cmd.add_flag("--in-place", out.in_place,
               "Allow -o (or --external-data) to name the input model or its external data");
}

void RefuseOverwritingInput(const io::Model& model, const ModelOutputOptions& out) {
  Refuse(model, out.output, out.in_place, "choose another -o, or pass --in-place");
  if (out.external_data.empty() || out.output.empty()) return;
  fs::path dir = fs::path(out.output).parent_path();
  std::string file = out.external_data == "auto"
                         ? fs::path(out.output).filename().string() + ".data"
                         : out.external_data;
  if (out.in_place) return;
  if (auto input = io::InputFileAt(model, (dir.empty() ? fs::path(".") : dir) / file)) {
    ThrowUsage(
        "refusing to write external data to '{}': the input model '{}' reads its weights "
        "from it; choose another --external-data file, or pass --in-place",
        input->string(), model.path.string());
  }
}

std::vector<std::string> SaveModel(io::Model& model, const ModelOutputOptions& out) {
  StageTimer timer("save " + out.output);
  io::SaveOptions options;
  options.external_data = !out.external_data.empty();
  options.external_file = out.external_data == "auto" ? "" : out.external_data;
  options.external_threshold = out.external_threshold;
  options.in_place = out.in_place;
  io::SaveResult result = io::Save(model, out.output, options);
  for (const auto& note : result.notes) spdlog::warn("{}", note);
  std::vector<std::string> files;
  for (const auto& f : result.files) files.push_back(f.string());
  return files;
}

void PrintJson(const nlohmann::json& doc) { std::cout << util::DumpJson(doc, 2) << "\n"; }

nlohmann::json ErrorJson(ErrorKind kind, const std::string& message, const std::string& node,
                         const std::string& tensor) {
  static const char* kKinds[] = {"check_failed", "usage", "bad_input", "internal"};
  nlohmann::json error = {{"kind", kKinds[static_cast<int>(kind)]},
                          {"exit_code", ExitCodeFor(kind)},
                          {"message", message}};
  if (!node.empty()) error["node"] = node;
  if (!tensor.empty()) error["tensor"] = tensor;
  return {{"error", error}};
}

std::string WithFlagHint(const std::string& message) {
  // Library messages name their subject in words; the subjects a flag sets get that flag.
  static const std::pair<const char*, const char*> kHints[] = {
      {"input shape", "--input-shape NAME:DIMS"},
      {"or generate random inputs", "--input NAME=FILE or --random-inputs"},
      {"give its value", "--input NAME=FILE"},
      {"cut node", "--at NODE"},
      {"choose another output directory", "-o DIR"},
      {"no header output given", "-o OUT.h"},
      {"weights file", "--weights FILE.bin|FILE.c"},
      {"buffer alignment", "--align N"},
      {"symbol prefix", "--prefix NAME"},
      {"is not a tensor directory", "compare --save-outputs DIR writes one"},
      {"calibration table for calibrated values", "--table FILE"},
      {"external data file", "--external-data FILE"},
      {"unknown target", "--target NAME|FILE.json"},
      {"target profile", "--target NAME|FILE.json"},
      {"no rule files under", "--rules-dir DIR or $PORTTOOL_RULES_DIR"},
      {"refusing to overwrite", "-o OUT, or --in-place"},
      {"protobuf cannot write a message over 2 GB", "--external-data [FILE]"},
      {"memory limit", "raise the limits with --max-tensor-memory / --max-memory"},
      {"loop iteration limit", "raise the limit with --max-loop-iterations N"},
  };
  for (const auto& [subject, flag] : kHints) {
    if (message.find(subject) != std::string::npos) return message + " [" + flag + "]";
  }
  return message;
}

void SetUpLogging(int verbose, bool quiet) {
  auto logger = spdlog::get("porttool");
  if (!logger) logger = spdlog::stderr_color_mt("porttool");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = spdlog::level::info;
  if (quiet) level = spdlog::level::err;
  if (verbose == 1) level = spdlog::level::debug;
  if (verbose >= 2) level = spdlog::level::trace;
  spdlog::set_level(level);
}

StageTimer::~StageTimer() {
  std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start_;
  spdlog::debug("{}: {:.1f} ms", what_, ms.count());
}

}  // namespace porttool::cli
