// int16 / uint16 QuantizeLinear and DequantizeLinear (A16W8 activations): opset 21's standard ops
// and com.microsoft's below it, against hand-computed values (the ONNX 1.12 node tests predate
// int16 quantization); and the refusal of int16 in a standard op below opset 21.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

Tensor F32(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  Tensor t(TP::FLOAT, shape);
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

std::string Net(const std::string& header, const std::string& domain, const std::string& type,
                const std::string& zp) {
  return header + "\ng (float[6] x) => (" + type + "[6] q, float[6] y)\n  <float s = {0.5}, " +
         type + " z = {" + zp + "}> {\n  q = " + domain +
         "QuantizeLinear(x, s, z)\n  y = " + domain + "DequantizeLinear(q, s, z)\n}";
}

// x / 0.5 rounds half to even, plus the zero point, saturated: 1.25 -> 2.5 -> 2, 0.75 -> 2.
const std::vector<float> kX = {0, 1.25f, -1.25f, 20000, -20000, 0.75f};

TEST(QuantInt16, Opset21Int16ByHand) {
  io::Model m =
      io::ParseText(Net(R"(<ir_version: 10, opset_import: ["" : 21]>)", "", "int16", "-3"));
  Session s(m);
  auto out = s.Run({{"x", F32({6}, kX)}});
  EXPECT_EQ(Values<int16_t>(out[0].value), (std::vector<int16_t>{-3, -1, -5, 32767, -32768, -1}));
  EXPECT_EQ(Values<float>(out[1].value), (std::vector<float>{0, 1, -1, 16385, -16382.5f, 1}));
}

TEST(QuantInt16, MicrosoftUint16BelowOpset21ByHand) {
  io::Model m =
      io::ParseText(Net(R"(<ir_version: 8, opset_import: ["" : 13, "com.microsoft" : 1]>)",
                        "com.microsoft.", "uint16", "1000"));
  Session s(m);
  auto out = s.Run({{"x", F32({6}, {-600, 0.25f, 2, 40000, 0, -0.75f})}});
  // -1200 + 1000 -> 0; 0.5 -> 0 (even) + 1000; 4 + 1000; 80000 + 1000 -> 65535; -1.5 -> -2.
  EXPECT_EQ(Values<uint16_t>(out[0].value),
            (std::vector<uint16_t>{0, 1000, 1004, 65535, 1000, 998}));
  EXPECT_EQ(Values<float>(out[1].value), (std::vector<float>{-500, 0, 2, 32267.5f, 0, -1}));
}

TEST(QuantInt16, StandardInt16BelowOpset21IsRefusedNamingTheOpset) {
  io::Model m = io::ParseText(Net(R"(<ir_version: 8, opset_import: ["" : 13]>)", "", "int16", "0"));
  try {
    Session s(m);
    s.Run({{"x", F32({6}, kX)}});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opset 21"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime
