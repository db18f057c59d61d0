// Shape inference for porttool: ONNX's inference (with data propagation) run to a fixed point,
// with schemas registered for the ONNX Runtime contrib ops users meet most (com.microsoft Gelu,
// FastGelu, QuickGelu, ...) so shapes flow through them, small external tensors made visible to
// data propagation without reading large weights, and a report of every tensor left unknown
// with the node that blocked it. It never silently returns a smaller graph.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/input_values.h"

namespace porttool::shape {

struct InferOptions {
  InputShapes input_shapes;  // pinned before inference (ApplyInputShapes)
  InputValues input_values;  // then made constants (ApplyInputValues): data propagation sees them
  int max_iterations = 8;    // fixed-point cap; a warning note when hit
  bool strict = false;       // throw on the first node-level inference error
};

struct UnresolvedTensor {
  std::string tensor;
  std::string node;  // the node producing it
  std::string op_type;
  std::string reason;  // e.g. "output shape depends on input data", "no schema for op"
  bool root = false;   // `node` produces this tensor itself (not blocked further upstream)
};

struct InferReport {
  int iterations = 0;
  int tensors_total = 0;                     // node outputs in the main graph
  int tensors_static = 0;                    // with a fully static shape
  int tensors_symbolic = 0;                  // symbolic dims, each named by a real graph input
  std::vector<UnresolvedTensor> unresolved;  // no shape, unknown dims or placeholder names
  std::vector<std::string> notes;            // warnings (cap hit, errors tolerated)
};

// Infers shapes in place: writes value_info for every intermediate tensor it could infer.
// Throws Error(kBadInput) when inference itself fails (naming the node) and Error(kUsage) for
// bad input-shape overrides.
InferReport InferShapes(io::Model& model, const InferOptions& options = {});

// The counts and unknown tensors of InferReport for the shapes `model` records now, without
// inferring anything (after the executor has filled some in). A dim named by no real graph input
// (ONNX's "unk__0", tf2onnx's "unk__363") is unknown, not symbolic: nothing can pin it.
InferReport DescribeShapes(const io::Model& model);

// InferShapes with default options as the type-completion function that lib/ir's sub-model
// builders take (ir::TypeInferenceFn: split and extract are handed it, lib/ir does not include
// lib/shape).
std::function<void(io::Model&)> TypeInference();

// Makes ONNX's schema registry know porttool's contrib-op schemas and installs the rank guards
// below (idempotent, once per process).
void RegisterContribSchemas();

// Wraps libonnx's inference functions of the ops io::OpsWithInputRankRules names so that their
// rank rules run on inferred ranks before the function does (lib/shape/rank_guards.cc).
void GuardInferenceRanks();

}  // namespace porttool::shape
