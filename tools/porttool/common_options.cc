#include "tools/porttool/common_options.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

namespace porttool::cli {

CLI::Option* AddModelArg(CLI::App& cmd, std::string& path) {
  return cmd.add_option("model", path, "ONNX model file (.onnx)")->required();
}

CLI::Option* AddJsonFlag(CLI::App& cmd, bool& json) {
  return cmd.add_flag("--json", json, "Print one JSON document to stdout instead of text");
}

CLI::Option* AddInputShapeOption(CLI::App& cmd, std::vector<std::string>& specs) {
  return cmd.add_option(
      "--input-shape", specs,
      "Pin an input's dims before inference: NAME:DIMS, e.g. x:1x3x640x640 "
      "(repeat, or separate with ',' for several inputs; NAME:scalar for rank 0)");
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
  cmd.add_flag("--in-place", out.in_place, "Allow -o to name the input model itself");
}

std::vector<std::string> SaveModel(io::Model& model, const ModelOutputOptions& out) {
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

void PrintJson(const nlohmann::json& doc) { std::cout << doc.dump(2) << "\n"; }

void SetUpLogging(int verbose, bool quiet) {
  auto logger = spdlog::stderr_color_mt("porttool");
  logger->set_pattern("%^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = spdlog::level::info;
  if (quiet) level = spdlog::level::err;
  if (verbose == 1) level = spdlog::level::debug;
  if (verbose >= 2) level = spdlog::level::trace;
  spdlog::set_level(level);
}

}  // namespace porttool::cli
