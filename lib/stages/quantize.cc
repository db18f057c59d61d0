#include "lib/stages/quantize.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "lib/io/input_file.h"
#include "lib/ir/node_names.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"
#include "passes/transform.h"

namespace porttool::stages {
namespace {

nlohmann::json ReadJsonFile(const std::filesystem::path& path, const char* what) {
  std::istringstream in(io::ReadInputFile(path, what));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) ThrowBadInput("'{}' is not valid JSON", path.string());
  return j;
}

// The exact conv fusions; returns one note saying what changed.
std::vector<std::string> Prepare(io::Model& model) {
  passes::PassContext context;
  passes::TransformReport report = passes::PrepareForQuantization(model, context);
  if (report.nodes_before == report.nodes_after) return {};
  std::vector<std::string> ops;
  for (const auto& c : passes::OpCounts(report)) {
    if (c.before > c.after && c.op != "Constant") {
      ops.push_back(fmt::format("{} {}", c.before - c.after, c.op));
    }
  }
  return {fmt::format(
      "prepared for quantization: folded {} into the convs' weights and biases (exact; tables "
      "and QDQ model use the prepared graph; preparation can be turned off to keep the graph as "
      "it is)",
      util::Join(ops, ", "))};
}

}  // namespace

quant::QuantizeCalibrateRequest WithNodeNames(io::Model& model,
                                              quant::QuantizeCalibrateRequest request) {
  auto& graph = *model.proto.mutable_graph();
  request.qdq.exclude_nodes =
      ir::NameAddressedNodes(graph, request.qdq.exclude_nodes, "excluded node");
  request.qdq.int16_nodes = ir::NameAddressedNodes(graph, request.qdq.int16_nodes, "int16 node");
  return request;
}

quant::CalibrationTable ReadCalibrationTable(const std::filesystem::path& path) {
  return quant::CalibrationTable::FromJson(ReadJsonFile(path, "table"), path.string());
}

quant::Preprocess ReadPreprocessSpec(const std::filesystem::path& path) {
  return quant::Preprocess::FromJson(ReadJsonFile(path, "preprocessing spec"), path.string());
}

quant::QuantizeCalibrateResult QuantizeStage(const io::Model& model,
                                             const QuantizeStageOptions& options) {
  if (options.request.data_dir.empty() && options.table_in.empty() && !options.request.table) {
    ThrowUsage("no calibration samples and no table to apply: give calibration data, or a table");
  }
  io::Model prepared = model;
  quant::QuantizeCalibrateRequest request = WithNodeNames(prepared, options.request);
  if (!options.table_in.empty()) request.table = ReadCalibrationTable(options.table_in);
  std::vector<std::string> notes;
  // The search, the sensitivity ranking and the kept-float lists name nodes: none is left blank.
  if (int named = ir::NameUnnamedNodes(*prepared.proto.mutable_graph()); named > 0) {
    notes.push_back(
        fmt::format("named {} unnamed node(s) <op>_<position> (as name-nodes does)", named));
  }
  if (options.prepare) notes = Prepare(prepared);
  quant::QuantizeCalibrateResult result = quant::QuantizeCalibrate(prepared, request);
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  return result;
}

}  // namespace porttool::stages
