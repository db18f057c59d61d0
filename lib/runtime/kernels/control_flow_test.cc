// Loop and Scan against ONNX Runtime on the cases the node tests leave out: an early exit through
// the body's condition, scan outputs stacked per iteration, reversed scan inputs, a non-zero scan
// output axis, bodies reading values of the enclosing graph, and Scan-8's sequence_lens (short
// sequences, reversed, zero-padded outputs).
#include <gtest/gtest.h>

#include "lib/io/model.h"
#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/util/testing.h"

namespace porttool::runtime::testing_util {
namespace {

Tensor Scalar64(int64_t v) {
  Tensor t(onnx::TensorProto::INT64, {});
  t.mutable_data<int64_t>()[0] = v;
  return t;
}

TEST(ControlFlow, LoopWithEarlyExitScanOutputsAndOuterValuesMatchesOrt) {
  const std::string reason = OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 16]>
g (int64 m, bool c, float[2] v0, float[2] w) => (float[2] v, float[N, 2] ys) {
  v, ys = Loop (m, c, v0) <body = b (int64 i, bool cin, float[2] vin) => (bool cout, float[2] vout, float[2] sout) {
    vout = Add (vin, w)
    sout = Mul (vout, w)
    lim = Constant <value = int64 {3}> ()
    cout = Less (i, lim)
  }>
}
)");
  Tensor c(onnx::TensorProto::BOOL, {});
  c.mutable_data<bool>()[0] = true;
  ExpectMatchesOrt(model.proto, {{"m", Scalar64(10)},
                                 {"c", c},
                                 {"v0", FloatTensor({2}, {1, -2})},
                                 {"w", FloatTensor({2}, {0.5f, 3})}});
}

TEST(ControlFlow, ScanReversedInputOutputAxisOneMatchesOrt) {
  const std::string reason = OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 16]>
g (float[2] s0, float[3, 4, 2] xs, float[2] bias) => (float[2] s, float[4, 3, 2] ys) {
  s, ys = Scan (s0, xs) <num_scan_inputs = 1, scan_input_directions = [1], scan_output_axes = [1], body = b (float[2] sin, float[4, 2] x) => (float[2] sout, float[4, 2] y) {
    y = Add (x, sin)
    sout = Add (sin, bias)
  }>
}
)");
  std::mt19937 rng(3);
  ExpectMatchesOrt(model.proto, {{"s0", RandomFloats({2}, rng)},
                                 {"xs", RandomFloats({3, 4, 2}, rng)},
                                 {"bias", RandomFloats({2}, rng)}});
}

TEST(ControlFlow, Scan8ShortReversedSequencesMatchOrt) {
  const std::string reason = OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  // Batch entry 0 runs all 3 steps, entry 1 only 1: its reversed input starts at its element 0
  // (its last valid one), its final state stops there and its scan output is zero-padded.
  io::Model model = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 8]>
g (int64[2] lens, float[2, 2] s0, float[2, 3, 2] xs, float[2, 3, 2] zs) => (float[2, 2] s, float[2, 3, 2] ys) {
  s, ys = Scan (lens, s0, xs, zs) <num_scan_inputs = 2, directions = [1, 0], body = b (float[2] sin, float[2] x, float[2] z) => (float[2] sout, float[2] y) {
    sout = Add (sin, x)
    y = Mul (sout, z)
  }>
}
)");
  std::mt19937 rng(5);
  ExpectMatchesOrt(model.proto, {{"lens", Int64Tensor({2}, {3, 1})},
                                 {"s0", RandomFloats({2, 2}, rng)},
                                 {"xs", RandomFloats({2, 3, 2}, rng)},
                                 {"zs", RandomFloats({2, 3, 2}, rng)}});
}

}  // namespace
}  // namespace porttool::runtime::testing_util
