#include "lib/quant/equalize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "lib/runtime/tensor_io.h"

namespace porttool::quant {
namespace {

using TP = onnx::TensorProto;
using runtime::Tensor;

// The smallest factor a channel is scaled by: a dead channel (|x| max near 0) grows 1024x at most.
constexpr double kMinScale = 1.0 / 1024;

// Constant tensors of the main graph by name (initializers and Constant values), writable.
std::map<std::string, onnx::TensorProto*> MutableConstants(onnx::GraphProto& g) {
  std::map<std::string, onnx::TensorProto*> out;
  for (auto& t : *g.mutable_initializer()) out[t.name()] = &t;
  for (auto& n : *g.mutable_node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == "value" && a.has_t()) out[n.output(0)] = a.mutable_t();
    }
  }
  return out;
}

class Equalizer {
 public:
  Equalizer(io::Model& model, const ConvInputMeansMap& stats)
      : model_(model),
        g_(*model.proto.mutable_graph()),
        stats_(stats),
        constants_(MutableConstants(g_)) {
    for (const auto& n : g_.node()) {
      for (const auto& in : n.input()) ++reads_[in];
    }
    for (const auto& o : g_.output()) ++reads_[o.name()];
    for (int i = 0; i < g_.node_size(); ++i) {
      const auto& n = g_.node(i);
      if (!n.input().empty()) readers_[n.input(0)].push_back(i);
    }
  }

  EqualizeResult Run() {
    for (int i = 0; i < g_.node_size(); ++i) {
      if (g_.node(i).op_type() == "Conv" && g_.node(i).output_size() == 1) Try(i);
    }
    return result_;
  }

 private:
  // A float constant only node `reader` reads, or nullptr.
  onnx::TensorProto* Private(const onnx::NodeProto& reader, int index) {
    if (index >= reader.input_size() || reader.input(index).empty()) return nullptr;
    auto it = constants_.find(reader.input(index));
    if (it == constants_.end() || it->second->data_type() != TP::FLOAT) return nullptr;
    int uses = 0;
    for (const auto& in : reader.input()) uses += in == reader.input(index);
    return reads_[reader.input(index)] == uses ? it->second : nullptr;
  }

  void Try(int a) {
    onnx::NodeProto& producer = *g_.mutable_node(a);
    const std::string& y = producer.output(0);
    auto readers = readers_.find(y);
    if (readers == readers_.end()) return;
    // Every reader of y is a Conv reading it as its data input, and nothing else reads y.
    if (reads_[y] != static_cast<int>(readers->second.size())) return;
    onnx::TensorProto* wa = Private(producer, 1);
    if (wa == nullptr || wa->dims_size() < 3) return;
    onnx::TensorProto* ba = Private(producer, 2);
    if (producer.input_size() > 2 && !producer.input(2).empty() && ba == nullptr) return;
    const int64_t channels = wa->dims(0);
    std::vector<onnx::TensorProto*> wbs;
    bool depthwise = true;
    const ConvInputMeans* s = nullptr;
    for (int b : readers->second) {
      const onnx::NodeProto& reader = g_.node(b);
      onnx::TensorProto* wb = Private(reader, 1);
      auto st = stats_.find(reader.name());
      if (reader.op_type() != "Conv" || wb == nullptr || wb->dims_size() != wa->dims_size() ||
          wb->dims(1) * ConvGroup(reader) != channels || st == stats_.end() ||
          st->second.absmax.size() != static_cast<size_t>(channels)) {
        return;
      }
      depthwise &= ConvGroup(reader) == channels;
      wbs.push_back(wb);
      s = &st->second;
    }
    std::vector<double> scale = Scales(s->absmax, depthwise);
    if (scale.empty()) return;
    ScaleOutputs(*wa, ba, scale);
    for (size_t k = 0; k < wbs.size(); ++k) {
      ScaleInputs(*wbs[k], ConvGroup(g_.node(readers->second[k])), scale);
    }
    result_.tensors.push_back({y, producer.name(), Spread(s->absmax), Spread(s->absmax, &scale)});
  }

  // s_c = r_c / R (or its square root when a reader mixes channels), clamped; empty when the
  // channels are already within 2x of each other (nothing to gain).
  static std::vector<double> Scales(const std::vector<double>& r, bool depthwise) {
    const double top = *std::max_element(r.begin(), r.end());
    if (!(top > 0) || Spread(r) < 2) return {};
    std::vector<double> s(r.size());
    for (size_t c = 0; c < r.size(); ++c) {
      const double ratio = std::max(r[c] / top, kMinScale);
      s[c] = depthwise ? ratio : std::sqrt(ratio);
    }
    return s;
  }

  // Largest over smallest channel max (of r / scale when given); channels under 1e-6 of the
  // largest are dead and left out.
  static double Spread(const std::vector<double>& r, const std::vector<double>* scale = nullptr) {
    double hi = 0, lo = 0;
    const double top = *std::max_element(r.begin(), r.end());
    for (size_t c = 0; c < r.size(); ++c) {
      if (r[c] < 1e-6 * top) continue;
      const double v = scale ? r[c] / (*scale)[c] : r[c];
      hi = std::max(hi, v);
      lo = lo == 0 ? v : std::min(lo, v);
    }
    return lo > 0 ? hi / lo : 1;
  }

  Tensor Load(const onnx::TensorProto& t) { return runtime::TensorFromProto(model_, t); }
  void Store(onnx::TensorProto& into, const Tensor& t) {
    into = runtime::TensorToProto(t, into.name());
  }

  // Wa[o, ...] /= s_o, ba[o] /= s_o.
  void ScaleOutputs(onnx::TensorProto& wa, onnx::TensorProto* ba, const std::vector<double>& s) {
    Tensor w = Load(wa);
    const int64_t inner = w.size() / w.dim(0);
    for (int64_t i = 0; i < w.size(); ++i) {
      w.mutable_data<float>()[i] = static_cast<float>(w.data<float>()[i] / s[i / inner]);
    }
    Store(wa, w);
    if (ba == nullptr) return;
    Tensor b = Load(*ba);
    for (int64_t c = 0; c < b.size() && c < static_cast<int64_t>(s.size()); ++c) {
      b.mutable_data<float>()[c] = static_cast<float>(b.data<float>()[c] / s[c]);
    }
    Store(*ba, b);
  }

  // Wb[o, i, ...] *= s_c for input channel c = group(o) * (C / group) + i.
  void ScaleInputs(onnx::TensorProto& wb, int64_t group, const std::vector<double>& s) {
    Tensor w = Load(wb);
    const int64_t outputs = w.dim(0), per_group_in = w.dim(1);
    const int64_t taps = w.size() / (outputs * per_group_in), per_group_out = outputs / group;
    for (int64_t o = 0; o < outputs; ++o) {
      for (int64_t i = 0; i < per_group_in; ++i) {
        const double f = s[(o / per_group_out) * per_group_in + i];
        float* p = w.mutable_data<float>() + (o * per_group_in + i) * taps;
        for (int64_t k = 0; k < taps; ++k) p[k] = static_cast<float>(p[k] * f);
      }
    }
    Store(wb, w);
  }

  io::Model& model_;
  onnx::GraphProto& g_;
  const ConvInputMeansMap& stats_;
  std::map<std::string, onnx::TensorProto*> constants_;
  std::map<std::string, int> reads_;
  std::map<std::string, std::vector<int>> readers_;  // by data input (input 0)
  EqualizeResult result_;
};

}  // namespace

std::string EqualizeResult::Note() const {
  if (tensors.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& t : tensors) {
    parts.push_back(
        fmt::format("{} ({:.1f}x -> {:.1f}x)", t.tensor, t.spread_before, t.spread_after));
  }
  return fmt::format(
      "channel equalization: {} conv output(s) rescaled per channel (exact; the next conv's "
      "weights take the inverse) so one activation scale fits all channels: {}",
      tensors.size(), fmt::join(parts, ", "));
}

EqualizeResult EqualizeChannels(io::Model& model, const ConvInputMeansMap& stats) {
  return Equalizer(model, stats).Run();
}

}  // namespace porttool::quant
