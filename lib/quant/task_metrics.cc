#include "lib/quant/task_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "lib/io/input_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::quant {
namespace {

using TP = onnx::TensorProto;

const std::map<std::string, TaskKind>& TaskNames() {
  static const std::map<std::string, TaskKind> names = {{"regress", TaskKind::kRegress},
                                                        {"detect-db", TaskKind::kDetectDb},
                                                        {"classify", TaskKind::kClassify},
                                                        {"ctc", TaskKind::kCtc}};
  return names;
}

std::string KindName(TaskKind kind) {
  for (const auto& [name, k] : TaskNames()) {
    if (k == kind) return name;
  }
  return "regress";
}

double ParseNumber(const std::string& spec, const std::string& key, const std::string& text,
                   double lo, double hi) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= lo && v <= hi)) {
    ThrowUsage("--task '{}': {} takes a number from {} to {}, got '{}'", spec, key, lo, hi, text);
  }
  return v;
}

// The name before the first ':' (or all of `s`) when it is a task name.
bool StartsWithTask(const std::string& s) {
  return TaskNames().count(s.substr(0, s.find(':'))) > 0;
}

}  // namespace

std::string TaskSpec::Text() const {
  switch (kind) {
    case TaskKind::kDetectDb:
      return fmt::format("detect-db:thresh={},box-thresh={},unclip={},min-size={}", thresh,
                         box_thresh, unclip, min_size);
    case TaskKind::kCtc:
      return fmt::format("ctc:blank={}", blank);
    default:
      return KindName(kind);
  }
}

TaskSpec ParseTask(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  auto it = TaskNames().find(name);
  if (it == TaskNames().end()) {
    ThrowUsage("--task '{}': unknown task '{}'; available: detect-db, classify, ctc, regress", spec,
               name);
  }
  TaskSpec t;
  t.kind = it->second;
  if (colon == std::string::npos) return t;
  for (const auto& param : util::Split(spec.substr(colon + 1), ',')) {
    const size_t eq = param.find('=');
    const std::string key = param.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : param.substr(eq + 1);
    if (t.kind == TaskKind::kDetectDb && key == "thresh") {
      t.thresh = ParseNumber(spec, key, value, 0, 1);
    } else if (t.kind == TaskKind::kDetectDb && key == "box-thresh") {
      t.box_thresh = ParseNumber(spec, key, value, 0, 1);
    } else if (t.kind == TaskKind::kDetectDb && key == "unclip") {
      t.unclip = ParseNumber(spec, key, value, 0, 100);
    } else if (t.kind == TaskKind::kDetectDb && key == "min-size") {
      t.min_size = static_cast<int>(ParseNumber(spec, key, value, 0, 100000));
    } else if (t.kind == TaskKind::kCtc && key == "blank") {
      t.blank = static_cast<int>(ParseNumber(spec, key, value, 0, 1e9));
    } else {
      const char* known = t.kind == TaskKind::kDetectDb ? "thresh, box-thresh, unclip, min-size"
                          : t.kind == TaskKind::kCtc    ? "blank"
                                                        : "none";
      ThrowUsage("--task '{}': unknown parameter '{}' for {}; parameters: {}", spec, param, name,
                 known);
    }
  }
  return t;
}

TaskSpec TaskAssignment::For(const std::string& output) const {
  auto it = per_output.find(output);
  if (it != per_output.end()) return it->second;
  return all ? *all : TaskSpec{};
}

TaskAssignment ParseTasks(const std::vector<std::string>& specs) {
  TaskAssignment a;
  for (const auto& s : specs) {
    if (StartsWithTask(s)) {
      a.all = ParseTask(s);
      continue;
    }
    size_t at = std::string::npos;
    for (size_t p = s.find(':'); p != std::string::npos; p = s.find(':', p + 1)) {
      if (StartsWithTask(s.substr(p + 1))) {
        at = p;
        break;
      }
    }
    if (at == std::string::npos) {
      ThrowUsage(
          "--task '{}': unknown task; expected TASK[:PARAMS] or OUTPUT:TASK[:PARAMS] with TASK "
          "one of detect-db, classify, ctc, regress",
          s);
    }
    a.per_output[s.substr(0, at)] = ParseTask(s.substr(at + 1));
  }
  return a;
}

Labels LoadLabels(const std::filesystem::path& path) {
  std::istringstream in(io::ReadInputFile(path, "labels file"));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    ThrowBadInput("labels file '{}' is not a JSON object of sample ids", path.string());
  }
  Labels labels;
  for (auto& [id, value] : j.items()) labels[id] = value;
  return labels;
}

std::vector<Box> DbBoxes(const float* prob, int64_t h, int64_t w, const TaskSpec& spec,
                         double scale_x, double scale_y) {
  std::vector<Box> boxes;
  std::vector<uint8_t> seen(static_cast<size_t>(h * w), 0);
  std::vector<int64_t> stack;
  for (int64_t start = 0; start < h * w; ++start) {
    if (seen[start] || !(prob[start] > spec.thresh)) continue;
    int64_t x0 = w, y0 = h, x1 = -1, y1 = -1;
    seen[start] = 1;
    stack.assign(1, start);
    while (!stack.empty()) {
      const int64_t p = stack.back();
      stack.pop_back();
      const int64_t y = p / w, x = p % w;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          const int64_t ny = y + dy, nx = x + dx;
          if (ny < 0 || ny >= h || nx < 0 || nx >= w) continue;
          const int64_t q = ny * w + nx;
          if (!seen[q] && prob[q] > spec.thresh) {
            seen[q] = 1;
            stack.push_back(q);
          }
        }
      }
    }
    const double bw = static_cast<double>(x1 - x0 + 1), bh = static_cast<double>(y1 - y0 + 1);
    if (std::min(bw, bh) < spec.min_size) continue;
    double sum = 0;
    for (int64_t y = y0; y <= y1; ++y) {
      for (int64_t x = x0; x <= x1; ++x) sum += prob[y * w + x];
    }
    const double score = sum / (bw * bh);
    if (score < spec.box_thresh) continue;
    const double d = bw * bh * spec.unclip / (2 * (bw + bh));
    if (std::min(bw, bh) + 2 * d < spec.min_size + 2) continue;
    auto clip = [](double v, double hi) { return std::clamp(v, 0.0, hi); };
    const double mw = static_cast<double>(w) * scale_x, mh = static_cast<double>(h) * scale_y;
    boxes.push_back({clip((static_cast<double>(x0) - d) * scale_x, mw),
                     clip((static_cast<double>(y0) - d) * scale_y, mh),
                     clip((static_cast<double>(x1 + 1) + d) * scale_x, mw),
                     clip((static_cast<double>(y1 + 1) + d) * scale_y, mh), score});
  }
  return boxes;
}

double Iou(const Box& a, const Box& b) {
  const double iw = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double ih = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (iw <= 0 || ih <= 0) return 0;
  const double inter = iw * ih;
  const double area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  return inter / (area_a + area_b - inter);
}

size_t MatchBoxes(const std::vector<Box>& found, const std::vector<Box>& reference,
                  double min_iou) {
  struct Pair {
    double iou;
    size_t f, r;
  };
  std::vector<Pair> pairs;
  for (size_t i = 0; i < found.size(); ++i) {
    for (size_t j = 0; j < reference.size(); ++j) {
      const double v = Iou(found[i], reference[j]);
      if (v >= min_iou) pairs.push_back({v, i, j});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const Pair& a, const Pair& b) { return a.iou > b.iou; });
  std::vector<bool> used_f(found.size()), used_r(reference.size());
  size_t matched = 0;
  for (const Pair& p : pairs) {
    if (used_f[p.f] || used_r[p.r]) continue;
    used_f[p.f] = used_r[p.r] = true;
    ++matched;
  }
  return matched;
}

std::vector<int> CtcGreedy(const float* scores, int64_t t, int64_t c, int blank) {
  std::vector<int> out;
  int previous = -1;
  for (int64_t s = 0; s < t; ++s) {
    const float* row = scores + s * c;
    const int best = static_cast<int>(std::max_element(row, row + c) - row);
    if (best != previous && best != blank) out.push_back(best);
    previous = best;
  }
  return out;
}

size_t EditDistance(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void TaskTally::Merge(const TaskTally& o) {
  items += o.items;
  float_boxes += o.float_boxes, qdq_boxes += o.qdq_boxes, matched += o.matched;
  labelled += o.labelled, gt_boxes += o.gt_boxes;
  float_boxes_labelled += o.float_boxes_labelled, qdq_boxes_labelled += o.qdq_boxes_labelled;
  float_gt_matched += o.float_gt_matched, qdq_gt_matched += o.qdq_gt_matched;
  top1 += o.top1, top5 += o.top5, float_correct += o.float_correct, qdq_correct += o.qdq_correct;
  kl += o.kl;
  seq_equal += o.seq_equal, edits += o.edits, float_chars += o.float_chars;
}

namespace {

std::vector<Box> LabelBoxes(const nlohmann::json& label, const std::string& sample) {
  std::vector<Box> boxes;
  if (!label.is_array()) {
    ThrowBadInput("labels of sample '{}': expected [[x0, y0, x1, y1], ...], got {}", sample,
                  label.dump());
  }
  for (const auto& b : label) {
    bool ok = b.is_array() && b.size() == 4;
    for (size_t i = 0; ok && i < 4; ++i) ok = b[i].is_number();
    if (ok) ok = b[2].get<double>() > b[0].get<double>() && b[3].get<double>() > b[1].get<double>();
    if (!ok) {
      ThrowBadInput("labels of sample '{}': box {} is not [x0, y0, x1, y1] with x1 > x0, y1 > y0",
                    sample, b.dump());
    }
    boxes.push_back(
        {b[0].get<double>(), b[1].get<double>(), b[2].get<double>(), b[3].get<double>(), 1});
  }
  return boxes;
}

TaskTally ScoreDetection(const TaskSpec& spec, const std::string& name, const std::string& sample,
                         const runtime::Tensor& f, const runtime::Tensor& q,
                         const nlohmann::json* label, std::pair<int64_t, int64_t> input_hw) {
  if (f.rank() < 2) {
    ThrowBadInput("--task detect-db on output '{}' of shape {}: needs a [.., H, W] map", name,
                  f.DebugString());
  }
  const int64_t h = f.dim(f.rank() - 2), w = f.dim(f.rank() - 1);
  const int64_t maps = h * w == 0 ? 0 : f.size() / (h * w);
  const double sy = input_hw.first > 0 ? static_cast<double>(input_hw.first) / h : 1;
  const double sx = input_hw.second > 0 ? static_cast<double>(input_hw.second) / w : 1;
  if (label && maps != 1) {
    ThrowBadInput("labels of sample '{}': output '{}' holds {} maps; boxes label one map", sample,
                  name, maps);
  }
  TaskTally t;
  for (int64_t m = 0; m < maps; ++m) {
    auto fb = DbBoxes(f.data<float>() + m * h * w, h, w, spec, sx, sy);
    auto qb = DbBoxes(q.data<float>() + m * h * w, h, w, spec, sx, sy);
    t.items += 1;
    t.float_boxes += fb.size(), t.qdq_boxes += qb.size();
    t.matched += MatchBoxes(qb, fb);
    if (!label) continue;
    auto gt = LabelBoxes(*label, sample);
    t.labelled += 1, t.gt_boxes += gt.size();
    t.float_boxes_labelled += fb.size(), t.qdq_boxes_labelled += qb.size();
    t.float_gt_matched += MatchBoxes(fb, gt), t.qdq_gt_matched += MatchBoxes(qb, gt);
  }
  return t;
}

// Probabilities of one row: the row itself when it is a distribution, else its softmax.
std::vector<double> Probabilities(const float* row, int64_t c) {
  std::vector<double> p(row, row + c);
  double sum = 0;
  bool distribution = true;
  for (double v : p) distribution &= v >= 0, sum += v;
  if (distribution && std::fabs(sum - 1) < 1e-3) return p;
  const double top = *std::max_element(p.begin(), p.end());
  sum = 0;
  for (double& v : p) sum += (v = std::exp(v - top));
  for (double& v : p) v /= sum;
  return p;
}

size_t ArgMax(const std::vector<double>& p) {
  return static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

std::vector<int64_t> ClassLabels(const nlohmann::json& label, const std::string& sample,
                                 int64_t rows, int64_t classes) {
  std::vector<int64_t> out;
  if (label.is_number_integer()) out.push_back(label.get<int64_t>());
  if (label.is_array()) {
    for (const auto& v : label) out.push_back(v.is_number_integer() ? v.get<int64_t>() : -1);
  }
  bool ok = static_cast<int64_t>(out.size()) == rows;
  for (int64_t v : out) ok &= v >= 0 && v < classes;
  if (!ok) {
    ThrowBadInput(
        "labels of sample '{}': expected {} class index(es) from 0 to {} (one per row), got {}",
        sample, rows, classes - 1, label.dump());
  }
  return out;
}

TaskTally ScoreClasses(const std::string& name, const std::string& sample, const runtime::Tensor& f,
                       const runtime::Tensor& q, const nlohmann::json* label) {
  if (f.rank() < 1 || f.dim(f.rank() - 1) < 1) {
    ThrowBadInput("--task classify on output '{}' of shape {}: needs class scores on the last axis",
                  name, f.DebugString());
  }
  const int64_t c = f.dim(f.rank() - 1), rows = f.size() / c;
  std::vector<int64_t> truth;
  if (label) truth = ClassLabels(*label, sample, rows, c);
  TaskTally t;
  for (int64_t r = 0; r < rows; ++r) {
    auto pf = Probabilities(f.data<float>() + r * c, c);
    auto pq = Probabilities(q.data<float>() + r * c, c);
    const size_t top_f = ArgMax(pf), top_q = ArgMax(pq);
    size_t above = 0;  // quantized scores strictly above the float top-1 class's
    for (double v : pq) above += v > pq[top_f];
    t.items += 1;
    t.top1 += top_f == top_q;
    t.top5 += above < 5;
    for (int64_t k = 0; k < c; ++k) {
      if (pf[k] > 0) t.kl += pf[k] * std::log(pf[k] / std::max(pq[k], 1e-12));
    }
    if (!label) continue;
    t.labelled += 1;
    t.float_correct += static_cast<int64_t>(top_f) == truth[r];
    t.qdq_correct += static_cast<int64_t>(top_q) == truth[r];
  }
  return t;
}

TaskTally ScoreSequences(const TaskSpec& spec, const std::string& name, const runtime::Tensor& f,
                         const runtime::Tensor& q) {
  if (f.rank() != 3) {
    ThrowBadInput("--task ctc on output '{}' of shape {}: needs [N, T, C] scores", name,
                  f.DebugString());
  }
  const int64_t n = f.dim(0), steps = f.dim(1), c = f.dim(2);
  if (spec.blank >= c) {
    ThrowBadInput("--task ctc: blank {} is not a class of output '{}' ({} classes)", spec.blank,
                  name, c);
  }
  TaskTally t;
  for (int64_t i = 0; i < n; ++i) {
    auto sf = CtcGreedy(f.data<float>() + i * steps * c, steps, c, spec.blank);
    auto sq = CtcGreedy(q.data<float>() + i * steps * c, steps, c, spec.blank);
    t.items += 1;
    t.seq_equal += sf == sq;
    t.edits += EditDistance(sf, sq);
    t.float_chars += sf.size();
  }
  return t;
}

// A share of nothing is undefined (NaN), not perfect: no box in either model, no row, no label
// leaves nothing to measure, and a 1.0 there read as a pass.
double Ratio(size_t num, size_t den) {
  return den == 0 ? NAN : static_cast<double>(num) / static_cast<double>(den);
}

// Undefined only when both are: a side that found nothing while the other found something has
// the other side's share at 0 (Ratio's num is 0 there), so the mean is 0.
double Hmean(double p, double r) {
  if (std::isnan(p) && std::isnan(r)) return NAN;
  if (std::isnan(p) || std::isnan(r)) return 0;
  return p + r == 0 ? 0 : 2 * p * r / (p + r);
}

// "0.9500", or "undefined" for a figure with nothing to measure.
std::string Figure(std::optional<double> v) {
  return v && !std::isnan(*v) ? fmt::format("{:.4f}", *v) : "undefined";
}

}  // namespace

std::pair<int64_t, int64_t> ImageHw(const runtime::Tensor& t) {
  if (t.rank() == 4) {
    return t.dim(1) <= 4 ? std::pair{t.dim(2), t.dim(3)} : std::pair{t.dim(1), t.dim(2)};
  }
  if (t.rank() == 3) return {t.dim(1), t.dim(2)};
  return {0, 0};
}

TaskTally ScoreSample(const TaskSpec& spec, const std::string& name, const std::string& sample,
                      const runtime::Tensor& f, const runtime::Tensor& q,
                      const nlohmann::json* label, std::pair<int64_t, int64_t> input_hw) {
  if (spec.kind == TaskKind::kRegress) return {};
  if (f.dtype() != TP::FLOAT || q.dtype() != TP::FLOAT || f.shape() != q.shape()) {
    ThrowBadInput("--task {} on output '{}': needs float outputs of one shape, got {} and {}",
                  spec.Text(), name, f.DebugString(), q.DebugString());
  }
  switch (spec.kind) {
    case TaskKind::kDetectDb:
      return ScoreDetection(spec, name, sample, f, q, label, input_hw);
    case TaskKind::kClassify:
      return ScoreClasses(name, sample, f, q, label);
    default:
      return ScoreSequences(spec, name, f, q);
  }
}

std::optional<double> TaskResult::Get(const std::string& metric) const {
  for (const auto& [name, value] : metrics) {
    if (name == metric) return value;
  }
  return std::nullopt;
}

TaskResult Summarize(const TaskSpec& spec, const std::string& output, const TaskTally& t) {
  TaskResult r{output, spec.Text(), spec.kind, {}, {}};
  switch (spec.kind) {
    case TaskKind::kDetectDb: {
      const double p = Ratio(t.matched, t.qdq_boxes), rc = Ratio(t.matched, t.float_boxes);
      r.metrics = {{"precision", p}, {"recall", rc}, {"hmean", Hmean(p, rc)}};
      r.counts = {{"maps", t.items}, {"float_boxes", t.float_boxes}, {"qdq_boxes", t.qdq_boxes}};
      if (t.labelled > 0) {
        const double fh = Hmean(Ratio(t.float_gt_matched, t.float_boxes_labelled),
                                Ratio(t.float_gt_matched, t.gt_boxes));
        const double qh = Hmean(Ratio(t.qdq_gt_matched, t.qdq_boxes_labelled),
                                Ratio(t.qdq_gt_matched, t.gt_boxes));
        r.metrics.push_back({"float_gt_hmean", fh});
        r.metrics.push_back({"qdq_gt_hmean", qh});
        r.counts.push_back({"labelled", t.labelled});
        r.counts.push_back({"gt_boxes", t.gt_boxes});
      }
      break;
    }
    case TaskKind::kClassify:
      r.metrics = {{"top1", Ratio(t.top1, t.items)},
                   {"top5", Ratio(t.top5, t.items)},
                   {"mean_kl", t.items ? t.kl / static_cast<double>(t.items) : NAN}};
      r.counts = {{"rows", t.items}};
      if (t.labelled > 0) {
        r.metrics.push_back({"float_accuracy", Ratio(t.float_correct, t.labelled)});
        r.metrics.push_back({"qdq_accuracy", Ratio(t.qdq_correct, t.labelled)});
        r.counts.push_back({"labelled", t.labelled});
      }
      break;
    case TaskKind::kCtc:
      r.metrics = {{"seq", Ratio(t.seq_equal, t.items)},
                   {"char", t.float_chars == 0 ? (t.edits == 0 ? NAN : 0.0)
                                               : 1.0 - static_cast<double>(t.edits) /
                                                           static_cast<double>(t.float_chars)}};
      r.counts = {{"sequences", t.items}, {"float_chars", t.float_chars}};
      break;
    default:
      break;
  }
  return r;
}

std::string TaskResult::Describe() const {
  auto m = [&](const char* name) { return Figure(Get(name)); };
  auto n = [&](const char* name) {
    for (const auto& [k, v] : counts) {
      if (k == name) return v;
    }
    return size_t{0};
  };
  switch (kind) {
    case TaskKind::kDetectDb: {
      std::string s = fmt::format(
          "boxes vs float: hmean {} (precision {}, recall {}; {} float boxes, {} "
          "quantized, {} maps)",
          m("hmean"), m("precision"), m("recall"), n("float_boxes"), n("qdq_boxes"), n("maps"));
      if (Get("float_gt_hmean")) {
        s += fmt::format("; vs ground truth ({} boxes on {} maps): float hmean {}, quantized {}",
                         n("gt_boxes"), n("labelled"), m("float_gt_hmean"), m("qdq_gt_hmean"));
      }
      return s;
    }
    case TaskKind::kClassify: {
      std::string s =
          fmt::format("classes vs float: top-1 agreement {}, top-5 {}, mean KL {} ({} rows)",
                      m("top1"), m("top5"), m("mean_kl"), n("rows"));
      if (Get("float_accuracy")) {
        s += fmt::format("; accuracy ({} labelled): float {}, quantized {}", n("labelled"),
                         m("float_accuracy"), m("qdq_accuracy"));
      }
      return s;
    }
    case TaskKind::kCtc:
      return fmt::format(
          "CTC decoding vs float: sequence agreement {}, character agreement {} ({} "
          "sequences, {} float characters)",
          m("seq"), m("char"), n("sequences"), n("float_chars"));
    default:
      return "";
  }
}

nlohmann::json TaskJson(const TaskResult& r) {
  nlohmann::json metrics = nlohmann::json::object(), counts = nlohmann::json::object();
  for (const auto& [name, value] : r.metrics) {
    metrics[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  }
  for (const auto& [name, value] : r.counts) counts[name] = value;
  return {{"output", r.output}, {"task", r.task}, {"metrics", metrics}, {"counts", counts}};
}

}  // namespace porttool::quant
