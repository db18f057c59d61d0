// What `port` reads, for the one output-directory rule (lib/io/output_dir.h): the bundle
// directory must not be, nor hold, the model, its external data, the calibration and evaluation
// samples, the facts file, a profile given by path or the rules directory.
#pragma once

#include <filesystem>

#include "lib/io/output_dir.h"
#include "lib/stages/port.h"

namespace porttool::stages {

// The io::CheckOutputDir request for a port into `dir` (replace: options.force).
io::OutputDirRequest PortOutputDirRequest(const std::filesystem::path& dir,
                                          const PortOptions& options);

}  // namespace porttool::stages
