// `porttool extract`: the minimal sub-model computing some tensors from others, like
// onnx.utils.extract_model but with external weights kept by reference (lib/ir/extract.h).
#include <spdlog/spdlog.h>

#include <iostream>

#include "lib/ir/extract.h"
#include "lib/shape/infer.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct ExtractOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  ModelOutputOptions output;
  bool json = false;
};

int RunExtract(const ExtractOptions& o) {
  io::Model model = LoadModel(o.model);
  RefuseOverwritingInput(model, o.output);
  std::vector<std::string> notes;
  io::Model part = ir::ExtractSubgraph(model, o.inputs, o.outputs, &notes, shape::TypeInference());
  for (const auto& note : notes) spdlog::warn("{}", WithFlagHint(note));
  std::vector<std::string> files = SaveModel(part, o.output);
  if (o.json) {
    PrintJson({{"nodes", part.proto.graph().node_size()},
               {"inputs", o.inputs},
               {"outputs", o.outputs},
               {"files", files}});
  } else {
    std::cout << "extracted " << part.proto.graph().node_size()
              << " nodes: " << util::Join(o.inputs, ", ") << " -> " << util::Join(o.outputs, ", ")
              << "\n";
    for (const auto& f : files) std::cout << "wrote " << f << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterExtract(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<ExtractOptions>();
  auto* cmd = app.add_subcommand(
      "extract", "Extract the sub-model computing --outputs from --inputs (extract_model)");
  cmd->footer(
      "Example:\n  porttool extract model.onnx --inputs block2.out --outputs score "
      "-o tail.onnx");
  AddModelArg(*cmd, opts->model);
  cmd->add_option("--inputs", opts->inputs,
                  "Tensor names that become the part's inputs (T1,T2 ...); values for a run are "
                  "given with --input NAME=FILE in run and compare")
      ->delimiter(',')
      ->required();
  cmd->add_option("--outputs", opts->outputs, "Tensors the part computes (T3,T4 ...)")
      ->delimiter(',')
      ->required();
  AddModelOutputOptions(*cmd, opts->output, /*required=*/true);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunExtract(*opts); }; });
}

}  // namespace porttool::cli
