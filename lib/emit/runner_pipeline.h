// pipeline.json as emit-runner needs it: the manifest `split` writes, parsed with every field
// checked (errors name the file and JSON pointer), checked against the segment files it names,
// and turned into the runner's tensor table (graph inputs, graph outputs, bridges).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace porttool::emit {

struct PipelineTensor {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
};

struct PipelineSegment {
  std::string file;
  bool accelerator = true;
  std::vector<PipelineTensor> inputs, outputs;
};

struct PipelineBridge {
  std::string tensor;
  int producer = 0;
  std::vector<int> consumers;
};

struct Pipeline {
  std::filesystem::path dir;  // where the segment files are
  std::vector<PipelineSegment> segments;
  std::vector<PipelineBridge> bridges;
  std::map<std::string, int> graph_outputs;                         // name -> producing segment
  std::vector<PipelineTensor> graph_input_list, graph_output_list;  // in first-use order
};

// Parses and validates; loads every segment model to compare its declared inputs and outputs.
Pipeline LoadPipeline(const std::filesystem::path& pipeline_json);

const PipelineTensor& FindTensor(const PipelineSegment& segment, const std::string& name);

}  // namespace porttool::emit
