// Recurrent kernels: RNN, GRU and LSTM (opsets 7-14+): forward, reverse and bidirectional,
// every activation of the spec with its alpha/beta, clip, input_forget, linear_before_reset,
// layout 0 and 1, sequence_lens, initial states, peepholes and every optional output. One engine
// serves the three ops: the input projection X*W^T (+ biases) of every step is one GEMM up front,
// then each step does the small H*R^T GEMM and the op's gate arithmetic per batch row.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/gemm.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  } kind;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case kRelu:
        return x > 0 ? x : 0;
      case kTanh:
        return std::tanh(x);
      case kSigmoid:
        return 1 / (1 + std::exp(-x));
      case kAffine:
        return alpha * x + beta;
      case kLeakyRelu:
        return x < 0 ? alpha * x : x;
      case kThresholdedRelu:
        return x > alpha ? x : 0;
      case kScaledTanh:
        return alpha * std::tanh(beta * x);
      case kHardSigmoid:
        return std::clamp(alpha * x + beta, 0.0, 1.0);
      case kElu:
        return x < 0 ? alpha * (std::exp(x) - 1) : x;
      case kSoftsign:
        return x / (1 + std::abs(x));
      case kSoftplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};

struct ActivationSpec {
  const char* name;
  Activation::Kind kind;
  int params;  // 0, 1 (alpha) or 2 (alpha, beta)
  double alpha, beta;
};

// Defaults for missing alpha/beta follow the standalone ops (LeakyRelu 0.01, HardSigmoid 0.2/0.5).
constexpr ActivationSpec kActivations[] = {
    {"relu", Activation::kRelu, 0, 0, 0},
    {"tanh", Activation::kTanh, 0, 0, 0},
    {"sigmoid", Activation::kSigmoid, 0, 0, 0},
    {"affine", Activation::kAffine, 2, 1, 0},
    {"leakyrelu", Activation::kLeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", Activation::kThresholdedRelu, 1, 1, 0},
    {"scaledtanh", Activation::kScaledTanh, 2, 1, 1},
    {"hardsigmoid", Activation::kHardSigmoid, 2, 0.2, 0.5},
    {"elu", Activation::kElu, 1, 1, 0},
    {"softsign", Activation::kSoftsign, 0, 0, 0},
    {"softplus", Activation::kSoftplus, 0, 0, 0},
};

struct RecurrentConfig {
  Cell cell;
  int gates = 1;         // G: rows of W per hidden unit
  int per_dir = 1;       // activations per direction
  int64_t hidden = 0;    // H
  int dirs = 1;          // 1 or 2
  bool reverse = false;  // single direction run backwards
  int layout = 0;
  double clip = 0;  // 0: no clip
  bool input_forget = false;
  bool linear_before_reset = false;
  std::vector<Activation> acts;  // per_dir * dirs
};

// Activations with their alpha/beta consumed in order, as ONNX Runtime does.
std::vector<Activation> ParseActivations(const KernelContext& ctx, const RecurrentConfig& c,
                                         std::vector<std::string> names) {
  if (names.empty()) {
    static const std::vector<std::string> kDefaults[] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    for (int d = 0; d < c.dirs; ++d) {
      const auto& def = kDefaults[static_cast<int>(c.cell)];
      names.insert(names.end(), def.begin(), def.end());
    }
  }
  if (static_cast<int>(names.size()) == c.per_dir && c.dirs == 2) {
    names.insert(names.end(), names.begin(), names.end());
  }
  if (static_cast<int>(names.size()) != c.per_dir * c.dirs) {
    ctx.Fail(fmt::format("activations has {} entries; expected {} ({} per direction)", names.size(),
                         c.per_dir * c.dirs, c.per_dir));
  }
  const auto alphas = ctx.GetFloats("activation_alpha"), betas = ctx.GetFloats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> acts;
  for (const auto& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    const auto* spec = std::find_if(std::begin(kActivations), std::end(kActivations),
                                    [&](const ActivationSpec& s) { return lower == s.name; });
    if (spec == std::end(kActivations)) {
      ctx.Fail(fmt::format("attribute 'activations': '{}' is not an activation of the spec", name));
    }
    Activation a{spec->kind, spec->alpha, spec->beta};
    if (spec->params >= 1 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (spec->params >= 2 && next_beta < betas.size()) a.beta = betas[next_beta++];
    acts.push_back(a);
  }
  return acts;
}

RecurrentConfig ParseRecurrentConfig(const KernelContext& ctx, Cell cell) {
  std::vector<std::string> known = {"activation_alpha", "activation_beta", "activations", "clip",
                                    "direction",        "hidden_size",     "layout"};
  if (cell == Cell::kLstm) known.push_back("input_forget");
  if (cell == Cell::kGru) known.push_back("linear_before_reset");
  if (ctx.opset() < 7) known.push_back("output_sequence");  // opset 1 only; outputs decide
  ctx.AllowAttributes(known);
  RecurrentConfig c;
  c.cell = cell;
  c.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  c.per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  const std::string direction = ctx.GetString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    ctx.Fail(
        fmt::format("attribute 'direction' = '{}' (forward, reverse, bidirectional)", direction));
  }
  c.dirs = direction == "bidirectional" ? 2 : 1;
  c.reverse = direction == "reverse";
  c.layout = static_cast<int>(ctx.GetInt("layout", 0));
  if (c.layout != 0 && c.layout != 1) ctx.Fail(fmt::format("attribute 'layout' = {}", c.layout));
  c.clip = ctx.GetFloat("clip", 0.0f);
  if (ctx.HasAttribute("clip") && c.clip <= 0) ctx.Fail("attribute 'clip' must be positive");
  c.input_forget = ctx.GetInt("input_forget", 0) != 0;
  c.linear_before_reset = ctx.GetInt("linear_before_reset", 0) != 0;
  std::vector<std::string> names;
  if (const auto* a = ctx.Attribute("activations"))
    names.assign(a->strings().begin(), a->strings().end());
  c.acts = ParseActivations(ctx, c, names);
  return c;
}

void CheckShape(const KernelContext& ctx, const Tensor& t, const char* what,
                const std::vector<int64_t>& want) {
  if (t.shape() != want) {
    ctx.Fail(fmt::format("{} is {}, expected [{}]", what, t.DebugString(), fmt::join(want, ",")));
  }
}

template <typename T>
class RecurrentRun {
 public:
  RecurrentRun(KernelContext& ctx, const RecurrentConfig& c) : ctx_(ctx), c_(c) {
    const Tensor& x = ctx.input(0);
    if (x.rank() != 3) ctx.Fail(fmt::format("X {} must be 3-D", x.DebugString()));
    steps_ = x.dim(c.layout == 0 ? 0 : 1);
    batch_ = x.dim(c.layout == 0 ? 1 : 0);
    in_ = x.dim(2);
    const int64_t gh = c.gates * c.hidden;
    CheckShape(ctx, ctx.input(1), "W", {c.dirs, gh, in_});
    CheckShape(ctx, ctx.input(2), "R", {c.dirs, gh, c.hidden});
    if (ctx.has_input(3)) CheckShape(ctx, ctx.input(3), "B", {c.dirs, 2 * gh});
    lens_.assign(batch_, steps_);
    if (ctx.has_input(4)) {
      lens_ = ReadInts(ctx, ctx.input(4));
      if (static_cast<int64_t>(lens_.size()) != batch_)
        ctx.Fail("sequence_lens needs batch values");
      for (int64_t l : lens_) {
        if (l < 0 || l > steps_) ctx.Fail(fmt::format("sequence_lens value {} is out of range", l));
      }
    }
  }

  void Run() {
    const int64_t h = c_.hidden;
    const std::vector<int64_t> state_shape = c_.layout == 0
                                                 ? std::vector<int64_t>{c_.dirs, batch_, h}
                                                 : std::vector<int64_t>{batch_, c_.dirs, h};
    const std::vector<int64_t> y_shape = c_.layout == 0
                                             ? std::vector<int64_t>{steps_, c_.dirs, batch_, h}
                                             : std::vector<int64_t>{batch_, steps_, c_.dirs, h};
    const int32_t dtype = ctx_.input(0).dtype();
    y_ = Tensor(dtype, y_shape);
    yh_ = Tensor(dtype, state_shape);
    yc_ = Tensor(dtype, state_shape);
    const int init_c_input = 6, peephole_input = 7;
    if (ctx_.has_input(5)) CheckShape(ctx_, ctx_.input(5), "initial_h", state_shape);
    if (c_.cell == Cell::kLstm && ctx_.has_input(init_c_input)) {
      CheckShape(ctx_, ctx_.input(init_c_input), "initial_c", state_shape);
    }
    if (c_.cell == Cell::kLstm && ctx_.has_input(peephole_input)) {
      CheckShape(ctx_, ctx_.input(peephole_input), "P", {c_.dirs, 3 * h});
    }
    for (int d = 0; d < c_.dirs; ++d) RunDirection(d, c_.reverse || d == 1);
    if (ctx_.wants_output(0)) ctx_.output(0) = std::move(y_);
    if (ctx_.wants_output(1)) ctx_.output(1) = std::move(yh_);
    if (ctx_.output_count() > 2 && ctx_.wants_output(2)) ctx_.output(2) = std::move(yc_);
  }

 private:
  int64_t StateAt(int d, int64_t b) const {
    return (c_.layout == 0 ? d * batch_ + b : b * c_.dirs + d) * c_.hidden;
  }
  int64_t YAt(int64_t t, int d, int64_t b) const {
    return (c_.layout == 0 ? (t * c_.dirs + d) * batch_ + b : (b * steps_ + t) * c_.dirs + d) *
           c_.hidden;
  }
  int64_t XAt(int64_t t, int64_t b) const {
    return (c_.layout == 0 ? t * batch_ + b : b * steps_ + t) * in_;
  }
  double Clip(double v) const { return c_.clip > 0 ? std::clamp(v, -c_.clip, c_.clip) : v; }

  // Fills h and c (batch x H) with the initial states of direction d (zeros when absent).
  void InitialState(int d, int input, std::vector<T>& s) const {
    s.assign(batch_ * c_.hidden, T(0));
    if (!ctx_.has_input(input)) return;
    const T* src = ctx_.input(input).template data<T>();
    for (int64_t b = 0; b < batch_; ++b) {
      std::copy_n(src + StateAt(d, b), c_.hidden, s.data() + b * c_.hidden);
    }
  }

  void RunDirection(int d, bool backwards) {
    const int64_t h = c_.hidden, gh = c_.gates * h;
    const T* w = ctx_.input(1).template data<T>() + d * gh * in_;
    const T* r = ctx_.input(2).template data<T>() + d * gh * h;
    std::vector<T> wb(gh, T(0)), rb(gh, T(0));
    if (ctx_.has_input(3)) {
      const T* bias = ctx_.input(3).template data<T>() + d * 2 * gh;
      std::copy_n(bias, gh, wb.data());
      std::copy_n(bias + gh, gh, rb.data());
    }
    // Input projections of every (step, batch) row in one GEMM, in layout-0 row order.
    std::vector<T> xs(steps_ * batch_ * in_), xw(steps_ * batch_ * gh);
    const T* x = ctx_.input(0).template data<T>();
    for (int64_t t = 0; t < steps_; ++t) {
      for (int64_t b = 0; b < batch_; ++b) {
        std::copy_n(x + XAt(t, b), in_, xs.data() + (t * batch_ + b) * in_);
      }
    }
    Gemm(false, true, steps_ * batch_, gh, in_, T(1), xs.data(), in_, w, in_, T(0), xw.data(), gh);
    std::vector<T> hs, cs, hr(batch_ * gh);
    InitialState(d, 5, hs);
    InitialState(d, 6, cs);
    const T* p = c_.cell == Cell::kLstm && ctx_.has_input(7)
                     ? ctx_.input(7).template data<T>() + d * 3 * h
                     : nullptr;
    const Activation* acts = c_.acts.data() + d * c_.per_dir;
    for (int64_t s = 0; s < steps_; ++s) {
      Gemm(false, true, batch_, gh, h, T(1), hs.data(), h, r, h, T(0), hr.data(), gh);
      for (int64_t b = 0; b < batch_; ++b) {
        if (s >= lens_[b]) continue;
        const int64_t t = backwards ? lens_[b] - 1 - s : s;
        const T* xrow = xw.data() + (t * batch_ + b) * gh;
        T* hrow = hs.data() + b * h;
        T* crow = cs.data() + b * h;
        Step(xrow, hr.data() + b * gh, wb.data(), rb.data(), p, acts, r, hrow, crow);
        std::copy_n(hrow, h, y_.template mutable_data<T>() + YAt(t, d, b));
      }
    }
    for (int64_t b = 0; b < batch_; ++b) {
      std::copy_n(hs.data() + b * h, h, yh_.template mutable_data<T>() + StateAt(d, b));
      std::copy_n(cs.data() + b * h, h, yc_.template mutable_data<T>() + StateAt(d, b));
    }
  }

  // One step of one batch row: xw = X*W^T, hr = H*R^T (both without biases).
  void Step(const T* xw, const T* hr, const T* wb, const T* rb, const T* p, const Activation* acts,
            const T* r, T* hrow, T* crow) {
    const int64_t h = c_.hidden;
    if (c_.cell == Cell::kRnn) {
      for (int64_t j = 0; j < h; ++j) {
        hrow[j] = static_cast<T>(acts[0](Clip(double(xw[j]) + hr[j] + wb[j] + rb[j])));
      }
    } else if (c_.cell == Cell::kGru) {
      GruStep(xw, hr, wb, rb, acts, r, hrow);
    } else {
      LstmStep(xw, hr, wb, rb, p, acts, hrow, crow);
    }
  }

  void GruStep(const T* xw, const T* hr, const T* wb, const T* rb, const Activation* acts,
               const T* r, T* hrow) {
    const int64_t h = c_.hidden;
    std::vector<double> z(h), rg(h), cand(h);
    for (int64_t j = 0; j < h; ++j) {
      z[j] = acts[0](Clip(double(xw[j]) + hr[j] + wb[j] + rb[j]));
      rg[j] = acts[0](Clip(double(xw[h + j]) + hr[h + j] + wb[h + j] + rb[h + j]));
    }
    if (c_.linear_before_reset) {
      for (int64_t j = 0; j < h; ++j) {
        cand[j] = double(xw[2 * h + j]) + wb[2 * h + j] + rg[j] * (hr[2 * h + j] + rb[2 * h + j]);
      }
    } else {
      // (r . H) * Rh^T needs the reset gate first, so it cannot come from the batched GEMM.
      const T* rh = r + 2 * h * h;
      for (int64_t j = 0; j < h; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < h; ++k) acc += rg[k] * hrow[k] * rh[j * h + k];
        cand[j] = double(xw[2 * h + j]) + wb[2 * h + j] + rb[2 * h + j] + acc;
      }
    }
    for (int64_t j = 0; j < h; ++j) {
      const double ht = acts[1](Clip(cand[j]));
      hrow[j] = static_cast<T>((1 - z[j]) * ht + z[j] * hrow[j]);
    }
  }

  void LstmStep(const T* xw, const T* hr, const T* wb, const T* rb, const T* p,
                const Activation* acts, T* hrow, T* crow) {
    const int64_t h = c_.hidden;
    auto pre = [&](int gate, int64_t j) {
      const int64_t k = gate * h + j;
      return double(xw[k]) + hr[k] + wb[k] + rb[k];
    };
    for (int64_t j = 0; j < h; ++j) {
      const double c_prev = crow[j];
      // W/R/B gate order is i, o, f, c; P's is i, o, f.
      const double i = acts[0](Clip(pre(0, j) + (p ? p[j] * c_prev : 0)));
      const double f =
          c_.input_forget ? 1 - i : acts[0](Clip(pre(2, j) + (p ? p[2 * h + j] * c_prev : 0)));
      const double g = acts[1](Clip(pre(3, j)));
      const double c_new = f * c_prev + i * g;
      const double o = acts[0](Clip(pre(1, j) + (p ? p[h + j] * c_new : 0)));
      crow[j] = static_cast<T>(c_new);
      hrow[j] = static_cast<T>(o * acts[2](c_new));
    }
  }

  KernelContext& ctx_;
  const RecurrentConfig& c_;
  int64_t steps_ = 0, batch_ = 0, in_ = 0;
  std::vector<int64_t> lens_;
  Tensor y_, yh_, yc_;
};

// Attributes are parsed and validated once, at plan time; a kernel run outside a Session (no
// prepare step) parses them itself.
PrepareFn RecurrentPrepare(Cell cell) {
  return [cell](const KernelContext& ctx) -> std::shared_ptr<const void> {
    return std::make_shared<const RecurrentConfig>(ParseRecurrentConfig(ctx, cell));
  };
}

KernelFn RecurrentKernel(Cell cell) {
  return [cell](KernelContext& ctx) {
    const RecurrentConfig* prepared = ctx.prepared<RecurrentConfig>();
    RecurrentConfig c = prepared ? *prepared : ParseRecurrentConfig(ctx, cell);
    c.hidden = ctx.GetInt("hidden_size", 0);
    if (c.hidden <= 0) {
      // hidden_size is optional in the spec: R's last dim gives it.
      if (ctx.input(2).rank() != 3) ctx.Fail("R must be 3-D");
      c.hidden = ctx.input(2).dim(2);
    }
    DispatchFloat(ctx, ctx.input(0).dtype(), [&](auto tag) {
      RecurrentRun<decltype(tag)> run(ctx, c);
      run.Run();
    });
  };
}

}  // namespace

void RegisterRecurrentKernels(KernelRegistry& r) {
  r.Register("", "RNN", 7, kLatest, RecurrentKernel(Cell::kRnn), RecurrentPrepare(Cell::kRnn));
  r.Register("", "GRU", 7, kLatest, RecurrentKernel(Cell::kGru), RecurrentPrepare(Cell::kGru));
  r.Register("", "LSTM", 7, kLatest, RecurrentKernel(Cell::kLstm), RecurrentPrepare(Cell::kLstm));
}

}  // namespace porttool::runtime
