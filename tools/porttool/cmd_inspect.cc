// `porttool inspect MODEL [--json]`: format, opsets, I/O signature, op histogram, parameters.
#include <fmt/format.h>

#include <iostream>

#include "lib/analysis/model_facts.h"
#include "lib/util/strings.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
};

nlohmann::json SignatureJson(const analysis::TensorSignature& s) {
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& d : s.dims) {
    bool numeric = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    dims.push_back(numeric ? nlohmann::json(std::stoll(d)) : nlohmann::json(d));
  }
  return {{"name", s.name}, {"dtype", s.dtype}, {"shape", s.has_shape ? dims : nullptr}};
}

nlohmann::json ParamsJson(const analysis::ParamStats& p) {
  return {{"count", p.count}, {"bytes", p.bytes}, {"tensors", p.tensors}};
}

nlohmann::json FactsJson(const analysis::ModelFacts& f) {
  nlohmann::json doc = {{"ir_version", f.ir_version},
                        {"producer", {{"name", f.producer_name}, {"version", f.producer_version}}},
                        {"opsets", nlohmann::json::object()},
                        {"inputs", nlohmann::json::array()},
                        {"outputs", nlohmann::json::array()},
                        {"node_count", f.node_count},
                        {"node_count_total", f.node_count_total},
                        {"op_histogram", f.op_histogram},
                        {"parameters", ParamsJson(f.params)},
                        {"parameters_by_dtype", nlohmann::json::object()},
                        {"external_bytes", f.external_bytes},
                        {"custom_domains", f.custom_domains},
                        {"subgraph_count", f.subgraph_count}};
  for (const auto& [domain, version] : f.opsets) {
    doc["opsets"][domain.empty() ? "ai.onnx" : domain] = version;
  }
  for (const auto& s : f.inputs) doc["inputs"].push_back(SignatureJson(s));
  for (const auto& s : f.outputs) doc["outputs"].push_back(SignatureJson(s));
  for (const auto& [dtype, p] : f.params_by_dtype)
    doc["parameters_by_dtype"][dtype] = ParamsJson(p);
  return doc;
}

// A model may have 10^5 inputs; the text lists the first few and counts the rest.
constexpr size_t kTextSignatures = 20;

void PrintText(const std::string& path, const analysis::ModelFacts& f) {
  std::vector<std::string> opsets;
  for (const auto& [d, v] : f.opsets)
    opsets.push_back(fmt::format("{} {}", d.empty() ? "ai.onnx" : util::Printable(d), v));
  // Every string from the model is printed through Printable: names are the model author's.
  std::cout << fmt::format("model      {}\nir_version {}\nproducer   {} {}\nopsets     {}\n",
                           util::Printable(path), f.ir_version, util::Printable(f.producer_name),
                           util::Printable(f.producer_version), util::Join(opsets, ", "));
  for (const auto* list : {&f.inputs, &f.outputs}) {
    const char* what = list == &f.inputs ? "inputs" : "outputs";
    std::cout << what << "\n";
    PrintBounded(*list, kTextSignatures, "  ", what, "--json lists them all", [](const auto& s) {
      std::cout << fmt::format("  {:<24} {:<8} {}\n", util::Printable(s.name), s.dtype,
                               util::Printable(s.shape));
    });
  }
  // "16 (16 with subgraphs)" read as 16 nodes holding subgraphs: say what the second count is.
  if (f.subgraph_count == 0) {
    std::cout << fmt::format("nodes      {} (no subgraphs)\n", f.node_count);
  } else {
    std::cout << fmt::format(
        "nodes      {} in the main graph, {} counting the {} subgraph bodies\n", f.node_count,
        f.node_count_total, f.subgraph_count);
  }
  std::cout << "ops\n";
  for (const auto& [op, n] : f.op_histogram) {
    std::cout << fmt::format("  {:<28} {}\n", util::Printable(op), n);
  }
  std::cout << fmt::format("parameters {} in {} tensors, {} ({} external)\n", f.params.count,
                           f.params.tensors, util::FormatBytes(f.params.bytes),
                           util::FormatBytes(f.external_bytes));
  for (const auto& [dtype, p] : f.params_by_dtype) {
    std::cout << fmt::format("  {:<10} {} in {} tensors, {}\n", dtype, p.count, p.tensors,
                             util::FormatBytes(p.bytes));
  }
  std::cout << fmt::format(
      "custom domains {}\n",
      f.custom_domains.empty() ? "(none)" : util::Printable(util::Join(f.custom_domains, ", ")));
}

int RunInspect(const InspectOptions& o) {
  io::Model model = LoadModel(o.model);
  analysis::ModelFacts facts = analysis::CollectFacts(model);
  if (o.json) {
    nlohmann::json doc = FactsJson(facts);
    doc["model"] = o.model;
    PrintJson(doc);
  } else {
    PrintText(o.model, facts);
  }
  return kExitOk;
}

}  // namespace

void RegisterInspect(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand("inspect", "Summarise a model: opsets, I/O, ops, parameters");
  cmd->footer("Example:\n  porttool inspect testdata/demo_detector.onnx --json");
  AddModelArg(*cmd, opts->model);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunInspect(*opts); }; });
}

}  // namespace porttool::cli
