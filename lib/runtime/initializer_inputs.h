// A value given for an initializer the model also lists as a graph input
// (lib/ir/initializer_inputs.h): ONNX lets a caller override such a default, so a caller who feeds
// one explicitly gets the value it gave, and is told so once.
#pragma once

#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {

// For every name in `given` that is such an initializer-input, drops the initializer so that the
// given value is what a session reads. Returns the names it dropped (empty: `model` unchanged).
std::vector<std::string> FeedInitializerInputs(io::Model& model, const TensorMap& given);

// One sentence for the names FeedInitializerInputs returned, to say once per run.
std::string FedInitializersNote(const std::vector<std::string>& names);

}  // namespace porttool::runtime
