#include "lib/stages/port_inputs.h"

#include "lib/util/strings.h"

namespace porttool::stages {

io::OutputDirRequest PortOutputDirRequest(const std::filesystem::path& dir,
                                          const PortOptions& options) {
  io::OutputDirRequest request{dir, {}, {options.model}, options.force};
  auto add = [&](const std::filesystem::path& p) {
    if (!p.empty()) request.inputs.push_back(p);
  };
  add(options.rules_dir);
  add(options.facts_file);
  // A profile by path, as decide::LoadTarget tells a path from a shipped profile's name.
  if (options.target.find('/') != std::string::npos || util::EndsWith(options.target, ".json")) {
    add(options.target);
  }
  for (const auto* request : {&options.quantize, &options.float16_eval}) {
    if (!*request) continue;
    add((*request)->data_dir);
    add((*request)->eval_dir);
    if ((*request)->preprocess) add((*request)->preprocess->boxes);
  }
  return request;
}

}  // namespace porttool::stages
