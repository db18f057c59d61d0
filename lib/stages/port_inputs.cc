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
  if (options.quantize) {
    add(options.quantize->data_dir);
    add(options.quantize->eval_dir);
    if (options.quantize->preprocess) add(options.quantize->preprocess->boxes);
  }
  return request;
}

}  // namespace porttool::stages
