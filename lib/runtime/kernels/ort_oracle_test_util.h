// Test helper: runs a one-node model through the executor and through ONNX Runtime
// (scripts/ort_run.js, npm onnxruntime-node) on the same inputs and compares every output. Used
// for the attribute combinations the ONNX backend node tests do not cover (bidirectional and
// reverse recurrences, sequence_lens, layout 1, Loop/Scan variants). Test-only.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::runtime::testing_util {

// Whether ONNX Runtime for node can serve as the oracle; the reason when it cannot.
inline std::string OrtUnavailableReason() { return testing::OrtUnavailableReason(); }

// A model of one node over `inputs` (declared with their dtype and shape, "" for an absent
// optional input) producing `outputs` of element type `out_dtype`.
inline onnx::ModelProto OneNodeModel(const onnx::NodeProto& node, int opset,
                                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                                     int32_t out_dtype) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("oracle");
  *g->add_node() = node;
  for (const auto& [name, t] : inputs) {
    auto* vi = g->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.dtype());
    auto* shape = tt->mutable_shape();
    for (int64_t d : t.shape()) shape->add_dim()->set_dim_value(d);
  }
  for (const auto& out : node.output()) {
    if (out.empty()) continue;
    auto* vi = g->add_output();
    vi->set_name(out);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(out_dtype);
  }
  return m;
}

// Runs `model` in both runtimes and expects every float output within `tol` of ONNX Runtime's,
// relative to the output's magnitude range.
inline void ExpectMatchesOrt(const onnx::ModelProto& model,
                             const std::vector<std::pair<std::string, Tensor>>& inputs,
                             double tol = 1e-5) {
  testing::TempDir dir;
  const auto model_path = dir / "model.onnx";
  {
    std::ofstream out(model_path, std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
  }
  std::string cmd = testing::OrtRunCommand() + " " + model_path.string() + " --output-dir " +
                    (dir / "ort").string();
  TensorMap feeds;
  for (const auto& [name, t] : inputs) {
    WriteNpy(dir / (name + ".npy"), t);
    cmd += " --input " + name + "=" + (dir / (name + ".npy")).string();
    feeds[name] = t;
  }
  auto ort = testing::RunShell(cmd);
  ASSERT_EQ(ort.exit_code, 0) << ort.err;
  io::Model loaded = io::Load(model_path);
  Session session(loaded);
  auto outputs = session.Run(feeds);
  auto files = TensorFileNames(session.output_names(), ".npy");
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor expected = ReadNpy(dir / "ort" / files[i]);
    const Tensor& got = outputs[i].value;
    ASSERT_EQ(got.shape(), expected.shape()) << outputs[i].name;
    ASSERT_EQ(got.dtype(), expected.dtype()) << outputs[i].name;
    if (got.dtype() != onnx::TensorProto::FLOAT) {
      EXPECT_EQ(0, std::memcmp(got.raw(), expected.raw(), got.bytes())) << outputs[i].name;
      continue;
    }
    const float* e = expected.data<float>();
    const float* a = got.data<float>();
    // Over the finite values: a reduction of nothing gives an infinity (ReduceMax: -inf), which
    // would make the tolerance infinite and inf - inf a NaN difference.
    double range = 1e-12;
    for (int64_t k = 0; k < expected.size(); ++k) {
      if (std::isfinite(e[k])) range = std::max<double>(range, std::abs(e[k]));
    }
    for (int64_t k = 0; k < expected.size(); ++k) {
      if (std::isinf(e[k]) && a[k] == e[k]) continue;
      ASSERT_NEAR(a[k], e[k], tol * range) << outputs[i].name << " element " << k;
    }
  }
}

}  // namespace porttool::runtime::testing_util
