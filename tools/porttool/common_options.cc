#include "tools/porttool/common_options.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "lib/decide/target.h"
#include "lib/runtime/float16.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/tensor_io.h"
#include "lib/stages/quantize.h"
#include "lib/stages/target.h"
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

CLI::Option* AddInputValueOption(CLI::App& cmd, std::vector<std::string>& specs) {
  return cmd.add_option(
      "--input-value", specs,
      "An input whose value is known, made a constant before simplifying (Ifs on it are "
      "inlined): NAME=16000 (a scalar), NAME=1,2,3 (a small tensor of the input's declared "
      "shape) or NAME=FILE.npy|.pb; repeat per input");
}

CLI::Option* AddInputRangeOption(CLI::App& cmd, std::vector<std::string>& specs) {
  return cmd.add_option("--input-range", specs,
                        "The values random inputs draw for an input: NAME=LO:HI (floats in "
                        "[LO, HI), integers in [LO, HI]); repeat per input");
}

CLI::Option* AddSeedOption(CLI::App& cmd, uint64_t& seed, const std::string& what) {
  seed = kDefaultSeed;
  return cmd.add_option("--seed", seed, "Seed for " + what)->capture_default_str();
}

CLI::Option* AddThreadsOption(CLI::App& cmd, int& threads) {
  return cmd.add_option("--threads", threads, "Threads for kernels (default: all cores)")
      ->check(InRange(1, 1024));
}

CLI::Option* AddOrtCompatibleFlag(CLI::App& cmd, bool& ort_compatible) {
  return cmd.add_flag(
      "--ort-compatible", ort_compatible,
      "Compute Resize with ONNX Runtime's CPU arithmetic (float coordinates and its weight "
      "products) instead of the ONNX formula in double: the results then match ONNX Runtime bit "
      "for bit, so a quantized model does not diverge from it on a one-ulp rounding flip; "
      "docs/cli/ort-compatible.md gives each mode's formula");
}

void ApplyOrtCompatibleFlag(bool ort_compatible) {
  runtime::ApplyProcessSettings({.ort_compatible_resize = ort_compatible});
}

CLI::Option* AddRulesDirOption(CLI::App& cmd, std::string& dir) {
  return cmd.add_option("--rules-dir", dir,
                        "Directory with decision/ and targets/ (default: $PORTTOOL_RULES_DIR, "
                        "else the installed share/porttool/rules, else the source tree's "
                        "rules/)");
}

std::vector<std::string> ShippedTargetNames() {
  try {
    return decide::TargetNames(ResolveRulesDir(""));
  } catch (const Error&) {
    return {};  // a broken $PORTTOOL_RULES_DIR is reported by the command that reads it
  }
}

CLI::Option* AddTargetOption(CLI::App& cmd, std::string& target, const std::string& what) {
  static const std::vector<std::string> names = ShippedTargetNames();
  std::string shipped = names.empty() ? "" : " (shipped: " + util::Join(names, ", ") + ")";
  return cmd
      .add_option("--target", target,
                  what + ": a profile name" + shipped +
                      " or the path to a profile JSON (rules/targets/NAME.json)")
      ->type_name(kTargetTypeName);
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

std::optional<shape::InputNumber> ParseNumber(const std::string& text) {
  int64_t i = 0;
  const char* end = text.data() + text.size();
  if (auto [ptr, ec] = std::from_chars(text.data(), end, i); ec == std::errc() && ptr == end) {
    return i;
  }
  double d = 0;
  if (auto [ptr, ec] = std::from_chars(text.data(), end, d);
      ec == std::errc() && ptr == end && std::isfinite(d)) {
    return d;
  }
  return std::nullopt;
}

bool IsTensorFile(const std::string& value) {
  return util::EndsWith(value, ".npy") || util::EndsWith(value, ".pb");
}

// NAME and the text after '=', or a usage error quoting the spec.
std::pair<std::string, std::string> SplitSpec(const std::string& flag, const std::string& spec,
                                              const char* expected) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    ThrowUsage("{} '{}': expected {}", flag, spec, expected);
  }
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

}  // namespace

shape::InputValues ParseInputValueFlags(const std::vector<std::string>& specs) {
  constexpr char kExpected[] = "NAME=NUMBER, NAME=N1,N2,... or NAME=FILE.npy";
  shape::InputValues values;
  for (const auto& spec : specs) {
    auto [name, text] = SplitSpec("--input-value", spec, kExpected);
    if (values.count(name)) ThrowUsage("--input-value: '{}' is given more than once", name);
    shape::InputValue value;
    if (IsTensorFile(text)) {
      value.tensor = runtime::TensorToProto(runtime::ReadTensorFile(text), name);
    } else {
      for (const auto& item : util::Split(text, ',')) {
        auto number = ParseNumber(item);
        if (!number) {
          ThrowUsage("--input-value '{}': '{}' is not a number (expected {})", spec, item,
                     kExpected);
        }
        value.numbers.push_back(*number);
      }
    }
    values[name] = std::move(value);
  }
  return values;
}

shape::InputRanges ParseInputRangeFlags(const std::vector<std::string>& specs) {
  shape::InputRanges ranges;
  for (const auto& spec : specs) {
    auto [name, text] = SplitSpec("--input-range", spec, "NAME=LO:HI");
    if (ranges.count(name)) ThrowUsage("--input-range: '{}' is given more than once", name);
    // The separator is the first ':' after the first character, so LO may be negative.
    auto colon = text.find(':', 1);
    auto lo = ParseNumber(text.substr(0, colon));
    auto hi = colon == std::string::npos ? std::nullopt : ParseNumber(text.substr(colon + 1));
    if (!lo || !hi) ThrowUsage("--input-range '{}': expected NAME=LO:HI with two numbers", spec);
    auto as_double = [](const shape::InputNumber& n) {
      return std::visit([](auto v) { return static_cast<double>(v); }, n);
    };
    ranges[name] = {as_double(*lo), as_double(*hi)};
    if (!(ranges[name].lo <= ranges[name].hi)) {
      ThrowUsage("--input-range '{}': LO is above HI", spec);
    }
  }
  return ranges;
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
  return stages::LoadTargetProfile(ResolveRulesDir(rules_dir_flag), target);
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

CLI::Option* AddForceFlag(CLI::App& cmd, bool& force) {
  return cmd.add_flag("--force", force,
                      "Replace the output directory when it exists, only if porttool wrote it (it "
                      "holds a .porttool-output file) and it holds no input of this run");
}

std::vector<fs::path> InputPaths(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  for (const auto& p : paths) {
    if (!p.empty()) out.emplace_back(p);
  }
  return out;
}

std::string TargetFile(const std::string& target) {
  bool is_path = target.find('/') != std::string::npos || util::EndsWith(target, ".json");
  return is_path ? target : std::string();
}

CLI::Option* AddCustomOpOption(CLI::App& cmd, std::vector<std::string>& dirs) {
  return cmd.add_option("--custom-op", dirs,
                        "A scaffold-op package directory: registers its op.json schema and runs "
                        "its built kernel library (repeat for several ops)");
}

std::unique_ptr<stages::CustomOps> LoadCustomOps(const std::vector<std::string>& dirs,
                                                 const io::Model* model, bool with_kernels) {
  return stages::LoadCustomOps({dirs.begin(), dirs.end()}, model, with_kernels);
}

void AddQuantizeOptions(CLI::App& cmd, QuantizeFlags& q) {
  cmd.add_option("--data", q.data, "Calibration samples directory")->check(CLI::ExistingPath);
  cmd.add_option("--eval-data", q.eval_data,
                 "Evaluation samples (default: the last quarter of --data is held out)")
      ->check(CLI::ExistingPath);
  cmd.add_option("--method", q.method,
                 "mse (the range with the least squared error) | minmax | percentile | entropy")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}))
      ->capture_default_str();
  cmd.add_option("--percentile", q.percentile, "Percentile of |x| kept (percentile method)")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  cmd.add_option("--histogram-values", q.histogram_values,
                 "Values per tensor and sample binned for percentile/entropy, evenly strided "
                 "(min/max stay exact); 0 bins every value, about 2x slower on PP-OCRv4 det")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  auto* per_channel = cmd.add_flag(
      "--per-channel", q.per_channel,
      "Per-output-channel weight scales (axis 0 Conv, 1 ConvTranspose/MatMul): the default");
  cmd.add_flag("--per-tensor", q.per_tensor,
               "One scale per weight tensor instead (on PP-OCRv4 rec no line decodes alike)")
      ->excludes(per_channel);
  auto* bias = cmd.add_flag(
      "--bias-correction", q.bias_correction,
      "Lower each conv's bias by the mean output shift its int8 weights introduce, measured on "
      "the calibration samples (Nagel et al. 2019): the default when calibrating from --data; "
      "helps where rounding errors do not average out (depthwise convs, thresholds on a map)");
  cmd.add_flag("--no-bias-correction", q.no_bias_correction, "Turn bias correction off")
      ->excludes(bias);
  auto* equalize = cmd.add_flag(
      "--equalize", q.equalize,
      "Rescale the channels of a conv output that only convs read (exact, the reader's weights "
      "take the inverse) so one activation scale fits them all; ranges from the calibration "
      "samples: the default when calibrating from --data with per-channel weights");
  cmd.add_flag("--no-equalize", q.no_equalize, "Turn channel equalization off")->excludes(equalize);
  cmd.add_flag("--symmetric-activations", q.symmetric,
               "int8 activations with zero point 0 (default: uint8 asymmetric)");
  cmd.add_flag("--no-prepare", q.no_prepare,
               "Keep the graph as it is: by default BatchNormalization and constant Mul/Add "
               "after a conv are folded into it first (exact), as ONNX Runtime's "
               "quant_pre_process does, so they do not cost a requantization each");
  cmd.add_option("--exclude-ops", q.exclude_ops, "Op types to keep float")->delimiter(',');
  cmd.add_option("--exclude-nodes", q.exclude_nodes, "Node names to keep float")->delimiter(',');
  cmd.add_option("--precision", q.precision,
                 "Precision by hand: float:NODE[,NODE...] keeps those nodes float, "
                 "int16:NODE[,NODE...] gives them int16 activations with int8 weights (A16W8; "
                 "opset 21 Q/DQ, com.microsoft's below). Repeatable");
  cmd.add_option("--raise-to", q.raise_to,
                 "What --accuracy-target raises a node to: int16 (A16W8 first, then float once "
                 "--max-raised nodes are int16) or float")
      ->check(CLI::IsMember({"int16", "float"}))
      ->capture_default_str();
  cmd.add_option("--accuracy-target", q.accuracy_target,
                 "Mixed precision: METRIC:VALUE to reach on the evaluation samples, raising the "
                 "most sensitive node to float until it holds (each raised node is listed); "
                 "metrics: seq, char (--task ctc), hmean (--task detect-db), top1, top5 "
                 "(--task classify), 0..1, relative to float unless --labels; sqnr (dB)");
  cmd.add_option("--task", q.tasks,
                 "What an output is for, judged on the evaluation samples: [OUTPUT:]TASK with "
                 "TASK detect-db[:thresh=0.3,box-thresh=0.6,unclip=1.5,min-size=3] | classify | "
                 "ctc[:blank=0] | regress (default; SQNR only). Repeatable");
  cmd.add_option("--labels", q.labels,
                 "Ground truth JSON {\"sample id\": [[x0,y0,x1,y1],...] (detect-db, input "
                 "pixels) | class index (classify)}: each model's hmean or accuracy as well")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--sensitivity", q.sensitivity,
               "Rank the quantized nodes by the task metric lost with only that node quantized "
               "(one evaluation per node), with the metric when the worst k are raised");
  cmd.add_option("--target-sqnr", q.target_sqnr, "Same as --accuracy-target sqnr:DB");
  cmd.add_option("--max-raised,--max-float-nodes", q.max_raised,
                 "With --accuracy-target: stop after raising this many nodes")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd.add_option("--preprocess", q.preprocess_file, "Image preprocessing spec (JSON)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--resize", q.resize, "Images: resize to WxH (bilinear)");
  cmd.add_option("--layout", q.layout, "Images: NCHW | NHWC")->capture_default_str();
  cmd.add_option("--channel-order", q.channel_order, "Images: RGB | BGR")->capture_default_str();
  cmd.add_option("--scale", q.scale, "Images: pixel multiplier before mean/std")
      ->capture_default_str();
  cmd.add_option("--mean", q.mean, "Images: per-channel mean (after scale)")->delimiter(',');
  cmd.add_option("--std", q.std, "Images: per-channel std (after scale)")->delimiter(',');
  cmd.add_option("--crops", q.crops,
                 "Images: also calibrate on N fixed 60% crops of each (augmentation, 0-8)")
      ->check(CLI::Range(0, 8));
  cmd.add_option("--max-image-pixels", q.max_image_pixels,
                 "Images: refuse an image whose header claims more pixels than this, before "
                 "decoding it (a small file can claim a huge image)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32))
      ->capture_default_str();
  cmd.add_flag("--keep-ratio", q.keep_ratio,
               "Images: resize to the height of --resize keeping the aspect ratio, width at most "
               "its width, zero-padded on the right (PP-OCR rec/cls)");
  cmd.add_option("--crops-from-boxes", q.crops_from_boxes,
                 "Images: one sample per box of FILE.json ({\"image stem\": "
                 "[[x0,y0,x1,y1],...]}), cropped from the image, instead of the whole image")
      ->check(CLI::ExistingFile);
  cmd.add_flag("--rotate-180", q.rotate_180,
               "With --crops-from-boxes: also each box rotated by 180 degrees (direction "
               "classifiers)");
}

namespace {

quant::Preprocess PreprocessOfFlags(const QuantizeFlags& q) {
  quant::Preprocess p;
  if (!q.resize.empty()) {
    auto parts = util::Split(q.resize, 'x');
    if (parts.size() != 2) ThrowUsage("--resize takes WxH, got '{}'", q.resize);
    try {
      p.width = std::stoll(parts[0]);
      p.height = std::stoll(parts[1]);
    } catch (const std::exception&) {
      ThrowUsage("--resize takes WxH with two numbers, got '{}'", q.resize);
    }
  }
  p.layout = q.layout;
  p.channel_order = q.channel_order;
  p.scale = q.scale;
  p.mean = q.mean;
  p.std = q.std;
  p.crops = q.crops;
  if (q.keep_ratio && q.resize.empty()) {
    ThrowUsage(
        "--keep-ratio needs --resize WxH (the tensor's size; the image keeps its ratio "
        "inside it)");
  }
  p.keep_ratio = q.keep_ratio;
  if (q.rotate_180 && q.crops_from_boxes.empty()) {
    ThrowUsage("--rotate-180 turns the boxes of --crops-from-boxes FILE.json; give that too");
  }
  if (q.crops > 0 && !q.crops_from_boxes.empty()) {
    ThrowUsage("--crops and --crops-from-boxes are exclusive: fixed windows or text boxes");
  }
  p.boxes = q.crops_from_boxes;
  if (q.rotate_180) p.rotations = {0, 180};
  p.Validate("preprocessing flags");
  return p;
}

quant::Preprocess PreprocessFromFlags(const QuantizeFlags& q) {
  quant::Preprocess p = q.preprocess_file.empty() ? PreprocessOfFlags(q)
                                                  : stages::ReadPreprocessSpec(q.preprocess_file);
  p.max_pixels = q.max_image_pixels;
  return p;
}

// --accuracy-target METRIC:VALUE (and its alias --target-sqnr DB) as the request's target.
std::optional<quant::AccuracyTarget> TargetFromFlags(const QuantizeFlags& q) {
  if (!q.accuracy_target.empty() && q.target_sqnr) {
    ThrowUsage("give --accuracy-target or --target-sqnr, not both");
  }
  if (q.target_sqnr) return quant::ParseAccuracyTarget(fmt::format("sqnr:{}", *q.target_sqnr));
  if (q.accuracy_target.empty()) return std::nullopt;
  return quant::ParseAccuracyTarget(q.accuracy_target);
}

// --precision float:NODES (and fp32:NODES: float32 is what the quantized model's float nodes
// compute here) adds to the nodes kept float, int16:NODES to the A16W8 ones.
void PrecisionFromFlags(const QuantizeFlags& q, quant::QdqOptions& qdq) {
  qdq.exclude_nodes = q.exclude_nodes;
  const PrecisionFlags p = ParsePrecisionFlags(q.precision, PrecisionUse::kQuantize);
  for (const auto* nodes : {&p.float_nodes, &p.fp32_nodes}) {
    qdq.exclude_nodes.insert(qdq.exclude_nodes.end(), nodes->begin(), nodes->end());
  }
  qdq.int16_nodes.insert(qdq.int16_nodes.end(), p.int16_nodes.begin(), p.int16_nodes.end());
}

}  // namespace

const char kExecutePrecisionHelp[] =
    "Float arithmetic: fp32 (default) or fp16, every float tensor rounded to float16 at each op "
    "boundary as an NPU keeps it (accumulation inside Conv/MatMul/Gemm in float32; float64 "
    "tensors stay float64); fp32:NODE[,NODE...] computes those nodes in float32 under fp16. "
    "Repeatable";

std::string Float16OverflowMessage(const runtime::Float16Overflow& o) {
  const std::string node = util::Printable(o.node);
  const std::string from = o.node.empty() ? "(a graph input)"
                           : o.weight     ? fmt::format("(a weight read by node '{}')", node)
                                          : fmt::format("(produced by node '{}')", node);
  return fmt::format(
      "float16 overflow: tensor '{}' {} reaches max |x| {:.6g} > {} (float16's largest finite "
      "value), inf on a float16 device{}",
      util::Printable(o.tensor), from, o.max_abs, runtime::kFloat16Max,
      o.node.empty() ? ""
                     : fmt::format("; --precision fp32:{} computes that node in float32", node));
}

nlohmann::json Float16OverflowsJson(const std::vector<runtime::Float16Overflow>& overflows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& o : overflows) {
    list.push_back({{"tensor", o.tensor},
                    {"node", o.node},
                    {"weight", o.weight},
                    {"max_abs", o.max_abs},
                    {"limit", runtime::kFloat16Max}});
  }
  return list;
}

std::string Float64KeptMessage(const std::vector<std::string>& names) {
  return fmt::format(
      "--precision fp16: {} tensor(s) kept in float64 (no float16 device computes it; not "
      "rounded): {}",
      names.size(), util::Printable(util::JoinFirst(names)));
}

PrecisionFlags ParsePrecisionFlags(const std::vector<std::string>& specs, PrecisionUse use) {
  PrecisionFlags flags;
  std::string whole;  // the whole-model value given, to refuse fp16 and fp32 together
  for (const auto& spec : specs) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos) {
      if (spec != "fp32" && spec != "fp16") {
        ThrowUsage(
            "--precision '{}': expected fp32 or fp16 (the whole model's float arithmetic), or "
            "TYPE:NODE[,NODE...]",
            spec);
      }
      if (!whole.empty() && whole != spec) {
        ThrowUsage("--precision: both {} and {} given; the model has one float arithmetic", whole,
                   spec);
      }
      whole = spec;
      flags.fp16 = spec == "fp16";
      continue;
    }
    const std::string kind = spec.substr(0, colon);
    std::vector<std::string> nodes;
    for (const auto& node : util::Split(spec.substr(colon + 1), ',')) {
      if (!node.empty()) nodes.push_back(node);
    }
    if (nodes.empty()) ThrowUsage("--precision '{}': no node names after '{}:'", spec, kind);
    const bool quantized = kind == "float" || kind == "int16" || kind == "int8";
    if (use == PrecisionUse::kExecute && quantized) {
      ThrowUsage(
          "--precision '{}': {}:NODES chooses a node's precision in a quantized model "
          "(quantize-calibrate and port --precision); this command quantizes nothing. Run the QDQ "
          "model quantize-calibrate writes, or here use fp16, or fp16 with fp32:NODE[,NODE...]",
          spec, kind);
    }
    if (kind == "fp32") {
      flags.fp32_nodes.insert(flags.fp32_nodes.end(), nodes.begin(), nodes.end());
    } else if (kind == "float") {
      flags.float_nodes.insert(flags.float_nodes.end(), nodes.begin(), nodes.end());
    } else if (kind == "int16") {
      flags.int16_nodes.insert(flags.int16_nodes.end(), nodes.begin(), nodes.end());
    } else if (kind == "int8") {
      ThrowUsage(
          "--precision '{}': int8 is what quantized nodes already are; name the nodes to raise "
          "(float:NODES, int16:NODES)",
          spec);
    } else {
      ThrowUsage("--precision '{}': unknown precision '{}'; available: {}", spec, kind,
                 use == PrecisionUse::kExecute ? "fp32:NODES (with fp16)"
                                               : "float:NODES, fp32:NODES, int16:NODES");
    }
  }
  if (use == PrecisionUse::kExecute && !flags.fp16 && !flags.fp32_nodes.empty()) {
    ThrowUsage(
        "--precision fp32:NODES keeps nodes in float32 under fp16: add --precision fp16 (the "
        "default arithmetic is float32 already)");
  }
  if (use == PrecisionUse::kQuantize && flags.fp16) {
    ThrowUsage(
        "--precision fp16: this command verifies the quantized model in float32 arithmetic; "
        "measure a model's float16 error with `porttool compare MODEL --precision fp16`");
  }
  return flags;
}

void ApplyPrecisionFlags(const PrecisionFlags& flags, runtime::SessionOptions& session) {
  session.float16 = flags.fp16;
  session.float32_nodes.insert(flags.fp32_nodes.begin(), flags.fp32_nodes.end());
}

quant::QuantizeCalibrateRequest QuantizeRequestFromFlags(const QuantizeFlags& q, int threads) {
  quant::QuantizeCalibrateRequest req;
  req.data_dir = q.data;
  req.eval_dir = q.eval_data;
  req.calibration.method = quant::ParseMethod(q.method);
  req.calibration.percentile = q.percentile;
  req.calibration.symmetric_activations = q.symmetric;
  req.calibration.threads = threads;
  req.calibration.histogram_values = q.histogram_values;
  req.qdq.per_channel = !q.per_tensor;
  req.qdq.exclude_ops = q.exclude_ops;
  PrecisionFromFlags(q, req.qdq);
  req.int16_first = q.raise_to == "int16";
  req.target = TargetFromFlags(q);
  req.max_raised = q.max_raised;
  req.tasks = quant::ParseTasks(q.tasks);
  if (!q.labels.empty()) req.labels = quant::LoadLabels(q.labels);
  req.sensitivity = q.sensitivity;
  // The remedies need the calibration samples: by default they are on only when calibrating
  // (applying a given table has none); asked for explicitly, the library says why not.
  const bool calibrating = !q.data.empty();
  req.bias_correction = q.bias_correction || (calibrating && !q.no_bias_correction);
  req.equalize = q.equalize || (calibrating && !q.no_equalize);
  // Used only when the samples are images; written into the table with it.
  req.preprocess = PreprocessFromFlags(q);
  return req;
}

void AddModelOutputOptions(CLI::App& cmd, ModelOutputOptions& out, bool required) {
  auto* o = cmd.add_option("-o,--output", out.output, "Where to write the resulting model")
                ->type_name(kOutputFileType);
  if (required) o->required();
  cmd.add_option("--external-data", out.external_data,
                 "Write weights to an external data file next to the output (FILE, or 'auto' "
                 "for <output>.data); needed for models over protobuf's 2 GB limit")
      ->expected(0, 1)
      ->default_str("auto")
      ->type_name(kOutputFileType);
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

std::vector<std::string> SaveModel(io::Model& model, const ModelOutputOptions& out,
                                   io::OutputSet* outputs) {
  StageTimer timer("save " + out.output);
  io::SaveOptions options;
  options.external_data = !out.external_data.empty();
  options.external_file = out.external_data == "auto" ? "" : out.external_data;
  options.external_threshold = out.external_threshold;
  options.in_place = out.in_place;
  io::SaveResult result = outputs ? io::Save(model, out.output, options, *outputs)
                                  : io::Save(model, out.output, options);
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

namespace {

// A word as a POSIX shell reads it: node labels such as "#83 (Reshape)" would otherwise start a
// comment or split into words.
std::string ShellWord(const std::string& word) {
  bool plain = !word.empty();
  for (char c : word)
    plain &= std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-./:=@%+,", c);
  if (plain) return word;
  return "'" + util::ReplaceAll(word, "'", "'\\''") + "'";
}

}  // namespace

std::optional<std::string> FixCommand(const analysis::Finding& f, const io::Model& model,
                                      const std::string& model_path) {
  if ((f.id == "custom-domain" || f.id == "target-unsupported") && !f.node.empty()) {
    return fmt::format("porttool split {} --at {}", model_path, ShellWord(f.node));
  }
  if (f.id == "initializer-input") {
    return fmt::format("porttool check {} --fix -o {}.fixed.onnx", model_path,
                       fs::path(model_path).stem().string());
  }
  if (f.id == "dynamic-input" && !f.tensor.empty()) {
    for (const auto& input : model.proto.graph().input()) {
      if (input.name() != f.tensor) continue;
      return fmt::format("porttool infer-shapes {} -o {}.static.onnx --input-shape {}", model_path,
                         fs::path(model_path).stem().string(), shape::ExampleInputShape(input));
    }
  }
  return std::nullopt;
}

std::string WithFlagHint(const std::string& message) {
  // Where the library gives an example value, the flag goes in front of the example itself.
  static const std::pair<const char*, const char*> kInline[] = {
      {"pin the input shape (e.g. ", "pin it with --input-shape (e.g. --input-shape "},
  };
  for (const auto& [words, flag] : kInline) {
    if (auto at = message.find(words); at != std::string::npos) {
      return message.substr(0, at) + flag + message.substr(at + std::strlen(words));
    }
  }
  // Library messages name their subject in words; the subjects a flag sets get that flag.
  static const std::pair<const char*, const char*> kHints[] = {
      {"input value:", "--input-value NAME=VALUE"},
      {"give the value to inline it", "--input-value NAME=VALUE"},
      {"input range:", "--input-range NAME=LO:HI"},
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
      {"preparation can be turned off", "--no-prepare"},
      {"or replace it (force)", "-o DIR, or --force"},
      {"calibrating needs sample data", "--data DIR"},
      {"not a sample directory", "--data DIR and --eval-data DIR take a directory"},
      {"raise the number of raised nodes", "--max-raised N"},
      {"no calibration samples and no table", "--data DIR, or --table TABLE.json"},
      {"to compute in float32", "--precision fp32:NODE[,NODE...]"},
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
