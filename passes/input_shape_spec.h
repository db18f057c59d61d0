// The `NAME:DIMS` text form of input shapes (`x:1x3x640x640`, `NAME:scalar` for rank 0; several
// inputs separated by ',' or ';'). It is part of the option grammar of pipeline strings
// (`infer-shapes{input-shape=...}`) and of the CLI's --input-shape, so it lives with the pipeline
// grammar; the rest of the library takes the parsed shape::InputShapes.
#pragma once

#include <string>
#include <vector>

#include "lib/shape/input_shapes.h"

namespace porttool::passes {

// Parses specs. Throws Error(kUsage) quoting the offending text on bad syntax (with the fix for
// the common slip of separating dims by ',') or a repeated name. Messages name no flag.
shape::InputShapes ParseInputShapes(const std::vector<std::string>& specs);

}  // namespace porttool::passes
