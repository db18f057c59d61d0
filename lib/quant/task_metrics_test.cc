// Task metrics against hand-computed values: DB post-processing of a small map, CTC decoding with
// repeats and blanks, classification agreement on made-up logits, and the errors that name the
// culprit (unknown task or parameter, an output a task cannot read, malformed labels).
#include "lib/quant/task_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lib/quant/accuracy.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::quant {
namespace {

using runtime::Tensor;
using TP = onnx::TensorProto;

Tensor Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(TP::FLOAT, std::move(shape));
  std::copy(values.begin(), values.end(), t.mutable_data<float>());
  return t;
}

template <typename F>
ErrorKind KindOf(F f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no porttool::Error thrown";
  return ErrorKind::kInternal;
}

// A 12 x 16 map: A (rows 2-4, cols 2-6, 0.9) kept; B (rows 8-10, cols 2-5, 0.5) above thresh but
// under box-thresh; C (rows 5-9, cols 12-15, 0.8) touches the right border; a single 0.95 pixel
// under min-size.
std::vector<float> SmallMap() {
  std::vector<float> m(12 * 16, 0.05f);
  auto fill = [&](int r0, int r1, int c0, int c1, float v) {
    for (int r = r0; r <= r1; ++r) {
      for (int c = c0; c <= c1; ++c) m[r * 16 + c] = v;
    }
  };
  fill(2, 4, 2, 6, 0.9f);
  fill(8, 10, 2, 5, 0.5f);
  fill(5, 9, 12, 15, 0.8f);
  fill(11, 11, 10, 10, 0.95f);
  return m;
}

TEST(TaskMetrics, DbBoxesMatchHandComputation) {
  std::vector<float> map = SmallMap();
  auto boxes = DbBoxes(map.data(), 12, 16, TaskSpec{.kind = TaskKind::kDetectDb});
  ASSERT_EQ(boxes.size(), 2u);
  // A: 5 x 3 pixels, d = 15 * 1.5 / 16.
  const double da = 15 * 1.5 / 16;
  EXPECT_DOUBLE_EQ(boxes[0].x0, 2 - da);
  EXPECT_DOUBLE_EQ(boxes[0].y0, 2 - da);
  EXPECT_DOUBLE_EQ(boxes[0].x1, 7 + da);
  EXPECT_DOUBLE_EQ(boxes[0].y1, 5 + da);
  EXPECT_NEAR(boxes[0].score, 0.9, 1e-6);
  // C: 4 x 5 pixels, d = 20 * 1.5 / 18, clipped at the right border.
  const double dc = 20 * 1.5 / 18;
  EXPECT_DOUBLE_EQ(boxes[1].x0, 12 - dc);
  EXPECT_DOUBLE_EQ(boxes[1].y0, 5 - dc);
  EXPECT_DOUBLE_EQ(boxes[1].x1, 16);
  EXPECT_DOUBLE_EQ(boxes[1].y1, 10 + dc);
  // Scaled to a 32 x 24 input.
  auto scaled = DbBoxes(map.data(), 12, 16, TaskSpec{.kind = TaskKind::kDetectDb}, 2, 2);
  ASSERT_EQ(scaled.size(), 2u);
  EXPECT_DOUBLE_EQ(scaled[1].x1, 32);
  EXPECT_DOUBLE_EQ(scaled[0].y1, 2 * (5 + da));
  // A lower box-thresh keeps B as well.
  TaskSpec loose{.kind = TaskKind::kDetectDb, .box_thresh = 0.4};
  EXPECT_EQ(DbBoxes(map.data(), 12, 16, loose).size(), 3u);
}

TEST(TaskMetrics, DetectionHmeanAgainstFloatAndGroundTruth) {
  std::vector<float> f = SmallMap(), q = SmallMap();
  // The quantized map loses box C and gains a box far from everything.
  for (int r = 5; r <= 9; ++r) {
    for (int c = 12; c <= 15; ++c) q[r * 16 + c] = 0.1f;
  }
  for (int c = 9; c <= 13; ++c) q[0 * 16 + c] = q[1 * 16 + c] = q[2 * 16 + c] = 0.9f;
  TaskSpec spec = ParseTask("detect-db");
  nlohmann::json gt = nlohmann::json::parse("[[1, 1, 8, 6], [100, 100, 110, 110]]");
  TaskTally t = ScoreSample(spec, "maps", "s0", Floats({1, 1, 12, 16}, f),
                            Floats({1, 1, 12, 16}, q), &gt, {12, 16});
  TaskResult r = Summarize(spec, "maps", t);
  // Float: A, C. Quantized: A, the new box. One match of two each side.
  EXPECT_DOUBLE_EQ(*r.Get("precision"), 0.5);
  EXPECT_DOUBLE_EQ(*r.Get("recall"), 0.5);
  EXPECT_DOUBLE_EQ(*r.Get("hmean"), 0.5);
  // Ground truth: A's box matches [1,1,8,6] in both; the second GT box is found by neither.
  EXPECT_DOUBLE_EQ(*r.Get("float_gt_hmean"), 0.5);
  EXPECT_DOUBLE_EQ(*r.Get("qdq_gt_hmean"), 0.5);
  EXPECT_NE(r.Describe().find("hmean 0.5000"), std::string::npos) << r.Describe();
}

// A metric with nothing to measure is undefined, never a perfect 1.0: two empty maps give no box
// in either model; a quantized map that lost every box scores 0, not undefined.
TEST(TaskMetrics, NothingToMeasureIsUndefinedAndLosingEveryBoxIsZero) {
  TaskSpec spec = ParseTask("detect-db");
  std::vector<float> empty(12 * 16, 0.0f), f = SmallMap();
  TaskResult none = Summarize(spec, "maps",
                              ScoreSample(spec, "maps", "s0", Floats({1, 1, 12, 16}, empty),
                                          Floats({1, 1, 12, 16}, empty), nullptr, {12, 16}));
  ASSERT_TRUE(none.Get("hmean"));
  EXPECT_TRUE(std::isnan(*none.Get("hmean")));
  EXPECT_NE(none.Describe().find("hmean undefined"), std::string::npos) << none.Describe();
  EXPECT_TRUE(TaskJson(none)["metrics"]["hmean"].is_null());
  AccuracyReport report;
  report.tasks.push_back(none);
  EXPECT_FALSE(report.Metric("hmean")) << "an undefined figure is not a value";

  TaskResult lost = Summarize(spec, "maps",
                              ScoreSample(spec, "maps", "s0", Floats({1, 1, 12, 16}, f),
                                          Floats({1, 1, 12, 16}, empty), nullptr, {12, 16}));
  EXPECT_DOUBLE_EQ(*lost.Get("hmean"), 0.0);
  EXPECT_DOUBLE_EQ(*lost.Get("recall"), 0.0);
  report.tasks.push_back(lost);
  EXPECT_DOUBLE_EQ(*report.Metric("hmean"), 0.0);

  TaskSpec ctc = ParseTask("ctc");
  TaskResult no_rows = Summarize(ctc, "seq", TaskTally{});
  EXPECT_TRUE(std::isnan(*no_rows.Get("seq")));
  EXPECT_TRUE(std::isnan(*no_rows.Get("char")));
}

TEST(TaskMetrics, MatchingIsOneToOneAtHalfIou) {
  std::vector<Box> ref = {{0, 0, 10, 10}, {20, 0, 30, 10}};
  std::vector<Box> found = {{0, 0, 10, 10}, {1, 0, 11, 10}, {24, 0, 34, 10}};
  // found[1] overlaps ref[0] at 0.82 but ref[0] is taken by the exact box; found[2] is at 6/14.
  EXPECT_EQ(MatchBoxes(found, ref), 1u);
  EXPECT_NEAR(Iou(found[2], ref[1]), 6.0 / 14.0, 1e-12);
  EXPECT_EQ(MatchBoxes(found, ref, 0.4), 2u);
}

TEST(TaskMetrics, CtcGreedyMergesRepeatsAndDropsBlanks) {
  // argmax per step: 1 1 0 1 2 2 0 -> 1 1 2.
  const int best[] = {1, 1, 0, 1, 2, 2, 0};
  std::vector<float> scores(7 * 4, 0.f);
  for (int t = 0; t < 7; ++t) scores[t * 4 + best[t]] = 1.f;
  EXPECT_EQ(CtcGreedy(scores.data(), 7, 4, 0), (std::vector<int>{1, 1, 2}));
  // With blank 2 instead: 1 0 1 0 (0 is a class then).
  EXPECT_EQ(CtcGreedy(scores.data(), 7, 4, 2), (std::vector<int>{1, 0, 1, 0}));
  EXPECT_EQ(EditDistance({1, 2, 3}, {1, 3}), 1u);
  EXPECT_EQ(EditDistance({}, {1, 2}), 2u);
  EXPECT_EQ(EditDistance({'k', 'i', 't', 't', 'e', 'n'}, {'s', 'i', 't', 't', 'i', 'n', 'g'}), 3u);
}

TEST(TaskMetrics, CtcSequenceAndCharacterAgreement) {
  // Two sequences over 3 steps, 3 classes: the first decodes alike, the second 1 2 vs 1.
  std::vector<float> f = {0, 1, 0, 0, 1, 0, 1, 0, 0, /**/ 0, 1, 0, 1, 0, 0, 0, 0, 1};
  std::vector<float> q = {0, 1, 0, 0, 1, 0, 1, 0, 0, /**/ 0, 1, 0, 1, 0, 0, 1, 0, 0};
  TaskSpec spec = ParseTask("ctc:blank=0");
  TaskResult r = Summarize(
      spec, "y",
      ScoreSample(spec, "y", "s", Floats({2, 3, 3}, f), Floats({2, 3, 3}, q), nullptr, {0, 0}));
  EXPECT_DOUBLE_EQ(*r.Get("seq"), 0.5);
  EXPECT_DOUBLE_EQ(*r.Get("char"), 1.0 - 1.0 / 3.0);  // one edit over 1 + 2 float characters
}

TEST(TaskMetrics, ClassifyAgreementOnMadeUpLogits) {
  // Row 0 agrees; row 1's float top-1 (0) is the quantized second; row 2's float top-1 (5) is the
  // quantized last of six.
  std::vector<float> f = {0, 1, 5, 2, 0, 0, /**/ 4, 3, 0, 0, 0, 0, /**/ 0, 1, 2, 3, 4, 9};
  std::vector<float> q = {0, 1, 5, 2, 0, 0, /**/ 3, 4, 0, 0, 0, 0, /**/ 5, 4, 3, 2, 1, 0};
  TaskSpec spec = ParseTask("classify");
  nlohmann::json labels = {2, 1, 5};
  TaskResult r =
      Summarize(spec, "p",
                ScoreSample(spec, "p", "s", Floats({3, 6}, f), Floats({3, 6}, q), &labels, {0, 0}));
  EXPECT_DOUBLE_EQ(*r.Get("top1"), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(*r.Get("top5"), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*r.Get("float_accuracy"), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*r.Get("qdq_accuracy"), 2.0 / 3.0);
  // Rows that are distributions are taken as they are: KL([.5, .5] || [.25, .75]).
  TaskResult kl = Summarize(spec, "p",
                            ScoreSample(spec, "p", "s", Floats({1, 2}, {0.5f, 0.5f}),
                                        Floats({1, 2}, {0.25f, 0.75f}), nullptr, {0, 0}));
  EXPECT_NEAR(*kl.Get("mean_kl"), 0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75), 1e-6);
  EXPECT_DOUBLE_EQ(*kl.Get("top1"), 0.0);
}

TEST(TaskMetrics, TaskSpecsParseAndRejectWithTheCulprit) {
  TaskSpec d = ParseTask("detect-db:thresh=0.2,box-thresh=0.5,unclip=2,min-size=4");
  EXPECT_EQ(d.kind, TaskKind::kDetectDb);
  EXPECT_DOUBLE_EQ(d.thresh, 0.2);
  EXPECT_DOUBLE_EQ(d.unclip, 2);
  EXPECT_EQ(d.min_size, 4);
  EXPECT_EQ(ParseTask(d.Text()).Text(), d.Text());
  TaskAssignment a = ParseTasks({"ctc", "name:with:colons:classify"});
  EXPECT_EQ(a.For("other").kind, TaskKind::kCtc);
  EXPECT_EQ(a.For("name:with:colons").kind, TaskKind::kClassify);
  EXPECT_EQ(ParseTasks({}).For("x").kind, TaskKind::kRegress);
  std::string msg;
  EXPECT_EQ(KindOf([] { ParseTask("segment"); }, &msg), ErrorKind::kUsage);
  EXPECT_NE(msg.find("'segment'"), std::string::npos) << msg;
  EXPECT_EQ(KindOf([] { ParseTask("detect-db:thresh=2"); }, &msg), ErrorKind::kUsage);
  EXPECT_NE(msg.find("thresh"), std::string::npos) << msg;
  EXPECT_EQ(KindOf([] { ParseTask("ctc:beam=4"); }, &msg), ErrorKind::kUsage);
  EXPECT_NE(msg.find("beam"), std::string::npos) << msg;
  EXPECT_EQ(KindOf([] { ParseTasks({"out:segment"}); }, &msg), ErrorKind::kUsage);
  EXPECT_NE(msg.find("out:segment"), std::string::npos) << msg;
}

TEST(TaskMetrics, OutputsAndLabelsATaskCannotReadAreBadInput) {
  std::string msg;
  Tensor map = Floats({1, 1, 2, 2}, {0, 1, 0, 1});
  EXPECT_EQ(KindOf(
                [&] {
                  ScoreSample(ParseTask("ctc"), "maps", "s", map, map, nullptr, {0, 0});
                },
                &msg),
            ErrorKind::kBadInput);
  EXPECT_NE(msg.find("'maps'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[N, T, C]"), std::string::npos) << msg;
  nlohmann::json bad_box = nlohmann::json::parse("[[0, 0, 1]]");
  EXPECT_EQ(KindOf(
                [&] {
                  ScoreSample(ParseTask("detect-db"), "maps", "s7", map, map, &bad_box, {2, 2});
                },
                &msg),
            ErrorKind::kBadInput);
  EXPECT_NE(msg.find("'s7'"), std::string::npos) << msg;
  nlohmann::json bad_class = 9;
  Tensor logits = Floats({1, 2}, {0, 1});
  EXPECT_EQ(KindOf([&] {
              ScoreSample(ParseTask("classify"), "p", "s3", logits, logits, &bad_class, {0, 0});
            }),
            ErrorKind::kBadInput);
  testing::TempDir dir;
  testing::WriteFile(dir / "labels.json", "{\"a\": [[0, 0, 1, 1]]");
  EXPECT_EQ(KindOf([&] { LoadLabels(dir / "labels.json"); }, &msg), ErrorKind::kBadInput);
  EXPECT_NE(msg.find("labels.json"), std::string::npos) << msg;
}

}  // namespace
}  // namespace porttool::quant
