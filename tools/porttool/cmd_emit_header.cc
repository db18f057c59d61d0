// `porttool emit-header`: the C header (buffer sizes, alignment, optional arena plan and weight
// blob layout) that firmware needs to run a model without a heap.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <iterator>

#include "lib/ir/dtype.h"
#include "lib/stages/emit_header.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct EmitHeaderOptions {
  std::string model;
  std::string output;
  uint64_t align = 64;
  std::string prefix;
  std::vector<std::string> input_shapes;
  bool arena = false;
  bool arena_io = false;
  std::string weights;
  bool json = false;
};

// The command line as typed, for the header comment (argv[0] shortened to "porttool").
std::string CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args = util::Split(raw, '\0');
  if (!args.empty() && args.back().empty()) args.pop_back();
  if (args.empty()) return "porttool emit-header";
  args[0] = "porttool";
  for (auto& a : args) {
    if (a.find_first_of(" \t'\"*?;&|<>$") != std::string::npos) a = "'" + a + "'";
  }
  return util::Join(args, " ");
}

// Buffers and renames grow with the model; the text shows the first ones and counts the rest.
constexpr size_t kTextItems = 20;

void PrintText(const emit::EmitResult& r) {
  PrintBounded(r.header.buffers, kTextItems, "", "buffers", "--json lists them all",
               [](const auto& b) {
                 std::cout << fmt::format(
                     "{:<6} {:<24} {:<8} {:<18} {:>12} bytes  aligned {:>12}  {}\n",
                     b.is_input ? "input" : "output", b.name, ir::DtypeName(b.dtype),
                     b.dims.empty() ? "scalar" : fmt::format("{}", fmt::join(b.dims, "x")), b.bytes,
                     b.aligned_bytes, b.c_name);
               });
  if (r.arena) {
    const auto& a = *r.arena;
    std::cout << fmt::format(
        "arena: {} bytes ({}) for {} tensors; naive sum {} bytes ({:.1f}x arena); lower bound {} "
        "bytes (arena +{:.1f}%); {}\n",
        a.arena_bytes, util::FormatBytes(a.arena_bytes), a.tensors.size(), a.naive_bytes,
        a.arena_bytes ? double(a.naive_bytes) / a.arena_bytes : 0.0, a.lower_bound_bytes,
        a.lower_bound_bytes ? 100.0 * (double(a.arena_bytes) / a.lower_bound_bytes - 1) : 0.0,
        a.strategy);
  }
  if (r.weights) {
    std::cout << fmt::format("weights: {} tensors, {} bytes ({})\n", r.weights->entries.size(),
                             r.weights->total_bytes, util::FormatBytes(r.weights->total_bytes));
  }
  PrintBounded(r.header.collisions, kTextItems, "", "renamed identifiers", "the header lists them",
               [](const auto& c) {
                 std::cout << fmt::format("renamed: '{}' -> {} ('{}' has the identifier)\n", c.name,
                                          c.c_name, c.conflict);
               });
  for (const auto& f : r.files) std::cout << "wrote " << f.string() << "\n";
}

int RunEmitHeader(const EmitHeaderOptions& o) {
  emit::CheckAlignment(o.align);
  stages::EmitHeaderStageOptions options;
  options.input_shapes = ParseShapeFlags(o.input_shapes);
  options.request = {o.output,
                     o.weights,
                     o.align,
                     o.prefix,
                     o.arena || o.arena_io,
                     {o.arena_io, o.arena_io, false},
                     CommandLine()};
  io::Model model = LoadModel(o.model);
  RefuseOverwritingInput(model, o.output);
  RefuseOverwritingInput(model, o.weights);
  stages::EmitHeaderStageResult result = stages::EmitHeaderStage(model, options);
  for (size_t i = 0; i < result.notes.size() && i < kTextItems; ++i) {
    spdlog::warn("{}", WithFlagHint(result.notes[i]));
  }
  if (result.notes.size() > kTextItems) {
    spdlog::warn("and {} more warnings like these (--json lists them)",
                 util::GroupDigits(result.notes.size() - kTextItems));
  }
  if (o.json) {
    PrintJson(stages::EmitHeaderJson(result.emitted));
  } else {
    PrintText(result.emitted);
  }
  return kExitOk;
}

}  // namespace

void RegisterEmitHeader(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<EmitHeaderOptions>();
  auto* cmd = app.add_subcommand(
      "emit-header", "Write a C header with buffer sizes, an arena plan and a weight blob");
  cmd->footer(
      "Example:\n  porttool emit-header testdata/demo_detector.onnx -o demo.h "
      "--input-shape images:1x3x64x64 --arena --weights demo_weights.c");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("-o,--output", opts->output, "Header file to write (OUT.h)")
      ->required()
      ->type_name(kOutputFileType);
  cmd->add_option("--align", opts->align,
                  "Alignment in bytes of every buffer size, arena offset and weight offset: a "
                  "power of two from 1 to 4096")
      ->capture_default_str();
  cmd->add_option("--prefix", opts->prefix,
                  "Macro prefix, a C identifier (default: the model file name, upper-cased)");
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_flag("--arena", opts->arena,
                "Plan one static arena for every intermediate tensor (offsets and sizes)");
  cmd->add_flag("--arena-io", opts->arena_io,
                "Also place graph inputs and outputs in the arena (implies --arena)");
  cmd->add_option("--weights", opts->weights,
                  "Write every initializer into one aligned blob: OUT.bin (raw) or OUT.c (const "
                  "array for flash); offsets go into the header")
      ->type_name(kOutputFileType);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunEmitHeader(*opts); }; });
}

}  // namespace porttool::cli
