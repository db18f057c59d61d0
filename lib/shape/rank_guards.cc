// Rank guards around libonnx's inference functions. libonnx 1.12's inference for the Conv and
// pool family, RNN/GRU/LSTM and STFT indexes fixed dims of its inputs without checking their
// rank (or, for ConstantOfShape, Expand and Reshape, make one dim per element of a shape input).
// io::ValidateNodeAttributes refuses a wrong rank the file declares, but a rank known only
// from inference (STFT reading the rank-1 output of a Shape node: a fuzz finding of issue 27)
// reached libonnx's function and segfaulted. Each registered version of those ops gets its
// function wrapped: the same rules (io::FindInputRankProblem) run on the ranks inference has
// found so far, and a failure is an ordinary inference error naming the input, before the
// original function reads a dim that is not there.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <unordered_set>

#include "lib/io/node_attributes.h"
#include "lib/shape/infer.h"

namespace porttool::shape {
namespace {

int InferredRank(onnx::InferenceContext& ctx, int input) {
  if (input >= static_cast<int>(ctx.getNumInputs())) return -1;
  const onnx::TypeProto* type = ctx.getInputType(input);
  if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return -1;
  return type->tensor_type().shape().dim_size();
}

// The static length of a 1-D input, -1 when its shape or rank is unknown or not 1.
int64_t InferredLength(onnx::InferenceContext& ctx, int input) {
  if (InferredRank(ctx, input) != 1) return -1;
  const auto& dim = ctx.getInputType(input)->tensor_type().shape().dim(0);
  return dim.has_dim_value() ? dim.dim_value() : -1;
}

onnx::InferenceFunction Guarded(const std::string& op, onnx::InferenceFunction original) {
  return [op, original](onnx::InferenceContext& ctx) {
    auto problem = io::FindInputRankProblem(
        op, [&](int i) { return InferredRank(ctx, i); },
        [&](int i) { return InferredLength(ctx, i); });
    if (problem) fail_shape_inference("input ", problem->input, " ", problem->rule);
    if (original) original(ctx);
  };
}

}  // namespace

void GuardInferenceRanks() {
  const auto& ops = io::OpsWithInputRankRules();
  std::unordered_set<std::string> guarded(ops.begin(), ops.end());
  for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    if (!guarded.count(schema.Name()) || !schema.has_type_and_shape_inference_function()) continue;
    if (!schema.domain().empty() && schema.domain() != "com.microsoft") continue;
    const onnx::OpSchema* registered =
        onnx::OpSchemaRegistry::Schema(schema.Name(), schema.SinceVersion(), schema.domain());
    if (registered == nullptr || registered->SinceVersion() != schema.SinceVersion()) continue;
    // The registry hands out const schemas; it owns them and nothing reads them concurrently
    // while porttool's one-time registration runs.
    auto* mutable_schema = const_cast<onnx::OpSchema*>(registered);
    mutable_schema->TypeAndShapeInferenceFunction(
        Guarded(schema.Name(), registered->GetTypeAndShapeInferenceFunction()));
  }
}

}  // namespace porttool::shape
