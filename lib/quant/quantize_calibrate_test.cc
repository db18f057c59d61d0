// Calibration end to end on a small synthetic model: statistics equal to the data's, the same
// table for any thread count, table formats, the QDQ model (what is quantized and excluded, and
// that the executor runs it close to the float model), table reuse on an extracted segment,
// the accuracy report, and the bad-input errors that name the culprit.
#include "lib/quant/quantize_calibrate.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "lib/ir/extract.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::quant {
namespace {

using runtime::Tensor;
using TP = onnx::TensorProto;
namespace fs = std::filesystem;

constexpr const char* kNet = R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1,2,4,4] x) => (float[1,3] y) {
  w = Constant <value = float[3,2,1,1] {0.5, -1.0, 2.0, 0.25, -0.75, 1.5}> ()
  b = Constant <value = float[3] {0.1, -0.2, 0.3}> ()
  c = Conv (x, w, b)
  r = Relu (c)
  p = GlobalAveragePool (r)
  f = Flatten (p)
  m = Constant <value = float[3,3] {1.0, 0.5, -0.5, 0.2, 1.0, 0.3, -0.4, 0.1, 1.0}> ()
  l = MatMul (f, m)
  y = Softmax (l)
})";

// Names every node n0, n1, ... in graph order (the text format leaves them unnamed).
void NameNodes(io::Model& m) {
  int i = 0;
  for (auto& n : *m.proto.mutable_graph()->mutable_node()) n.set_name("n" + std::to_string(i++));
}

io::Model Net() {
  io::Model m = io::ParseText(kNet);
  int i = 0;
  for (auto& n : *m.proto.mutable_graph()->mutable_node()) {
    n.set_name(n.op_type() + "_" + std::to_string(i++));
  }
  return m;
}

// Writes `count` samples <id>.x.npy of N(0, 1) values, one of them with an outlier.
std::vector<Tensor> WriteSamples(const fs::path& dir, int count, uint64_t seed = 1) {
  fs::create_directories(dir);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<Tensor> out;
  for (int s = 0; s < count; ++s) {
    Tensor t(TP::FLOAT, {1, 2, 4, 4});
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = normal(rng);
    if (s == 2) t.mutable_data<float>()[5] = 9.f;
    runtime::WriteNpy(dir / fmt::format("{:04d}.x.npy", s), t);
    out.push_back(t);
  }
  return out;
}

// A request calibrating on 8 samples written under tmp/data (the last 2 held out).
QuantizeCalibrateRequest NetRequest(const testing::TempDir& tmp) {
  WriteSamples(tmp / "data", 8);
  QuantizeCalibrateRequest req;
  req.data_dir = tmp / "data";
  return req;
}

CollectOptions Threads(int n) {
  CollectOptions o;
  o.threads = n;
  return o;
}

SampleSet List(const io::Model& m, const fs::path& dir) {
  return ListSamples(dir, runtime::Session(m).inputs(), std::nullopt);
}

TEST(Calibrate, InputStatisticsMatchTheData) {
  testing::TempDir tmp;
  auto samples = WriteSamples(tmp / "data", 5);
  io::Model m = Net();
  StatsMap stats = CollectStats(m, List(m, tmp / "data"), Threads(1));
  float lo = 1e9f, hi = -1e9f;
  for (const auto& t : samples) {
    for (int64_t i = 0; i < t.size(); ++i) {
      lo = std::min(lo, t.data<float>()[i]);
      hi = std::max(hi, t.data<float>()[i]);
    }
  }
  ASSERT_TRUE(stats.count("x"));
  EXPECT_EQ(stats.at("x").stats.min(), lo);
  EXPECT_EQ(stats.at("x").stats.max(), hi);
  EXPECT_EQ(stats.at("x").samples, 5u);
  EXPECT_EQ(stats.at("x").stats.count(), 5u * 32);
  // The observer names the producing node.
  EXPECT_EQ(stats.at("r").op_type, "Relu");
  EXPECT_EQ(stats.at("r").node, "Relu_3");
  EXPECT_EQ(stats.at("r").stats.min(), 0);

  CalibrationTable t = BuildTable(stats, {.method = Method::kMinMax});
  const TableEntry& x = t.tensors.at("x");
  EXPECT_DOUBLE_EQ(x.min, lo);
  EXPECT_DOUBLE_EQ(x.max, hi);
  EXPECT_DOUBLE_EQ(x.scale, (double(hi) - lo) / 255.0);
  EXPECT_EQ(x.zero_point, std::llround(-lo / x.scale));
  EXPECT_EQ(x.dtype, "uint8");
  // Percentile clips the 9.0 outlier of x: the range ends below it.
  CalibrationTable p = BuildTable(stats, {.method = Method::kPercentile, .percentile = 99.0});
  EXPECT_LT(p.tensors.at("x").max, 9.0);
  EXPECT_EQ(hi, 9.f);
}

TEST(Calibrate, SameTableForAnyThreadCount) {
  testing::TempDir tmp;
  WriteSamples(tmp / "data", 7);
  io::Model m = Net();
  SampleSet set = List(m, tmp / "data");
  for (Method method : {Method::kMinMax, Method::kPercentile, Method::kEntropy, Method::kMse}) {
    CalibrationOptions o{.method = method};
    auto one = BuildTable(CollectStats(m, set, Threads(1)), o).ToJson();
    auto three = BuildTable(CollectStats(m, set, Threads(3)), o).ToJson();
    EXPECT_EQ(one, three) << MethodName(method);
  }
}

// Only inputs of quantizable ops are binned: in Net those are x (Conv), r (GlobalAveragePool)
// and f (MatMul). The others keep an exact min/max range and say so in their entry's method.
TEST(Calibrate, HistogramsOnlyForWhatQdqCanQuantize) {
  testing::TempDir tmp;
  WriteSamples(tmp / "data", 4);
  io::Model m = Net();
  EXPECT_EQ(QuantizableActivations(m.proto.graph()), (std::set<std::string>{"x", "r", "f"}));
  CollectOptions o = Threads(1);
  o.histogram_tensors = QuantizableActivations(m.proto.graph());
  StatsMap stats = CollectStats(m, List(m, tmp / "data"), o);
  CalibrationTable t = BuildTable(stats, {.method = Method::kPercentile, .percentile = 99.0});
  for (const char* binned : {"x", "r", "f"}) EXPECT_EQ(t.tensors.at(binned).method, "percentile");
  for (const char* plain : {"c", "p", "l", "y"}) {
    const TableEntry& e = t.tensors.at(plain);
    EXPECT_EQ(e.method, "minmax") << plain;
    EXPECT_EQ(e.max, std::max(0.0, e.observed_max)) << plain;
    EXPECT_EQ(e.min, std::min(0.0, e.observed_min)) << plain;
  }
  // Binned or not, the exact extremes are the same.
  StatsMap all = CollectStats(m, List(m, tmp / "data"), Threads(1));
  EXPECT_EQ(all.at("c").stats.max(), stats.at("c").stats.max());
  EXPECT_EQ(all.at("x").stats.min(), stats.at("x").stats.min());
}

// An SE gate (HardSigmoid after a pooled branch) is binned, but its range stays the observed one
// under percentile and entropy: a bounded output has no outlier to clip, and its rare values
// near 1 are the open gate.
TEST(Calibrate, BoundedOutputsKeepTheirObservedRange) {
  testing::TempDir tmp;
  WriteSamples(tmp / "data", 4);
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y) {
  p = GlobalAveragePool (x)
  gate = HardSigmoid (p)
  y = Mul (x, gate)
})");
  CollectOptions o = Threads(1);
  o.histogram_tensors = QuantizableActivations(m.proto.graph());
  ASSERT_TRUE(o.histogram_tensors->count("gate"));
  StatsMap stats = CollectStats(m, List(m, tmp / "data"), o);
  for (Method method : {Method::kPercentile, Method::kEntropy}) {
    CalibrationTable t = BuildTable(stats, {.method = method, .percentile = 90.0});
    const TableEntry& gate = t.tensors.at("gate");
    EXPECT_EQ(gate.method, "minmax") << MethodName(method);
    EXPECT_EQ(gate.max, gate.observed_max) << MethodName(method);
    EXPECT_EQ(t.tensors.at("x").method, MethodName(method));
    EXPECT_LT(t.tensors.at("x").max, t.tensors.at("x").observed_max) << MethodName(method);
  }
}

TEST(Calibrate, SymmetricTableAndTensorRtCache) {
  TableEntry e;
  ComputeQuantParams(-0.5, 2.0, true, e);
  EXPECT_EQ(e.dtype, "int8");
  EXPECT_EQ(e.zero_point, 0);
  EXPECT_DOUBLE_EQ(e.scale, 2.0 / 127);
  CalibrationTable t;
  t.method = "entropy";
  t.tensors["conv1"] = e;
  std::string cache = t.ToTensorRtCache();
  float s = 2.0f / 127.0f;
  EXPECT_EQ(cache, fmt::format("TRT-8601-EntropyCalibration2\nconv1: {:08x}\n",
                               std::bit_cast<uint32_t>(s)));
  // The NVIDIA sample's own line: 0x3c88edfc is a scale of 0.016715 (range ~2.12).
  EXPECT_NEAR(std::bit_cast<float>(uint32_t{0x3c88edfc}) * 127, 2.12, 0.01);
  // Round trip through JSON.
  auto back = CalibrationTable::FromJson(t.ToJson(), "t.json");
  EXPECT_EQ(back.ToJson(), t.ToJson());
}

int Count(const io::Model& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.proto.graph().node()) n += node.op_type() == op;
  return n;
}

TEST(Qdq, QuantizesConvMatMulKeepsSoftmaxFloatAndStaysClose) {
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  req.calibration.method = Method::kMinMax;
  req.qdq.per_channel = true;
  auto r = QuantizeCalibrate(m, req);
  // Conv (x, w, bias), GlobalAveragePool (r), MatMul (f, m).
  EXPECT_EQ(r.qdq.quantized_nodes, 3);
  EXPECT_EQ(r.qdq.quantized_weights, 2);
  EXPECT_EQ(r.qdq.quantized_activations, 3);
  ASSERT_EQ(r.qdq.excluded.size(), 1u);
  EXPECT_EQ(r.qdq.excluded[0].op_type, "Softmax");
  EXPECT_EQ(Count(r.qdq_model, "QuantizeLinear"), 3);
  EXPECT_EQ(Count(r.qdq_model, "DequantizeLinear"), 6);  // 3 activations, 2 weights, 1 bias
  // Per-channel Conv weight: scale c = max |w[c]| / 127, axis 0.
  for (const auto& init : r.qdq_model.proto.graph().initializer()) {
    if (init.name() != "w_scale") continue;
    Tensor s = runtime::TensorFromProto(init);
    ASSERT_EQ(s.size(), 3);
    EXPECT_FLOAT_EQ(s.data<float>()[0], 1.0f / 127);
    EXPECT_FLOAT_EQ(s.data<float>()[1], 2.0f / 127);
    EXPECT_FLOAT_EQ(s.data<float>()[2], 1.5f / 127);
  }
  // 2 of 8 samples held out; the QDQ output stays close to the float one.
  EXPECT_EQ(r.calibration_samples, 6u);
  ASSERT_TRUE(r.accuracy);
  EXPECT_EQ(r.accuracy->samples, 2u);
  ASSERT_EQ(r.accuracy->outputs.size(), 1u);
  EXPECT_GT(r.accuracy->outputs[0].sqnr_db, 20);
  EXPECT_GT(r.accuracy->outputs[0].cosine, 0.99);
  EXPECT_FALSE(r.accuracy->worst.empty());
}

// The evaluation merges samples in order: any thread count gives the same report.
TEST(Accuracy, SameReportForAnyThreadCount) {
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  req.qdq.per_channel = true;
  req.thresholds = {{"y", 0.4}};
  auto one = ReportJson(QuantizeCalibrate(m, req));
  req.calibration.threads = 3;
  auto three = ReportJson(QuantizeCalibrate(m, req));
  EXPECT_EQ(one["accuracy"], three["accuracy"]);
}

// Mixed precision keeps the worst node float, evaluates again, and stops at the node budget when
// the target is out of reach; a reachable target stops at once.
TEST(Qdq, MixedPrecisionKeepsWorstNodesFloatUpToTheBudget) {
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  req.target = AccuracyTarget{"sqnr", 500};
  req.max_raised = 2;
  req.int16_first = false;
  auto r = QuantizeCalibrate(m, req);
  ASSERT_EQ(r.fallback.size(), 2u);
  EXPECT_FALSE(r.target_reached);
  EXPECT_NE(r.fallback[0].node, r.fallback[1].node);
  int kept = 0;
  for (const auto& e : r.qdq.excluded) kept += e.reason.find("mixed precision") == 0;
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(r.qdq.quantized_nodes, 1);  // 3 quantizable nodes, 2 kept float
  auto json = ReportJson(r);
  EXPECT_EQ(json["mixed_precision"]["kept_float"].size(), 2u);
  req.target = AccuracyTarget{"sqnr", 0};
  auto easy = QuantizeCalibrate(m, req);
  EXPECT_TRUE(easy.target_reached);
  EXPECT_TRUE(easy.fallback.empty());
}

// A task-metric target ranks the nodes by sensitivity first and raises them in that order; the
// report carries the task figures, the ranking and each raised node's metric after it.
TEST(Qdq, TaskTargetRaisesTheMostSensitiveNodesInOrder) {
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  req.tasks = ParseTasks({"classify"});
  req.target = ParseAccuracyTarget("top1:1");
  auto r = QuantizeCalibrate(m, req);
  ASSERT_TRUE(r.accuracy);
  ASSERT_EQ(r.accuracy->tasks.size(), 1u);
  EXPECT_EQ(r.accuracy->tasks[0].output, "y");
  EXPECT_TRUE(r.target_reached);
  EXPECT_EQ(*r.accuracy->Metric("top1"), 1.0);
  ASSERT_EQ(r.sensitivity.size(), 3u);  // Conv, MatMul and the pooling run quantized
  EXPECT_EQ(r.sensitivity_metric, "top1");
  for (size_t i = 1; i < r.sensitivity.size(); ++i) {
    EXPECT_LE(r.sensitivity[i - 1].alone, r.sensitivity[i].alone);
  }
  auto json = ReportJson(r);
  EXPECT_EQ(json["accuracy"]["tasks"][0]["task"], "classify");
  EXPECT_EQ(json["sensitivity"]["nodes"].size(), 3u);
  EXPECT_TRUE(json["mixed_precision"]["reached"].get<bool>());
  // SQNR ranking with the cumulative metric: raising every node leaves the float model.
  req.target.reset();
  req.sensitivity = true;
  req.tasks = {};
  auto ranked = QuantizeCalibrate(m, req);
  ASSERT_EQ(ranked.sensitivity.size(), 3u);
  EXPECT_EQ(ranked.sensitivity_metric, "sqnr");
  ASSERT_TRUE(ranked.sensitivity[2].has_cumulative);
  EXPECT_TRUE(std::isinf(ranked.sensitivity[2].cumulative));
  EXPECT_GE(ranked.sensitivity[1].cumulative, ranked.accuracy->Metric("sqnr").value());
}

TEST(Qdq, AccuracyTargetsAndLabelsRejectWithTheCulprit) {
  for (const char* bad : {"acc:0.9", "seq:1.5", "sqnr:0", "top1:x", "hmean"}) {
    try {
      ParseAccuracyTarget(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  req.target = ParseAccuracyTarget("seq:0.9");  // no ctc output
  try {
    QuantizeCalibrate(m, req);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("--task ctc"), std::string::npos) << e.what();
  }
  req.target.reset();
  req.tasks = ParseTasks({"classify"});
  req.labels = {{"0000", 1}, {"nosuch", 2}};
  try {
    QuantizeCalibrate(m, req);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'nosuch'"), std::string::npos) << e.what();
  }
  req.tasks = ParseTasks({"y:ctc"});  // [1, 3] is not [N, T, C]
  req.labels.clear();
  try {
    QuantizeCalibrate(m, req);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
}

// A16W8 by hand: the named node reads 16-bit Q/DQ (com.microsoft below opset 21, int32 bias at
// the 16-bit scale), the others stay 8-bit, the executor runs it, and it is closer to float than
// all-int8; the search raises to int16 first.
TEST(Qdq, Int16NodesGetSixteenBitActivations) {
  testing::TempDir tmp;
  io::Model m = Net();
  QuantizeCalibrateRequest req = NetRequest(tmp);
  auto int8 = QuantizeCalibrate(m, req);
  req.qdq.int16_nodes = {"Conv_2", "GlobalAveragePool_4", "MatMul_7"};
  auto mixed = QuantizeCalibrate(m, req);
  EXPECT_EQ(mixed.qdq.int16_nodes,
            (std::vector<std::string>{"Conv_2", "GlobalAveragePool_4", "MatMul_7"}));
  EXPECT_EQ(mixed.qdq.int16_activations, 3);
  // The table marks what the int16 nodes read; the TensorRT cache (no int16 there) leaves it out.
  EXPECT_TRUE(mixed.table.tensors.at("x").int16);
  EXPECT_FALSE(int8.table.tensors.at("x").int16);
  EXPECT_EQ(mixed.table.ToJson()["tensors"]["x"]["precision"], "int16");
  EXPECT_TRUE(CalibrationTable::FromJson(mixed.table.ToJson(), "t.json").tensors.at("x").int16);
  EXPECT_EQ(mixed.table.ToTensorRtCache().find("\nx: "), std::string::npos);
  EXPECT_NE(int8.table.ToTensorRtCache().find("\nx: "), std::string::npos);
  int wide = 0;
  bool microsoft = false;
  for (const auto& n : mixed.qdq_model.proto.graph().node()) {
    if (n.op_type() != "QuantizeLinear") continue;
    const bool is16 = n.name().find("_i16_") != std::string::npos;
    wide += is16;
    if (is16) microsoft = n.domain() == "com.microsoft";
  }
  EXPECT_EQ(wide, 3);
  EXPECT_TRUE(microsoft);  // opset 13
  // The same range on 65536 levels: x's scale is the table's (255 levels) x 255 / 65535.
  const TableEntry& x = mixed.table.tensors.at("x");
  for (const auto& init : mixed.qdq_model.proto.graph().initializer()) {
    if (init.name() == "x_i16_scale") {
      EXPECT_NEAR(runtime::TensorFromProto(mixed.qdq_model, init).data<float>()[0],
                  (x.max - x.min) / 65535, 1e-9);
      EXPECT_NEAR(x.scale * 255 / 65535, (x.max - x.min) / 65535, 1e-9);
    }
    if (init.name() == "x_i16_zero_point") {
      EXPECT_EQ(init.data_type(), TP::UINT16);
    }
  }
  EXPECT_GT(mixed.accuracy->Metric("sqnr").value(), int8.accuracy->Metric("sqnr").value());
  req.qdq.int16_nodes = {"NoSuchNode"};
  EXPECT_THROW(QuantizeCalibrate(m, req), Error);
  req.qdq.int16_nodes.clear();
  req.target = AccuracyTarget{"sqnr", 500};
  req.max_raised = 1;
  auto searched = QuantizeCalibrate(m, req);
  ASSERT_EQ(searched.fallback.size(), 2u);  // to int16, then the same node to float
  EXPECT_EQ(searched.fallback[0].precision, "int16");
  EXPECT_EQ(searched.fallback[1].precision, "float");
  EXPECT_EQ(searched.fallback[0].node, searched.fallback[1].node);
}

// Bias fit: a channel of all-zero weights (scale 1) with a bias of 0.5 behind an input whose
// scale is ~1e-11 needs 5e10 at x_scale * w_scale, past int32; the weight scale is enlarged so the
// bias survives (it used to be clamped to 2^31 steps, about 0.02).
TEST(Qdq, BiasFitKeepsTheBiasOfAZeroWeightChannel) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1,1,2,2] x) => (float[1,2,2,2] y) {
  w = Constant <value = float[2,1,1,1] {0.0, 1.0}> ()
  b = Constant <value = float[2] {0.5, 0.0}> ()
  y = Conv (x, w, b)
})");
  NameNodes(m);
  testing::TempDir tmp;
  fs::create_directories(tmp / "data");
  for (int s = 0; s < 4; ++s) {
    Tensor t(TP::FLOAT, {1, 1, 2, 2});
    for (int i = 0; i < 4; ++i) t.mutable_data<float>()[i] = 1e-9f * static_cast<float>(i - s);
    runtime::WriteNpy(tmp / "data" / fmt::format("{}.x.npy", s), t);
  }
  QuantizeCalibrateRequest req;
  req.data_dir = tmp / "data";
  req.evaluate = false;
  req.qdq.per_channel = true;
  auto r = QuantizeCalibrate(m, req);
  bool noted = false;
  for (const auto& n : r.qdq.notes) noted |= n.find("bias fit: 1 output channel") == 0;
  EXPECT_TRUE(noted) << ::testing::PrintToString(r.qdq.notes);
  runtime::Session s(r.qdq_model);
  Tensor x(TP::FLOAT, {1, 1, 2, 2});
  auto out = s.Run({{"x", x}});
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].value.data<float>()[i], 0.5f, 1e-6f) << i;
}

TEST(Qdq, TableAppliesUnchangedToAnExtractedSegment) {
  testing::TempDir tmp;
  WriteSamples(tmp / "data", 4);
  io::Model m = Net();
  CalibrationTable t = BuildTable(CollectStats(m, List(m, tmp / "data"), Threads(1)), {});
  io::Model seg = ir::ExtractSubgraph(m, {"r"}, {"y"});
  QdqResult qr = InsertQdq(seg, CalibrationTable::FromJson(t.ToJson(), "t.json"), {});
  EXPECT_GE(qr.quantized_activations, 1);
  // The bridge tensor r gets the whole model's scale and zero point.
  for (const auto& init : seg.proto.graph().initializer()) {
    if (init.name() == "r_scale") {
      EXPECT_FLOAT_EQ(runtime::TensorFromProto(init).data<float>()[0],
                      static_cast<float>(t.tensors.at("r").scale));
    }
  }
  runtime::Session s(seg);
  EXPECT_EQ(s.inputs().at(0).name, "r");
}

TEST(Qdq, UnknownExclusionsAreUsageErrors) {
  io::Model m = Net();
  CalibrationTable t;
  try {
    QdqOptions o;
    o.exclude_ops = {"Softmx"};
    InsertQdq(m, t, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("Softmax"), std::string::npos) << e.what();
  }
  try {
    QdqOptions o;
    o.exclude_nodes = {"Conv_9"};
    InsertQdq(m, t, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("Conv_2"), std::string::npos) << e.what();
  }
}

// An opset-9 model is raised to opset 10 for standard Q/DQ (ONNX Runtime's QDQ fusion emits
// opset-10 QLinearConv and rejects com.microsoft pairs in an opset-9 model); its Slice's
// attributes become inputs, and the model computes the same (a 4-wide slice of a 4-wide axis, then
// the last 3 columns of it).
TEST(Qdq, Opset9IsRaisedTo10WithSliceAttributesAsInputs) {
  for (bool with_slice : {false, true}) {
    io::Model m = io::ParseText(std::string(R"(
<ir_version: 4, opset_import: ["" : 9]>
g (float[1,2,4,4] x) => (float[1,3,4,4] y) {
  w = Constant <value = float[3,2,1,1] {0.5, -1.0, 2.0, 0.25, -0.75, 1.5}> ()
  c = Conv (x, w)
)") + (with_slice ? "  s = Slice <starts = [1], ends = [4], axes = [3]> (c)\n"
                    "  y = Pad <pads = [0,0,0,1,0,0,0,0]> (s)\n}"
                  : "  y = Relu (c)\n}"));
    int i = 0;
    for (auto& n : *m.proto.mutable_graph()->mutable_node()) n.set_name("n" + std::to_string(i++));
    CalibrationTable t;
    for (const char* name : {"x", "c"}) {
      TableEntry e;
      ComputeQuantParams(-2, 2, false, e);
      t.tensors[name] = e;
    }
    const io::Model original = m;
    InsertQdq(m, t, {});
    int64_t opset = 0;
    std::set<std::string> q_domains;
    for (const auto& o : m.proto.opset_import()) {
      if (o.domain().empty()) opset = o.version();
    }
    for (const auto& n : m.proto.graph().node()) {
      if (n.op_type() == "QuantizeLinear") q_domains.insert(n.domain());
    }
    EXPECT_EQ(opset, 10) << with_slice;
    EXPECT_EQ(q_domains, (std::set<std::string>{""})) << with_slice;
    runtime::Session s(m);  // the result still plans and runs
    runtime::TensorMap in;
    in["x"] = runtime::Tensor(onnx::TensorProto::FLOAT, {1, 2, 4, 4});
    for (int64_t k = 0; k < 32; ++k) in["x"].mutable_data<float>()[k] = 0.05f * k - 0.8f;
    const runtime::Tensor y = s.Run(in).at(0).value;
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3, 4, 4}));
    // Same function as the opset-9 float model, up to quantization (steps of 4/255).
    const runtime::Tensor ref = runtime::Session(original).Run(in).at(0).value;
    for (int64_t k = 0; k < y.size(); ++k) {
      EXPECT_NEAR(y.data<float>()[k], ref.data<float>()[k], 0.06) << with_slice << " " << k;
    }
    if (with_slice) {
      for (const auto& n : m.proto.graph().node()) {
        if (n.op_type() != "Slice") continue;
        ASSERT_EQ(n.input_size(), 4);  // data, starts, ends, axes
        EXPECT_EQ(n.attribute_size(), 0);
      }
    }
  }
}

// x * 0.5 * (1 + Erf(x / sqrt 2)) between two MatMuls: the Add and Muls inside stay float.
TEST(Qdq, DecomposedGeluStaysFloat) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,2] x) => (float[2,2] y) {
  k = Constant <value = float[1] {1.41421}> ()
  one = Constant <value = float[1] {1.0}> ()
  half = Constant <value = float[1] {0.5}> ()
  d = Div (x, k)
  e = Erf (d)
  a = Add (e, one)
  m1 = Mul (x, a)
  y = Mul (m1, half)
})");
  NameNodes(m);
  CalibrationTable t;
  ComputeQuantParams(-1, 1, false, t.tensors["x"]);
  QdqResult r = InsertQdq(m, t, {});
  EXPECT_EQ(r.quantized_nodes, 0);
  EXPECT_EQ(r.excluded.size(), 4u);  // Div, Add, Mul, Mul
}

// PP-LCNetV3's block after fusion: Conv, a constant scale and shift, the decomposed hard-swish
// x * relu6(x + 3) / 6, then a residual Add of two activations and a Conv. Integer backends fuse
// the constant ops and the hard-swish into one activation, so Q/DQ go only where the convs and
// the residual Add read: x, the hard-swish output t and the conv output c (both Add inputs).
TEST(Qdq, ConstantOpsAndHardSwishAreFusedNotRequantized) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y) {
  w = Constant <value = float[2,2,1,1] {1.0, 0.5, -0.5, 1.0}> ()
  k = Constant <value = float[1] {0.9}> ()
  sh = Constant <value = float[1] {0.1}> ()
  three = Constant <value = float[1] {3.0}> ()
  zero = Constant <value = float[1] {0.0}> ()
  six = Constant <value = float[1] {6.0}> ()
  c0 = Conv (x, w)
  s = Mul (c0, k)
  a = Add (s, sh)
  a3 = Add (a, three)
  r6 = Clip (a3, zero, six)
  h = Mul (a, r6)
  t = Div (h, six)
  c = Conv (t, w)
  y = Add (c, t)
})");
  NameNodes(m);
  CalibrationTable table;
  for (const char* name : {"x", "c0", "s", "a", "a3", "r6", "h", "t", "c"}) {
    ComputeQuantParams(-4, 4, false, table.tensors[name]);
  }
  EXPECT_EQ(QuantizableActivations(m.proto.graph()), (std::set<std::string>{"x", "t", "c"}));
  QdqResult r = InsertQdq(m, table, {});
  EXPECT_EQ(r.quantized_activations, 3);
  EXPECT_EQ(r.quantized_nodes, 3);  // both Convs and the residual Add
  std::map<std::string, std::string> reasons;
  for (const auto& e : r.excluded) reasons[e.node] = e.reason;
  EXPECT_EQ(reasons.size(), 4u);  // the scale, the shift, the +3 and the hard-swish Mul
  EXPECT_NE(reasons["n7"].find("constant"), std::string::npos);     // s = Mul(c0, k)
  EXPECT_NE(reasons["n11"].find("hard-swish"), std::string::npos);  // h = Mul(a, r6)
}

// A full-size constant (a positional embedding) is a real operand, not a scale or shift: that Add
// stays quantized, while the per-channel shift before it is folded away.
TEST(Qdq, FullSizeConstantOperandStaysQuantized) {
  io::Model m = io::ParseText(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,2] x) => (float[1,2,2] y) {
  shift = Constant <value = float[1,2,1] {0.5, -0.5}> ()
  pos = Constant <value = float[1,2,2] {0.1, 0.2, 0.3, 0.4}> ()
  s = Add (x, shift)
  y = Add (s, pos)
})");
  NameNodes(m);
  CalibrationTable t;
  for (const char* name : {"x", "s"}) ComputeQuantParams(-2, 2, false, t.tensors[name]);
  QdqResult r = InsertQdq(m, t, {});
  EXPECT_EQ(r.quantized_nodes, 1);  // y = Add(s, pos)
  ASSERT_EQ(r.excluded.size(), 1u);
  EXPECT_EQ(r.excluded[0].node, "n2");  // s = Add(x, shift)
}

class BadSamples : public ::testing::Test {
 protected:
  void ExpectBadInput(const std::string& needle) {
    io::Model m = Net();
    QuantizeCalibrateRequest req;
    req.data_dir = tmp_ / "data";
    try {
      QuantizeCalibrate(m, req);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  testing::TempDir tmp_;
};

TEST_F(BadSamples, MissingAndEmptyDirectory) {
  ExpectBadInput("does not exist");
  fs::create_directories(tmp_ / "data");
  ExpectBadInput("has no samples");
}

TEST_F(BadSamples, WrongShapeNamesTheFile) {
  fs::create_directories(tmp_ / "data");
  runtime::WriteNpy(tmp_ / "data" / "0001.x.npy", Tensor(TP::FLOAT, {1, 2, 4, 5}));
  ExpectBadInput("0001.x.npy");
}

TEST_F(BadSamples, WrongDtypeNaNAndUnknownInput) {
  fs::create_directories(tmp_ / "data");
  runtime::WriteNpy(tmp_ / "data" / "0001.x.npy", Tensor(TP::INT32, {1, 2, 4, 4}));
  ExpectBadInput("0001.x.npy");
  Tensor nan(TP::FLOAT, {1, 2, 4, 4});
  nan.mutable_data<float>()[3] = std::nanf("");
  runtime::WriteNpy(tmp_ / "data" / "0001.x.npy", nan);
  ExpectBadInput("NaN");
  runtime::WriteNpy(tmp_ / "data" / "0001.z.npy", nan);
  ExpectBadInput("0001.z.npy");
}

TEST(Accuracy, QuantilesAndThresholdMappingByHand) {
  std::vector<float> v = {4, 1, 3, 2, 5};  // sorted 1..5: p50 = 3, p25 = 2, p1 = 1.04
  auto q = Quantiles(v);
  EXPECT_DOUBLE_EQ(q[3], 3);
  EXPECT_DOUBLE_EQ(q[2], 2);
  EXPECT_NEAR(q[0], 1.04, 1e-6);
  // Float: 2 of 10 above 0.5. Quantized values are shifted up by 0.1: the cut that keeps 2 of
  // 10 above is the third-largest value, 0.6.
  std::vector<float> ref = {0.1f, 0.2f, 0.3f, 0.4f, 0.45f, 0.46f, 0.47f, 0.5f, 0.9f, 0.95f};
  std::vector<float> qdq;
  for (float r : ref) qdq.push_back(r + 0.1f);
  ThresholdMapping t = MapThreshold(ref, qdq, 0.5);
  EXPECT_DOUBLE_EQ(t.float_fraction_above, 0.2);
  EXPECT_FLOAT_EQ(static_cast<float>(t.qdq_threshold), 0.6f);
  EXPECT_DOUBLE_EQ(t.qdq_fraction_above, 0.2);
  // Above 0.5: float {0.9, 0.95}; QDQ at 0.5 adds 0.55, 0.56, 0.57 and 0.6 (IoU 2/6); QDQ at
  // the mapped 0.6 is {1.0, 1.05}, the same two elements (IoU 1).
  EXPECT_DOUBLE_EQ(t.iou, 2.0 / 6);
  EXPECT_DOUBLE_EQ(t.mapped_iou, 1.0);
}

}  // namespace
}  // namespace porttool::quant
