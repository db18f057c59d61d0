#include "lib/quant/bias_correction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "lib/ir/constants.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

namespace porttool::quant {
namespace {

using TP = onnx::TensorProto;

// One Conv's window geometry along H and W (a 1-D conv has H = kernel H = 1).
struct ConvGeometry {
  std::string node;
  int64_t channels = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  std::vector<int64_t> pads;  // begin..., end... as declared (resolved per input for auto_pad)
  std::string auto_pad = "NOTSET";
  int spatial = 2;
  size_t offset = 0;      // of this conv's sums in a sample's flat vector
  size_t max_offset = 0;  // of its channels' |x| maxima in a sample's other vector
  int64_t taps() const { return kh * kw; }
};

std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

std::string Str(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.s();
  }
  return fallback;
}

// The geometry of `n`, or nullopt for a conv this does not model.
std::optional<ConvGeometry> Geometry(const onnx::NodeProto& n,
                                     const ir::ConstantLookup& constants) {
  const onnx::TensorProto* weight = n.input_size() < 2 ? nullptr : constants.Find(n.input(1));
  if (weight == nullptr || weight->dims_size() < 3 || weight->dims_size() > 4) return std::nullopt;
  const std::vector<int64_t> dims(weight->dims().begin(), weight->dims().end());
  ConvGeometry g;
  g.node = n.name();
  g.spatial = static_cast<int>(dims.size()) - 2;
  g.channels = dims[1] * ConvGroup(n);
  g.kh = g.spatial == 2 ? dims[2] : 1;
  g.kw = dims.back();
  auto pick = [&](const std::vector<int64_t>& v, int i, int64_t fallback) {
    return v.size() == static_cast<size_t>(g.spatial) ? v[i] : fallback;
  };
  std::vector<int64_t> strides = Ints(n, "strides"), dil = Ints(n, "dilations");
  g.stride_h = g.spatial == 2 ? pick(strides, 0, 1) : 1;
  g.stride_w = pick(strides, g.spatial - 1, 1);
  g.dil_h = g.spatial == 2 ? pick(dil, 0, 1) : 1;
  g.dil_w = pick(dil, g.spatial - 1, 1);
  g.pads = Ints(n, "pads");
  g.auto_pad = Str(n, "auto_pad", "NOTSET");
  if (g.kh <= 0 || g.kw <= 0 || g.stride_h <= 0 || g.stride_w <= 0 || g.dil_h <= 0 ||
      g.dil_w <= 0) {
    return std::nullopt;
  }
  return g;
}

// Begin padding and output size of one spatial dim.
struct Axis {
  int64_t in, kernel, stride, dilation, pad_begin, out;
};
Axis ResolveAxis(const ConvGeometry& g, int64_t in, int64_t kernel, int64_t stride,
                 int64_t dilation, int dim) {
  const int64_t span = (kernel - 1) * dilation + 1;
  int64_t begin = 0, end = 0;
  if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
    begin = g.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    end = total - begin;
  } else if (g.auto_pad != "VALID" && g.pads.size() == static_cast<size_t>(2 * g.spatial)) {
    begin = g.pads[dim];
    end = g.pads[dim + g.spatial];
  }
  const int64_t out = (in + begin + end - span) / stride + 1;
  return {in, kernel, stride, dilation, begin, std::max<int64_t>(out, 0)};
}

// The input positions tap k of `a` reads over all output positions, those inside the input.
template <typename F>
void TapPositions(const Axis& a, int64_t k, F&& f) {
  for (int64_t o = 0; o < a.out; ++o) {
    const int64_t i = o * a.stride - a.pad_begin + k * a.dilation;
    if (i >= 0 && i < a.in) f(i);
  }
}

// Adds one input tensor's tap sums into sums[channels * taps] and returns the number of output
// positions they cover (batch included).
int64_t AddTapSums(const ConvGeometry& g, const runtime::Tensor& x, double* sums) {
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t h = g.spatial == 2 ? x.dim(2) : 1, w = x.dim(x.rank() - 1);
  const Axis ah = ResolveAxis(g, h, g.kh, g.stride_h, g.dil_h, 0);
  const Axis aw = ResolveAxis(g, w, g.kw, g.stride_w, g.dil_w, g.spatial - 1);
  std::vector<double> row(static_cast<size_t>(h * g.kw));  // [ih][kw]: that row's tap-column sum
  const float* px = x.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = px + (b * c + ch) * h * w;
      for (int64_t ih = 0; ih < h; ++ih) {
        for (int64_t k = 0; k < g.kw; ++k) {
          double s = 0;
          TapPositions(aw, k, [&](int64_t iw) { s += plane[ih * w + iw]; });
          row[ih * g.kw + k] = s;
        }
      }
      double* out = sums + ch * g.taps();
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        TapPositions(ah, kh, [&](int64_t ih) {
          for (int64_t k = 0; k < g.kw; ++k) out[kh * g.kw + k] += row[ih * g.kw + k];
        });
      }
    }
  }
  return n * ah.out * aw.out;
}

// max[c] = max(max[c], |x[:, c, ...]|) for x [N, C, ...].
void ChannelAbsMax(const runtime::Tensor& x, double* max) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.size() / std::max<int64_t>(1, n * c);
  const float* p = x.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      float m = 0;
      const float* v = p + (b * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) m = std::max(m, std::fabs(v[i]));
      max[ch] = std::max(max[ch], static_cast<double>(m));
    }
  }
}

bool Fits(const ConvGeometry& g, const runtime::Tensor& x) {
  return x.dtype() == TP::FLOAT && x.rank() == g.spatial + 2 && x.dim(1) == g.channels &&
         x.size() > 0;
}

}  // namespace

int64_t ConvGroup(const onnx::NodeProto& conv) {
  for (const auto& a : conv.attribute()) {
    if (a.name() == "group") return std::max<int64_t>(1, a.i());
  }
  return 1;
}

ConvInputMeansMap CollectConvInputMeans(const io::Model& model, const SampleSet& set, int threads,
                                        std::vector<std::string>* skipped) {
  const onnx::GraphProto& graph = model.proto.graph();
  const ir::GraphView view(graph);
  const ir::ConstantLookup constants(view);
  std::vector<ConvGeometry> convs;
  std::unordered_map<std::string, std::vector<size_t>> readers;  // tensor -> convs reading it
  size_t width = 0;      // doubles per sample: every conv's tap sums, then its position count
  size_t max_width = 0;  // every conv's per-channel |x| maxima
  for (const auto& n : graph.node()) {
    if (n.op_type() != "Conv") continue;
    std::optional<ConvGeometry> g = Geometry(n, constants);
    if (!g) {
      if (skipped) skipped->push_back(n.name());
      continue;
    }
    g->offset = width;
    width += static_cast<size_t>(g->channels * g->taps()) + 1;
    g->max_offset = max_width;
    max_width += static_cast<size_t>(g->channels);
    readers[n.input(0)].push_back(convs.size());
    convs.push_back(*g);
  }
  std::vector<double> total(width, 0.0), maxima(max_width, 0.0);
  if (convs.empty() || set.size() == 0) return {};
  // Samples finish in any order; their sums are added in index order (same result for any
  // thread count), holding only those that finished ahead of the next index.
  std::mutex mu;
  std::map<size_t, std::vector<double>> pending;
  size_t next = 0;
  auto reduce = [&](size_t index, std::vector<double> sums, const std::vector<double>& max) {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < max_width; ++i) maxima[i] = std::max(maxima[i], max[i]);
    pending.emplace(index, std::move(sums));
    for (auto it = pending.find(next); it != pending.end(); it = pending.find(++next)) {
      for (size_t i = 0; i < width; ++i) total[i] += it->second[i];
      pending.erase(it);
    }
  };
  const int workers = std::max(1, std::min<int>(threads, static_cast<int>(set.size())));
  ForEachSample(set.size(), workers, [&](int) -> std::function<void(size_t)> {
    auto session = std::make_shared<runtime::Session>(model);
    auto image = std::make_shared<DecodedImage>();
    return [&, session, image](size_t i) {
      std::vector<double> sums(width, 0.0), max(max_width, 0.0);
      auto observe = [&](const std::string& name, const runtime::Tensor& t) {
        auto it = readers.find(name);
        if (it == readers.end()) return;
        for (size_t c : it->second) {
          const ConvGeometry& g = convs[c];
          if (!Fits(g, t)) continue;
          double* at = sums.data() + g.offset;
          at[g.channels * g.taps()] += static_cast<double>(AddTapSums(g, t, at));
          ChannelAbsMax(t, max.data() + g.max_offset);
        }
      };
      runtime::TensorMap inputs = LoadSample(set, i, session->inputs(), image.get());
      for (const auto& [name, t] : inputs) observe(name, t);
      session->RunObserved(inputs, [&](const runtime::ProducedTensor& p) {
        if (!p.in_subgraph) observe(p.name, p.value);
      });
      reduce(i, std::move(sums), max);
    };
  });
  ConvInputMeansMap out;
  for (const auto& g : convs) {
    const double* at = total.data() + g.offset;
    const double positions = at[g.channels * g.taps()];
    if (positions <= 0) {
      if (skipped) skipped->push_back(g.node);
      continue;
    }
    ConvInputMeans m{g.channels, g.taps(), {}, {}};
    m.mean.assign(at, at + g.channels * g.taps());
    m.absmax.assign(maxima.begin() + g.max_offset, maxima.begin() + g.max_offset + g.channels);
    for (double& v : m.mean) v /= positions;
    out[g.node] = std::move(m);
  }
  return out;
}

std::vector<double> MeanOutputShift(const runtime::Tensor& w, const runtime::Tensor& w_dequantized,
                                    int64_t group, const ConvInputMeans& means) {
  const int64_t outputs = w.dim(0), per_group_in = w.dim(1);
  const int64_t taps = w.size() / std::max<int64_t>(1, outputs * per_group_in);
  if (taps != means.taps || per_group_in * group != means.channels ||
      w_dequantized.size() != w.size() || outputs % group != 0) {
    ThrowInternal(
        "bias correction: weights [{}] do not match the collected {} channel(s) x {} tap(s)",
        fmt::join(w.shape(), ","), means.channels, means.taps);
  }
  const float* pw = w.data<float>();
  const float* pq = w_dequantized.data<float>();
  const int64_t per_group_out = outputs / group;
  std::vector<double> shift(static_cast<size_t>(outputs), 0.0);
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t first_in = (o / per_group_out) * per_group_in;
    double s = 0;
    for (int64_t i = 0; i < per_group_in; ++i) {
      const double* m = means.mean.data() + (first_in + i) * taps;
      const int64_t base = (o * per_group_in + i) * taps;
      for (int64_t k = 0; k < taps; ++k) {
        s += (static_cast<double>(pq[base + k]) - pw[base + k]) * m[k];
      }
    }
    shift[o] = s;
  }
  return shift;
}

}  // namespace porttool::quant
