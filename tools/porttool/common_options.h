// Options and helpers every subcommand shares: --json, --input-shape, output flags, logging
// set-up, JSON printing, and the guard that turns porttool::Error into an exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/custom_op_library.h"

namespace porttool::cli {

// Exit codes (README "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadInput = 3;
inline constexpr int kExitInternal = 4;

// Adds a positional MODEL argument that must name an existing path.
CLI::Option* AddModelArg(CLI::App& cmd, std::string& path);
CLI::Option* AddJsonFlag(CLI::App& cmd, bool& json);
CLI::Option* AddInputShapeOption(CLI::App& cmd, std::vector<std::string>& specs);

// --custom-op DIR (repeatable): scaffold-op packages to load.
CLI::Option* AddCustomOpOption(CLI::App& cmd, std::vector<std::string>& dirs);

// Scaffolded ops loaded for one command. Schemas are registered with libonnx on load; with
// kernels, each package's built library is loaded and `kernels` (built-in + custom, the custom
// kernel replacing a built-in one of the same op) is what sessions get; `fill_kernels` only adds
// ops the executor lacks (the reference side of compare).
struct CustomOps {
  runtime::CustomOpSet set;
  runtime::KernelRegistry kernels;
  runtime::KernelRegistry fill_kernels;
  // Null when no --custom-op was given, so sessions use the built-in registry.
  const runtime::KernelRegistry* Kernels() const { return set.empty() ? nullptr : &kernels; }
  const runtime::KernelRegistry* FillKernels() const {
    return set.empty() ? nullptr : &fill_kernels;
  }
};
// Loads `dirs` and checks `model` (when given) against each op.json. `with_kernels` false: only
// op.json and the schema (check, infer-shapes). Errors are Error(kBadInput): exit 3.
std::unique_ptr<CustomOps> LoadCustomOps(const std::vector<std::string>& dirs,
                                         const io::Model* model, bool with_kernels);

// Options for writing a model: -o, --external-data [FILE], --external-threshold, --in-place.
struct ModelOutputOptions {
  std::string output;
  std::string external_data;  // empty: inline; "auto": <output>.data; else the file name
  uint64_t external_threshold = 1024;
  bool in_place = false;
};
void AddModelOutputOptions(CLI::App& cmd, ModelOutputOptions& out, bool required);
// Saves with those options and logs the notes. Returns the written files.
std::vector<std::string> SaveModel(io::Model& model, const ModelOutputOptions& out);

// Prints one JSON document to stdout (pretty, newline-terminated).
void PrintJson(const nlohmann::json& doc);

// Sets the spdlog level from -v/-q counts; logs go to stderr, coloured only on a TTY.
void SetUpLogging(int verbose, bool quiet);

}  // namespace porttool::cli
