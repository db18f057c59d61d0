// Task metrics: judge a quantized model by what its outputs are for, not by their SQNR. A
// detector's near-binary probability map can lose 10 dB on a few text-edge pixels and still find
// every box; a recognizer can keep 98 % of its characters and read 20 % of its lines wrong. Each
// output gets a task (`--task`), scored per sample on the float and the quantized model's
// outputs, summed over samples in sample order, and summarised:
//   detect-db  DB post-processing of a probability map into boxes (below), then precision,
//              recall and hmean of the quantized boxes against the float ones (IoU >= 0.5,
//              one-to-one, greedy by IoU); with labels, each model's against the ground truth.
//   classify   rows of the last axis are class scores (softmax applied unless a row already is a
//              distribution): top-1 agreement, top-5 agreement (the float top-1 is among the
//              quantized top-5), mean KL(float || quantized); with labels, each model's accuracy.
//   ctc        [N, T, C]: greedy decoding (argmax per step, repeats merged, blanks dropped);
//              the share of sequences equal to the float model's, and character agreement
//              1 - sum(edit distance) / sum(float sequence length).
//   regress    SQNR, cosine and max abs error only (the default; always reported).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/runtime/tensor.h"

namespace porttool::quant {

enum class TaskKind { kRegress, kDetectDb, kClassify, kCtc };

struct TaskSpec {
  TaskKind kind = TaskKind::kRegress;
  // detect-db (PaddleOCR DBPostProcess defaults).
  double thresh = 0.3, box_thresh = 0.6, unclip = 1.5;
  int min_size = 3;
  int blank = 0;             // ctc
  std::string Text() const;  // canonical spelling with every parameter
};

// Parses one task: "detect-db[:thresh=0.3,box-thresh=0.6,unclip=1.5,min-size=3]", "classify",
// "ctc[:blank=0]", "regress". Error(kUsage) naming `spec` for an unknown task or parameter or a
// value out of range.
TaskSpec ParseTask(const std::string& spec);

// The --task values: "SPEC" for every output, "OUTPUT:SPEC" for one (the first ':' followed by a
// task name separates them, so output names may hold ':'). Error(kUsage) as ParseTask.
struct TaskAssignment {
  std::optional<TaskSpec> all;
  std::map<std::string, TaskSpec> per_output;
  bool empty() const { return !all && per_output.empty(); }
  // The task of `output` (regress when none was given).
  TaskSpec For(const std::string& output) const;
};
TaskAssignment ParseTasks(const std::vector<std::string>& specs);

// Ground truth per sample id: boxes [[x0, y0, x1, y1], ...] in model-input pixels (detect-db) or
// a class index, or one per batch row (classify).
using Labels = std::map<std::string, nlohmann::json>;
// Error(kBadInput) naming the file for unreadable or malformed JSON (an object of sample ids).
Labels LoadLabels(const std::filesystem::path& path);

// An axis-aligned box in model-input pixels, with its DB score.
struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0, score = 0;
};

// DB post-processing of one h x w probability map: pixels above `thresh`, 8-connected
// components; a component whose bounding box (pixel extents) has a side under min_size is
// dropped; its score is the mean probability over that bounding box, dropped under box_thresh;
// the box grows by d = area * unclip / perimeter on each side, a side under min_size + 2 is
// dropped; coordinates are scaled by (scale_x, scale_y) to input pixels and clipped to
// [0, w * scale_x] x [0, h * scale_y]. Boxes come in raster order of their first pixel.
std::vector<Box> DbBoxes(const float* prob, int64_t h, int64_t w, const TaskSpec& spec,
                         double scale_x = 1, double scale_y = 1);

double Iou(const Box& a, const Box& b);
// One-to-one matches at IoU >= min_iou, taken greedily from the highest IoU down.
size_t MatchBoxes(const std::vector<Box>& found, const std::vector<Box>& reference,
                  double min_iou = 0.5);

// Greedy CTC decoding of t steps of c scores each.
std::vector<int> CtcGreedy(const float* scores, int64_t t, int64_t c, int blank);
size_t EditDistance(const std::vector<int>& a, const std::vector<int>& b);

// Sums over samples (merged in sample order: the same for any thread count).
struct TaskTally {
  size_t items = 0;  // maps, rows or sequences
  size_t float_boxes = 0, qdq_boxes = 0, matched = 0;
  size_t labelled = 0, gt_boxes = 0, float_gt_matched = 0, qdq_gt_matched = 0;
  size_t float_boxes_labelled = 0, qdq_boxes_labelled = 0;  // boxes on labelled maps
  size_t top1 = 0, top5 = 0, float_correct = 0, qdq_correct = 0;
  double kl = 0;
  size_t seq_equal = 0, edits = 0, float_chars = 0;
  void Merge(const TaskTally& o);
};

// Height and width of an image input (NCHW when dim 1 looks like channels, else NHWC; [C, H, W]
// for rank 3), what detection maps are scaled to; 0 x 0 for anything else.
std::pair<int64_t, int64_t> ImageHw(const runtime::Tensor& input);

// Scores one sample's output `name` (float value `f`, quantized `q`, same shape). `label` is the
// sample's ground truth or null; input_hw the model input's height and width (maps smaller than
// the input are scaled up to it). Error(kBadInput) naming the output or the sample for an output
// the task cannot read (ctc not [N, T, C]) or a malformed label.
TaskTally ScoreSample(const TaskSpec& spec, const std::string& name, const std::string& sample,
                      const runtime::Tensor& f, const runtime::Tensor& q,
                      const nlohmann::json* label, std::pair<int64_t, int64_t> input_hw);

// A task's figures for one output, in report order: detect-db precision, recall, hmean (+
// float_gt_hmean, qdq_gt_hmean with labels); classify top1, top5, mean_kl (+ float_accuracy,
// qdq_accuracy); ctc seq, char. Counts (boxes, items) ride along.
struct TaskResult {
  std::string output, task;  // task: TaskSpec::Text()
  TaskKind kind = TaskKind::kRegress;
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<std::pair<std::string, size_t>> counts;
  std::optional<double> Get(const std::string& metric) const;
  std::string Describe() const;  // one line for the text report
};
TaskResult Summarize(const TaskSpec& spec, const std::string& output, const TaskTally& tally);
// {"output", "task", "metrics": {name: value}, "counts": {name: n}} (non-finite values null).
nlohmann::json TaskJson(const TaskResult& result);

}  // namespace porttool::quant
