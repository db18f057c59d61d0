// Test helpers for the pass suites: run a pipeline on a model, join its notes, and the proof every
// pass owes — run the model before and after through the executor on the same random inputs and
// return the largest output difference. Test-only; included by *_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "passes/pipeline.h"

namespace porttool::passes::testing_util {

inline PassResult RunOne(io::Model& model, const std::string& pipeline) {
  auto reports = RunPipeline(model, ParsePipeline(pipeline));
  return reports.back().result;
}

inline std::string Notes(const PassResult& result) {
  std::string text;
  for (const auto& n : result.notes) text += n + "\n";
  return text;
}

inline int CountOp(const io::Model& model, const std::string& op) {
  const auto& nodes = model.proto.graph().node();
  return static_cast<int>(
      std::count_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.op_type() == op; }));
}

// Largest |after - before| over every graph output (matched by name) on random inputs; also
// fails the test when an output is missing or changes shape.
inline double MaxOutputDiff(const io::Model& before, const io::Model& after, uint64_t seed = 7) {
  runtime::Session a(before), b(after);
  auto inputs = runtime::RandomInputs(a, seed);
  // Random inputs in [0, 1) miss the negative half of most activations: centre them on 0.
  for (auto& [name, t] : inputs) {
    if (t.dtype() != onnx::TensorProto::FLOAT) continue;
    float* p = t.mutable_data<float>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = 4 * p[i] - 2;
  }
  auto out_a = a.Run(inputs);
  auto out_b = b.Run(inputs);
  double worst = 0;
  for (const auto& x : out_a) {
    auto it =
        std::find_if(out_b.begin(), out_b.end(), [&](const auto& y) { return y.name == x.name; });
    EXPECT_NE(it, out_b.end()) << "output " << x.name << " missing after the pass";
    if (it == out_b.end()) return INFINITY;
    EXPECT_EQ(x.value.shape(), it->value.shape()) << x.name;
    if (x.value.shape() != it->value.shape()) return INFINITY;
    const float* p = x.value.data<float>();
    const float* q = it->value.data<float>();
    for (int64_t i = 0; i < x.value.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(p[i] - q[i])));
    }
  }
  return worst;
}

}  // namespace porttool::passes::testing_util
