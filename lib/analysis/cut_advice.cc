#include "lib/analysis/cut_advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "lib/analysis/liveness.h"
#include "lib/ir/graph_view.h"
#include "lib/shape/infer.h"
#include "lib/util/strings.h"

namespace porttool::analysis {
namespace {

// A tensor read after the step producing it, as positions in the split's execution order.
struct Span {
  int first = 0;  // position of the producer
  int last = 0;   // position of the last reader
  std::optional<uint64_t> bytes;
  std::string tensor;
};

class Advisor {
 public:
  Advisor(const io::Model& model, const ir::SplitResult& split, const CutAdviceOptions& options)
      : view_(model.proto.graph()),
        types_(model, view_, shape::TypeInference()),
        split_(split),
        options_(options) {
    // The split's execution order: its segments' nodes one after the other (Constant nodes
    // cloned into their readers are in no segment and are no cut position).
    for (const auto& segment : split.segments) {
      segment_start_.push_back(static_cast<int>(linear_.size()));
      linear_.insert(linear_.end(), segment.nodes.begin(), segment.nodes.end());
    }
  }

  std::vector<ir::CutAdvice> Run() {
    std::vector<ir::CutAdvice> out;
    std::vector<Span> spans;
    for (int b = 1; b < static_cast<int>(split_.segments.size()); ++b) {
      std::vector<std::pair<std::string, uint64_t>> large;
      for (const auto& bridge : split_.bridges) {
        bool crosses = bridge.producer < b && bridge.consumers.back() >= b;
        if (crosses && bridge.bytes && *bridge.bytes > options_.bridge_warn_bytes) {
          large.emplace_back(bridge.tensor, *bridge.bytes);
        }
      }
      if (large.empty()) continue;
      if (spans.empty()) spans = Spans();
      out.push_back(AdviseBoundary(b, spans, large));
    }
    return out;
  }

 private:
  std::vector<Span> Spans() {
    std::vector<Span> spans;
    const auto last_read = LastReadSteps(view_, linear_);
    for (int p = 0; p < static_cast<int>(linear_.size()); ++p) {
      for (const auto& out : view_.node(linear_[p]).output()) {
        auto it = last_read.find(out);
        if (out.empty() || it == last_read.end() || it->second <= p) continue;
        spans.push_back({p, it->second, ir::StaticBytes(types_.Find(out)), out});
      }
    }
    return spans;
  }

  // Bytes crossing a boundary placed just before position `p`; nullopt when a size is unknown.
  static std::optional<uint64_t> CrossingBytes(const std::vector<Span>& spans, int p,
                                               std::vector<std::string>* tensors = nullptr) {
    uint64_t total = 0;
    for (const auto& span : spans) {
      if (span.first >= p || span.last < p) continue;
      if (!span.bytes) return std::nullopt;
      total += *span.bytes;
      if (tensors) tensors->push_back(span.tensor);
    }
    return total;
  }

  ir::CutAdvice AdviseBoundary(int b, const std::vector<Span>& spans,
                               const std::vector<std::pair<std::string, uint64_t>>& large) {
    ir::CutAdvice advice;
    advice.boundary = b;
    for (const auto& [name, bytes] : large) advice.large_bridges.push_back(name);
    int at = segment_start_[b];
    advice.bytes = CrossingBytes(spans, at).value_or(0);
    // The boundary may only move into the accelerator segment: the host must keep its nodes.
    bool host_after = split_.segments[b].role == ir::SegmentRole::kHost;
    int lo = host_after ? std::max(segment_start_[b - 1] + 1, at - options_.window) : at + 1;
    int end = b + 1 < static_cast<int>(segment_start_.size()) ? segment_start_[b + 1]
                                                              : static_cast<int>(linear_.size());
    int hi = host_after ? at - 1 : std::min(end - 1, at + options_.window);
    for (int p = lo; p <= hi; ++p) {
      std::vector<std::string> tensors;
      auto bytes = CrossingBytes(spans, p, &tensors);
      if (!bytes || *bytes >= advice.bytes) continue;
      advice.candidates.push_back(
          {view_.node(linear_[p]).name(), std::abs(p - at), *bytes, std::move(tensors)});
    }
    std::sort(advice.candidates.begin(), advice.candidates.end(), [](const auto& x, const auto& y) {
      return std::tie(x.bytes, x.nodes_moved) < std::tie(y.bytes, y.nodes_moved);
    });
    if (advice.candidates.size() > 3) advice.candidates.resize(3);
    advice.message = Message(advice, large);
    return advice;
  }

  std::string Message(const ir::CutAdvice& advice,
                      const std::vector<std::pair<std::string, uint64_t>>& large) const {
    std::vector<std::string> sized;
    for (const auto& [name, bytes] : large) {
      sized.push_back(fmt::format("'{}' {}", name, util::FormatBytes(bytes)));
    }
    std::string text = fmt::format(
        "the cut between segments {} and {} bridges {} in total ({} over the {} threshold)",
        advice.boundary - 1, advice.boundary, util::FormatBytes(advice.bytes),
        util::Join(sized, ", "), util::FormatBytes(options_.bridge_warn_bytes));
    if (advice.candidates.empty()) {
      return text + fmt::format("; no smaller cut within {} nodes", options_.window);
    }
    std::vector<std::string> candidates;
    for (const auto& c : advice.candidates) {
      candidates.push_back(fmt::format("before '{}' ({} more node{} on the host): {} [{}]",
                                       c.before_node, c.nodes_moved, c.nodes_moved == 1 ? "" : "s",
                                       util::FormatBytes(c.bytes), util::Join(c.tensors, ", ")));
    }
    return text + "; smaller cuts nearby: " + util::Join(candidates, "; ");
  }

  ir::GraphView view_;
  ir::TensorTypes types_;
  const ir::SplitResult& split_;
  const CutAdviceOptions& options_;
  std::vector<int> linear_;         // the segments' nodes in execution order
  std::vector<int> segment_start_;  // segment -> position of its first node
};

}  // namespace

std::vector<ir::CutAdvice> AdviseCuts(const io::Model& model, const ir::SplitResult& split,
                                      const CutAdviceOptions& options) {
  return Advisor(model, split, options).Run();
}

}  // namespace porttool::analysis
