// Model-local functions (ModelProto.functions) checked before anything expands them. ONNX
// functions are macros: the checker, shape inference and every consumer that runs them inline a
// call by its body, recursively, and none of libonnx 1.12's walks stops on a cycle. A function
// that calls itself, directly or through others, killed every subcommand with SIGSEGV (a stack
// overflow; CWE-674, the same class as ONNX Runtime's and onnx.inliner's crashes on such models).
// An acyclic chain of calls is expanded by the same recursion, so its depth is bounded too.
//
// Nesting depth is counted in one currency for subgraphs and calls: entering an If/Loop/Scan
// body or a function body is one level, and no path from the main graph (or from any function)
// may go deeper than kMaxSubgraphDepth (lib/io/model.h). This check walks without recursion, so
// it holds for any number of functions.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace porttool::io {

// Throws Error(kBadInput) naming `where` (the file) and the cycle ("f -> g -> f", with domains)
// when functions call each other in a cycle, or the deepest chain when calls and subgraphs nest
// deeper than kMaxSubgraphDepth. Load calls it, and so does shape inference on an in-memory model.
void ValidateFunctions(const onnx::ModelProto& model, const std::string& where = "the model");

}  // namespace porttool::io
