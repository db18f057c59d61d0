// RNN/GRU/LSTM variants the ONNX backend node tests leave out (they only cover forward runs at
// layout 0 with full-length sequences), checked against ONNX Runtime. ONNX Runtime rejects
// layout 1, so batch-first runs rest on the node tests test_{lstm,gru,simple_rnn}_batchwise.
#include <gtest/gtest.h>

#include <random>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime::testing_util {
namespace {

struct Case {
  const char* op;
  int gates;
  std::string direction;
  int layout;
  bool seq_lens;
  bool full;  // initial states and (LSTM) peepholes
};

void RunCase(const Case& c, NodeBuilder builder) {
  const std::string reason = OrtUnavailableReason();
  if (!reason.empty()) PORTTOOL_SKIP_MISSING(reason);
  const int64_t steps = 5, batch = 3, in = 4, hidden = 6;
  const int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  std::mt19937 rng(7);
  std::vector<std::pair<std::string, Tensor>> inputs = {
      {"X", RandomFloats(c.layout ? std::vector<int64_t>{batch, steps, in}
                                  : std::vector<int64_t>{steps, batch, in},
                         rng)},
      {"W", RandomFloats({dirs, c.gates * hidden, in}, rng)},
      {"R", RandomFloats({dirs, c.gates * hidden, hidden}, rng)},
      {"B", RandomFloats({dirs, 2 * c.gates * hidden}, rng)}};
  onnx::NodeProto node = builder.Str("direction", c.direction)
                             .Int("hidden_size", hidden)
                             .Int("layout", c.layout)
                             .node();
  node.clear_input();
  for (const char* name : {"X", "W", "R", "B"}) node.add_input(name);
  const bool lstm = std::string(c.op) == "LSTM";
  node.add_input(c.seq_lens ? "L" : "");
  if (c.seq_lens) {
    Tensor lens(onnx::TensorProto::INT32, {batch});
    const int32_t values[] = {5, 2, 4};
    std::copy(values, values + batch, lens.mutable_data<int32_t>());
    inputs.push_back({"L", lens});
  }
  if (c.full) {
    std::vector<int64_t> state = c.layout ? std::vector<int64_t>{batch, dirs, hidden}
                                          : std::vector<int64_t>{dirs, batch, hidden};
    node.add_input("H0");
    inputs.push_back({"H0", RandomFloats(state, rng)});
    if (lstm) {
      node.add_input("C0");
      node.add_input("P");
      inputs.push_back({"C0", RandomFloats(state, rng)});
      inputs.push_back({"P", RandomFloats({dirs, 3 * hidden}, rng)});
    }
  }
  node.clear_output();
  for (const char* name : {"Y", "Y_h", "Y_c"}) {
    if (lstm || std::string(name) != "Y_c") node.add_output(name);
  }
  ExpectMatchesOrt(OneNodeModel(node, 14, inputs, onnx::TensorProto::FLOAT), inputs);
}

TEST(Recurrent, LstmBidirectionalWithSequenceLengthsStatesAndPeepholesMatchesOrt) {
  RunCase({"LSTM", 4, "bidirectional", 0, true, true}, NodeBuilder("LSTM", 0, 0));
}

TEST(Recurrent, LstmReverseClippedInputForgetMatchesOrt) {
  RunCase({"LSTM", 4, "reverse", 0, true, true},
          NodeBuilder("LSTM", 0, 0).Float("clip", 0.5f).Int("input_forget", 1));
}

TEST(Recurrent, GruBidirectionalWithSequenceLengthsMatchesOrt) {
  RunCase({"GRU", 3, "bidirectional", 0, true, true}, NodeBuilder("GRU", 0, 0));
}

TEST(Recurrent, GruReverseLinearBeforeResetMatchesOrt) {
  RunCase({"GRU", 3, "reverse", 0, false, true},
          NodeBuilder("GRU", 0, 0).Int("linear_before_reset", 1));
}

TEST(Recurrent, RnnActivationsWithAlphaMatchOrt) {
  RunCase({"RNN", 1, "bidirectional", 0, true, true},
          NodeBuilder("RNN", 0, 0)
              .Strs("activations", {"LeakyRelu", "HardSigmoid"})
              .Floats("activation_alpha", {0.3f, 0.7f})
              .Floats("activation_beta", {0.4f}));
}

TEST(Recurrent, UnknownActivationIsRejectedNamingIt) {
  auto node = NodeBuilder("RNN", 3, 2).Int("hidden_size", 2).Strs("activations", {"Gelu"}).node();
  std::mt19937 rng(1);
  Tensor x = RandomFloats({1, 1, 2}, rng), w = RandomFloats({1, 2, 2}, rng),
         r = RandomFloats({1, 2, 2}, rng);
  try {
    RunOp(node, 14, {&x, &w, &r});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Gelu'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porttool::runtime::testing_util
