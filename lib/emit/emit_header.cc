#include "lib/emit/emit_header.h"

#include "lib/io/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/sha256.h"

namespace porttool::emit {
namespace {

bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::absolute(a).lexically_normal() ==
         std::filesystem::absolute(b).lexically_normal();
}

bool IsSourceOutput(const std::filesystem::path& weights) { return weights.extension() == ".c"; }

void CheckOutputs(const io::Model& model, const EmitRequest& r) {
  if (r.header_path.empty()) ThrowUsage("no header output given");
  std::vector<std::filesystem::path> outputs = {r.header_path};
  if (!r.weights_path.empty()) {
    auto ext = r.weights_path.extension();
    if (ext != ".c" && ext != ".bin") {
      ThrowUsage("weights file '{}' must end in .bin (raw blob) or .c (C source for flash)",
                 r.weights_path.string());
    }
    if (SameFile(r.weights_path, r.header_path)) {
      ThrowUsage("the weights file and the header both name '{}'", r.header_path.string());
    }
    outputs.push_back(r.weights_path);
  }
  for (const auto& out : outputs) {
    io::CheckOutputFilePath(out);
    if (!model.path.empty() && SameFile(out, model.path)) {
      ThrowUsage("output '{}' is the input model; choose another file name", out.string());
    }
  }
}

std::string IncludePath(const std::filesystem::path& header, const std::filesystem::path& source) {
  auto header_dir = std::filesystem::absolute(header).parent_path();
  auto source_dir = std::filesystem::absolute(source).parent_path();
  return (header_dir.lexically_normal() == source_dir.lexically_normal())
             ? header.filename().string()
             : std::filesystem::absolute(header).lexically_relative(source_dir).string();
}

}  // namespace

void CheckAlignment(uint64_t alignment) {
  if (!analysis::IsPowerOfTwo(alignment) || alignment > kMaxAlignment) {
    ThrowUsage(
        "buffer alignment {} is not a power of two from 1 to {} (DMA engines and NPUs usually "
        "need 16, 32, 64, 128 or 256)",
        alignment, kMaxAlignment);
  }
}

EmitResult EmitHeaderFiles(const io::Model& model, const EmitRequest& r) {
  CheckAlignment(r.alignment);
  CheckOutputs(model, r);
  EmitResult result;
  HeaderOptions options;
  options.alignment = r.alignment;
  options.prefix =
      r.prefix.empty() ? DefaultPrefix(model.path.empty() ? "model" : model.path) : r.prefix;
  options.model_file = model.path.filename().string();
  options.model_sha256 = model.path.empty() ? "(in memory)" : util::Sha256File(model.path);
  options.command_line = r.command_line;
  if (r.arena) {
    result.liveness = analysis::ComputeLiveness(model.proto.graph(), r.arena_options);
    result.arena = analysis::PlanArena(*result.liveness, r.alignment);
    if (auto problem = analysis::ValidatePlan(*result.arena)) {
      ThrowInternal("arena plan is invalid: {}", *problem);
    }
    options.arena = &*result.arena;
    options.liveness = &*result.liveness;
  }
  if (!r.weights_path.empty()) {
    result.weights = LayoutWeights(model, r.alignment);
    options.weights = &*result.weights;
    if (IsSourceOutput(r.weights_path))
      options.weights_array = ToLower(options.prefix) + "_weights";
  }
  result.header = RenderHeader(model, options);

  // Every output is written to its temp file first and committed only when all are complete:
  // a failure anywhere (an unwritable header path, a weight that cannot be read) writes nothing.
  io::AtomicFile header_file(r.header_path);
  header_file.Write(result.header.text);
  std::optional<io::AtomicFile> weights_file;
  if (result.weights) weights_file.emplace(r.weights_path);
  if (result.weights && IsSourceOutput(r.weights_path)) {
    std::string prefix = ToUpper(options.prefix);
    WriteWeightsSource(model, *result.weights,
                       {options.weights_array, IncludePath(r.header_path, r.weights_path),
                        prefix + "_ALIGNED", prefix + "_WEIGHTS_SIZE", options.model_file},
                       *weights_file);
  } else if (result.weights) {
    WriteWeightsBin(model, *result.weights, *weights_file);
  }
  if (result.weights) result.files.push_back(r.weights_path);
  std::vector<io::AtomicFile*> all = {&header_file};
  if (weights_file) all.insert(all.begin(), &*weights_file);
  io::CommitAll(all);
  result.files.insert(result.files.begin(), r.header_path);
  return result;
}

}  // namespace porttool::emit
