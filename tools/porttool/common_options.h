// Options and helpers every subcommand shares: the one CLI grammar (-o, --input-shape, --input,
// --seed, --json, --rules-dir, --target, --in-place), logging set-up, JSON printing, and the
// guard that turns porttool::Error into an exit code (and, with --json, a JSON error document).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/analysis/check.h"
#include "lib/decide/target.h"
#include "lib/io/model.h"
#include "lib/quant/quantize_calibrate.h"
#include "lib/runtime/session.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"
#include "lib/stages/custom_ops.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::cli {

// Exit codes (README "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBadInput = 3;
inline constexpr int kExitInternal = 4;

// The one default for every --seed, so `run`, `compare` and `split --verify` draw the same
// random inputs unless told otherwise.
inline constexpr uint64_t kDefaultSeed = 0;

// Adds a positional MODEL argument that must name an existing path.
CLI::Option* AddModelArg(CLI::App& cmd, std::string& path);
CLI::Option* AddJsonFlag(CLI::App& cmd, bool& json);
CLI::Option* AddInputShapeOption(CLI::App& cmd, std::vector<std::string>& specs);
CLI::Option* AddInputOption(CLI::App& cmd, std::vector<std::string>& specs);
// --input-value NAME=VALUE (repeatable): an input whose value is known, made a constant.
CLI::Option* AddInputValueOption(CLI::App& cmd, std::vector<std::string>& specs);
// --input-range NAME=LO:HI (repeatable): the values random inputs draw for NAME.
CLI::Option* AddInputRangeOption(CLI::App& cmd, std::vector<std::string>& specs);
CLI::Option* AddSeedOption(CLI::App& cmd, uint64_t& seed, const std::string& what);
CLI::Option* AddThreadsOption(CLI::App& cmd, int& threads);
// --ort-compatible: Resize computed with ONNX Runtime's arithmetic (to compare against ORT bit for
// bit). Apply it with ApplyOrtCompatibleFlag before the command runs the executor.
CLI::Option* AddOrtCompatibleFlag(CLI::App& cmd, bool& ort_compatible);
void ApplyOrtCompatibleFlag(bool ort_compatible);
CLI::Option* AddRulesDirOption(CLI::App& cmd, std::string& dir);
// --target NAME|FILE.json: a target profile. Its help lists the shipped profiles, and its type
// name (kTargetTypeName) tells the completion script to offer them.
inline constexpr char kTargetTypeName[] = "NAME|FILE.json";
CLI::Option* AddTargetOption(CLI::App& cmd, std::string& target, const std::string& what);
// The shipped profiles' names (rules/targets/*.json of the rules directory in use); empty when
// there is none.
std::vector<std::string> ShippedTargetNames();

// A numeric range check whose message says the range in plain numbers ("from 1 to 4096").
CLI::Validator InRange(double min, double max);

// --input-shape values, parsed; errors carry the flag name.
shape::InputShapes ParseShapeFlags(const std::vector<std::string>& specs);
// --input NAME=FILE values, read (.npy or .pb); a malformed spec or repeated name is a usage
// error naming the flag.
runtime::TensorMap ReadInputFlags(const std::vector<std::string>& specs);
// --input-value values: NAME=16000, NAME=1,2,3 (numbers, converted to the input's type when
// applied) or NAME=FILE.npy|.pb (read here). A malformed spec, a bad number or a repeated name is
// a usage error naming the flag; an unreadable file is bad input.
shape::InputValues ParseInputValueFlags(const std::vector<std::string>& specs);
// --input-range values: NAME=LO:HI; usage errors name the flag.
shape::InputRanges ParseInputRangeFlags(const std::vector<std::string>& specs);

// The rules directory: --rules-dir, else $PORTTOOL_RULES_DIR, else <prefix>/share/porttool/rules
// next to an installed binary, else the source tree's rules/.
std::filesystem::path ResolveRulesDir(const std::string& flag);
decide::TargetProfile LoadTargetFlag(const std::string& rules_dir_flag, const std::string& target);

// Loads a model, logging at -v how long it took and what it holds.
io::Model LoadModel(const std::string& path);

// Refuses (usage error) to write a non-model output (report, header, weights) when it is the
// model file or a file the model references (external data). Call before any work is done.
void RefuseOverwritingInput(const io::Model& model, const std::filesystem::path& output);

// --force for every subcommand that writes a directory: one flag, one rule (io::CheckOutputDir).
CLI::Option* AddForceFlag(CLI::App& cmd, bool& force);

// The paths among `paths` that name something (flags left empty are dropped): the inputs of a
// run that its output directory must not hold.
std::vector<std::filesystem::path> InputPaths(const std::vector<std::string>& paths);
// --target's value when it is a profile file (a path), else empty (a shipped profile's name).
std::string TargetFile(const std::string& target);

// --custom-op DIR (repeatable): scaffold-op packages to load.
CLI::Option* AddCustomOpOption(CLI::App& cmd, std::vector<std::string>& dirs);

// --custom-op packages for one command (lib/stages/custom_ops.h). Errors are exit 3.
std::unique_ptr<stages::CustomOps> LoadCustomOps(const std::vector<std::string>& dirs,
                                                 const io::Model* model, bool with_kernels);

// The type names that mark an output option: help shows them, and the output-guard test
// (cli_output_guard_test.cc) finds every output option of every subcommand by them.
inline constexpr char kOutputFileType[] = "OUT_FILE";
inline constexpr char kOutputDirType[] = "OUT_DIR";

// One --precision grammar for every subcommand that takes it (run, compare, quantize-calibrate,
// port), repeatable: a value without ':' sets the float arithmetic of the whole model (fp32, the
// default, or fp16 as an NPU computes it); TYPE:NODE[,NODE...] sets those nodes' precision:
// fp32 (computed in float32 under fp16), float (left unquantized: the target's float), int16
// (16-bit activations, int8 weights).
struct PrecisionFlags {
  bool fp16 = false;  // the whole model's float arithmetic
  std::vector<std::string> fp32_nodes, float_nodes, int16_nodes;
};
// What the subcommand does with the values: kExecute (run, compare) computes the model, so the
// quantization kinds (float:, int16:, int8:) are usage errors saying where they belong;
// kQuantize (quantize-calibrate, port) writes a quantized model in float32 arithmetic, so a
// whole-model fp16 is one. Every error names the flag and the value.
enum class PrecisionUse { kExecute, kQuantize };
PrecisionFlags ParsePrecisionFlags(const std::vector<std::string>& specs, PrecisionUse use);
// run and compare: the session options --precision asks for (float16 and its float32 nodes).
void ApplyPrecisionFlags(const PrecisionFlags& flags, runtime::SessionOptions& session);
// --precision's help line for run and compare.
extern const char kExecutePrecisionHelp[];
// A float16 overflow as run and compare warn of it: the tensor, the node that produces it (a
// weight: the node that reads it; a graph input: none), max |x| against 65504, and the
// --precision fp32:NODE that keeps the node in float32.
std::string Float16OverflowMessage(const runtime::Float16Overflow& overflow);
// [{tensor, node, weight, max_abs, limit}]: the `float16.overflows` of run's and compare's --json.
nlohmann::json Float16OverflowsJson(const std::vector<runtime::Float16Overflow>& overflows);
// The one line saying which float64 tensors --precision fp16 left in float64.
std::string Float64KeptMessage(const std::vector<std::string>& names);

// The quantization options quantize-calibrate and port share: one grammar, one parser.
struct QuantizeFlags {
  std::string data, eval_data, preprocess_file;
  // The defaults are the settings that reached the task figures on PP-OCRv4 det and rec and PP-OCR
  // cls (docs/cli/quantize-calibrate.md#defaults): mse ranges, per-channel weights, channel
  // equalization and bias correction when calibrating.
  std::string method = "mse";
  double percentile = 99.999;
  bool per_channel = false, per_tensor = false, symmetric = false, no_prepare = false;
  std::vector<std::string> exclude_ops, exclude_nodes, precision;
  std::string resize, layout = "NCHW", channel_order = "RGB";
  double scale = 1.0 / 255.0;
  std::vector<double> mean = {0, 0, 0}, std = {1, 1, 1};
  int crops = 0, max_raised = 8;
  int64_t max_image_pixels = quant::kDefaultMaxImagePixels;
  bool keep_ratio = false, rotate_180 = false;
  std::string crops_from_boxes;  // FILE.json
  std::string accuracy_target;   // METRIC:VALUE
  std::vector<std::string> tasks;
  std::string labels;
  bool sensitivity = false;
  // Asked for: applied even without calibration samples (the library then says why it cannot);
  // by default on only when calibrating from --data. The no_ switches turn them off.
  bool bias_correction = false, equalize = false;
  bool no_bias_correction = false, no_equalize = false;
  std::string raise_to = "int16";
  std::optional<double> target_sqnr;
  int64_t histogram_values = quant::kDefaultHistogramValues;
};
void AddQuantizeOptions(CLI::App& cmd, QuantizeFlags& flags);
// The request those flags describe (samples, preprocessing, method, QDQ options, mixed-precision
// target); `threads` samples run at once. Usage errors name the flag.
quant::QuantizeCalibrateRequest QuantizeRequestFromFlags(const QuantizeFlags& flags, int threads);

// Options for writing a model: -o, --external-data [FILE], --external-threshold, --in-place.
struct ModelOutputOptions {
  std::string output;
  std::string external_data;  // empty: inline; "auto": <output>.data; else the file name
  uint64_t external_threshold = 1024;
  bool in_place = false;
};
void AddModelOutputOptions(CLI::App& cmd, ModelOutputOptions& out, bool required);
// Refuses an output (or its --external-data file) that would overwrite `model`'s files.
void RefuseOverwritingInput(const io::Model& model, const ModelOutputOptions& out);
// Saves with those options and logs the notes. Returns the written files. With `outputs`, the
// files are left in it for the caller to commit with its other outputs (all of them or none).
std::vector<std::string> SaveModel(io::Model& model, const ModelOutputOptions& out,
                                   io::OutputSet* outputs = nullptr);

// Prints one JSON document to stdout (pretty, newline-terminated).
void PrintJson(const nlohmann::json& doc);
// {"error": {"kind", "message", "node"|"tensor"}} for a failed command run with --json.
nlohmann::json ErrorJson(ErrorKind kind, const std::string& message, const std::string& node = {},
                         const std::string& tensor = {});
// The command that applies a finding's fix, built from its id and the node or tensor it names
// (the library says "split at node 'X'"; the CLI knows the flags): `porttool split PATH --at X`
// for a custom-domain op or a node the target cannot run, an infer-shapes pin for a dynamic
// input. nullopt for findings without one.
std::optional<std::string> FixCommand(const analysis::Finding& finding, const io::Model& model,
                                      const std::string& model_path);

// The library names no flags; for the errors whose subject a flag sets, this adds the hint.
std::string WithFlagHint(const std::string& message);

// Sets the spdlog level from -v/-q counts; logs go to stderr, coloured only on a TTY.
void SetUpLogging(int verbose, bool quiet);

// Logs "<what>: N ms" at -v when it goes out of scope: per-stage timings.
class StageTimer {
 public:
  explicit StageTimer(std::string what)
      : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {}
  ~StageTimer();

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

// Text output stays a screenful whatever the model's size: the first `limit` items through
// `print`, then "<indent>and N more <what> (<where>)". For lists that grow with the model (inputs,
// buffers, notes, blockers); --json keeps what the text leaves out.
template <class Item, class Print>
void PrintBounded(const std::vector<Item>& items, size_t limit, const std::string& indent,
                  const std::string& what, const std::string& where, Print print) {
  for (size_t i = 0; i < items.size() && i < limit; ++i) print(items[i]);
  if (items.size() <= limit) return;
  std::cout << indent << "and " << util::GroupDigits(items.size() - limit) << " more " << what
            << " (" << where << ")\n";
}

}  // namespace porttool::cli
