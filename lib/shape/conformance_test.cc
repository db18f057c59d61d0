// Conformance sweep over the ONNX backend test models (libonnx-testdata): `check` and shape
// inference must never crash on any of them, and wherever inference gives an output a static
// shape, it must equal the shape of the expected output tensor the test data ships.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "lib/analysis/check.h"
#include "lib/ir/dtype.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::shape {
namespace {

namespace fs = std::filesystem;

const fs::path kTestData = "/usr/share/libonnx-testdata/data";

struct SweepCounts {
  int models = 0;
  int unreadable = 0;  // Load refused it (exit 3 in the CLI)
  int check_ran = 0;
  int check_errors = 0;  // models with at least one error-level finding
  int infer_ok = 0;
  int infer_failed = 0;  // InferShapes threw porttool::Error (a clean non-zero exit)
  int outputs_compared = 0;
  int outputs_matched = 0;
  int outputs_unknown = 0;  // inferred output not static: nothing to compare
  std::vector<std::string> mismatches;
  std::vector<std::string> check_error_models;
};

std::optional<std::vector<int64_t>> ExpectedDims(const fs::path& pb) {
  std::ifstream in(pb, std::ios::binary);
  onnx::TensorProto t;
  if (!in || !t.ParseFromIstream(&in)) return std::nullopt;
  return std::vector<int64_t>(t.dims().begin(), t.dims().end());
}

void CompareOutputs(const io::Model& model, const fs::path& case_dir, SweepCounts& c) {
  const auto& outputs = model.proto.graph().output();
  for (int i = 0; i < outputs.size(); ++i) {
    fs::path pb = case_dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(pb) || !outputs[i].type().has_tensor_type()) continue;
    auto inferred = ir::StaticShape(outputs[i].type());
    if (!inferred) {
      ++c.outputs_unknown;
      continue;
    }
    auto expected = ExpectedDims(pb);
    if (!expected) continue;
    ++c.outputs_compared;
    if (*inferred == *expected) {
      ++c.outputs_matched;
    } else {
      c.mismatches.push_back(case_dir.filename().string() + ":" + outputs[i].name() + " inferred " +
                             ir::ShapeToString(outputs[i].type()));
    }
  }
}

void SweepOne(const fs::path& case_dir, SweepCounts& c) {
  fs::path path = case_dir / "model.onnx";
  if (!fs::exists(path)) return;
  ++c.models;
  io::Model model;
  try {
    model = io::Load(path);
  } catch (const Error&) {
    ++c.unreadable;
    return;
  }
  analysis::CheckReport report = analysis::CheckModel(model);  // must not throw or crash
  ++c.check_ran;
  if (report.HasErrors()) {
    ++c.check_errors;
    c.check_error_models.push_back(case_dir.filename().string() + ": " + report.findings[0].id);
  }
  // Declared output shapes would make the comparison trivial: inference must find them itself.
  for (auto& output : *model.proto.mutable_graph()->mutable_output()) {
    if (output.type().has_tensor_type())
      output.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  try {
    InferShapes(model);
    ++c.infer_ok;
  } catch (const Error&) {
    ++c.infer_failed;
    return;
  }
  CompareOutputs(model, case_dir, c);
}

TEST(Conformance, CheckAndInferShapesOverOnnxBackendTestModels) {
  if (!fs::exists(kTestData))
    PORTTOOL_SKIP_MISSING(kTestData << " absent (apt install libonnx-testdata)");
  SweepCounts c;
  for (const char* group : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    if (!fs::exists(kTestData / group)) continue;
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(kTestData / group))
      cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    for (const auto& dir : cases) SweepOne(dir, c);
  }
  std::cout << "conformance: " << c.models << " models, " << c.unreadable << " unreadable, "
            << c.check_ran << " checked (" << c.check_errors << " with error findings), "
            << c.infer_ok << " inferred, " << c.infer_failed
            << " inference refused; outputs: " << c.outputs_compared << " compared, "
            << c.outputs_matched << " matched, " << c.outputs_unknown << " not static, "
            << c.mismatches.size() << " mismatched\n";
  for (const auto& m : c.mismatches) std::cout << "  mismatch " << m << "\n";
  for (const auto& m : c.check_error_models) std::cout << "  check error " << m << "\n";
  EXPECT_GT(c.models, 1000);
  EXPECT_GT(c.outputs_compared, 800);
  EXPECT_TRUE(c.mismatches.empty());
}

}  // namespace
}  // namespace porttool::shape
