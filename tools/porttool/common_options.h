// Options and helpers every subcommand shares: --json, --input-shape, output flags, logging
// set-up, JSON printing, and the guard that turns porttool::Error into an exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/io/model.h"

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
