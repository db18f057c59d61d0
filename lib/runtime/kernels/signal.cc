// Signal kernels (opset 17): HannWindow, HammingWindow, BlackmanWindow, DFT, STFT and
// MelWeightMatrix — what audio front ends (keyword spotting, mel spectrograms) fold or verify.
// Transforms are direct O(n^2) sums in double: they run at fold/verify time on short frames,
// where exactness matters more than speed.
#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT
using Complex = std::complex<double>;
constexpr double kTwoPi = 2 * std::numbers::pi;

// Writes `values` into a new tensor of the attribute 'output_datatype' (default float).
Tensor TypedOutput(const KernelContext& ctx, const std::vector<double>& values,
                   std::vector<int64_t> shape) {
  const auto dtype = static_cast<int32_t>(ctx.GetInt("output_datatype", TP::FLOAT));
  Tensor out(dtype, std::move(shape));
  DispatchNumeric(ctx, dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < values.size(); ++i) out.mutable_data<T>()[i] = static_cast<T>(values[i]);
  });
  return out;
}

// Generalised cosine window: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N).
KernelFn WindowKernel(double a0, double a1, double a2) {
  return [=](KernelContext& ctx) {
    ctx.AllowAttributes({"output_datatype", "periodic"});
    const auto size = ReadIntScalar(ctx, ctx.input(0), "the window size");
    if (size < 0) ctx.Fail(fmt::format("size {} is negative", size));
    const bool periodic = ctx.GetInt("periodic", 1) != 0;
    const double n_total = static_cast<double>(periodic ? size : size - 1);
    // Written straight into the output, whose allocation the memory limits check: a scratch
    // vector of `size` doubles (a model-chosen scalar) was not checked (found by fuzz_executor).
    Tensor out(static_cast<int32_t>(ctx.GetInt("output_datatype", TP::FLOAT)), {size});
    DispatchNumeric(ctx, out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t n = 0; n < size; ++n) {
        const double phase = n_total > 0 ? kTwoPi * n / n_total : 0;
        out.mutable_data<T>()[n] =
            static_cast<T>(a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase));
      }
    });
    ctx.output(0) = std::move(out);
  };
}

// DFT of `in` (n complex values) at `length` points; `inverse` scales by 1/length.
std::vector<Complex> Dft(const std::vector<Complex>& in, int64_t length, bool inverse,
                         int64_t bins) {
  std::vector<Complex> out(bins);
  const double sign = inverse ? 1 : -1;
  const int64_t n = std::min<int64_t>(length, static_cast<int64_t>(in.size()));
  for (int64_t k = 0; k < bins; ++k) {
    Complex acc = 0;
    for (int64_t t = 0; t < n; ++t) acc += in[t] * std::polar(1.0, sign * kTwoPi * k * t / length);
    out[k] = inverse ? acc / static_cast<double>(length) : acc;
  }
  return out;
}

// Reads element i of a [..., 1|2] real or complex tensor.
template <typename T>
Complex At(const T* p, int64_t i, int64_t components) {
  return components == 2 ? Complex(p[2 * i], p[2 * i + 1]) : Complex(p[i], 0);
}

void DftKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"axis", "inverse", "onesided"});
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || (x.dim(x.rank() - 1) != 1 && x.dim(x.rank() - 1) != 2)) {
    ctx.Fail(fmt::format("input {} must be [..., signal, 1|2]", x.DebugString()));
  }
  const int axis = NormalizeAxis(ctx, ctx.GetInt("axis", 1), x.rank() - 1);
  const bool inverse = ctx.GetInt("inverse", 0) != 0, onesided = ctx.GetInt("onesided", 0) != 0;
  if (inverse && onesided) ctx.Fail("inverse=1 with onesided=1 is not defined");
  const int64_t n = x.dim(axis), components = x.dim(x.rank() - 1);
  int64_t length = n;
  if (ctx.has_input(1) && ctx.input(1).size() > 0) {
    length = ReadIntScalar(ctx, ctx.input(1), "dft_length");
  }
  if (length < 1) ctx.Fail(fmt::format("dft_length {} must be positive", length));
  const int64_t bins = onesided ? length / 2 + 1 : length;
  std::vector<int64_t> shape = x.shape();
  shape[axis] = bins;
  shape.back() = 2;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < x.rank() - 1; ++d) inner *= x.dim(d);
  Tensor out(x.dtype(), shape);
  DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    std::vector<Complex> line(n);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t t = 0; t < n; ++t) line[t] = At(src, (o * n + t) * inner + i, components);
        auto y = Dft(line, length, inverse, bins);
        for (int64_t k = 0; k < bins; ++k) {
          const int64_t at = ((o * bins + k) * inner + i) * 2;
          dst[at] = static_cast<T>(y[k].real());
          dst[at + 1] = static_cast<T>(y[k].imag());
        }
      }
    }
  });
  ctx.output(0) = std::move(out);
}

void StftKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"onesided"});
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2)) {
    ctx.Fail(fmt::format("signal {} must be [batch, length, 1|2]", x.DebugString()));
  }
  const auto step = ReadIntScalar(ctx, ctx.input(1), "frame_step");
  const bool has_window = ctx.has_input(2) && ctx.input(2).size() > 0;
  int64_t frame = has_window ? ctx.input(2).size() : 0;
  if (ctx.has_input(3) && ctx.input(3).size() > 0) {
    frame = ReadIntScalar(ctx, ctx.input(3), "frame_length");
  }
  if (step < 1 || frame < 1 || frame > x.dim(1) || (has_window && ctx.input(2).size() != frame)) {
    ctx.Fail(fmt::format("frame_step {} / frame_length {} / window do not fit signal {}", step,
                         frame, x.DebugString()));
  }
  const bool onesided = ctx.GetInt("onesided", 1) != 0;
  const int64_t batch = x.dim(0), len = x.dim(1), components = x.dim(2);
  const int64_t frames = (len - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  Tensor out(x.dtype(), {batch, frames, bins, 2});
  DispatchFloat(ctx, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    const T* window = has_window ? ctx.input(2).data<T>() : nullptr;
    T* dst = out.mutable_data<T>();
    std::vector<Complex> line(frame);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t t = 0; t < frame; ++t) {
          line[t] =
              At(src, b * len + f * step + t, components) * (window ? double(window[t]) : 1.0);
        }
        auto y = Dft(line, frame, false, bins);
        for (int64_t k = 0; k < bins; ++k) {
          dst[((b * frames + f) * bins + k) * 2] = static_cast<T>(y[k].real());
          dst[((b * frames + f) * bins + k) * 2 + 1] = static_cast<T>(y[k].imag());
        }
      }
    }
  });
  ctx.output(0) = std::move(out);
}

// Triangular mel filters exactly as the ONNX reference computes them (bin edges truncated to
// integer DFT bins).
void MelWeightMatrixKernel(KernelContext& ctx) {
  ctx.AllowAttributes({"output_datatype"});
  const auto mels = ReadIntScalar(ctx, ctx.input(0), "num_mel_bins");
  const auto dft_length = ReadIntScalar(ctx, ctx.input(1), "dft_length");
  const double rate = ReadScalar(ctx, ctx.input(2));
  const double lower = ReadScalar(ctx, ctx.input(3)), upper = ReadScalar(ctx, ctx.input(4));
  if (mels < 1 || dft_length < 1 || rate <= 0 || lower < 0 || upper <= lower) {
    ctx.Fail("needs num_mel_bins >= 1, dft_length >= 1, sample_rate > 0, 0 <= lower < upper");
  }
  const int64_t spectrum = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(lower), step = (to_mel(upper) - low_mel) / double(mels + 2);
  std::vector<int64_t> edges(mels + 2);
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10, (i * step + low_mel) / 2595) - 1);
    edges[i] = FloatToIndex(ctx, std::floor((dft_length + 1) * hz / rate), "a mel bin edge");
  }
  std::vector<double> w(spectrum * mels, 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spectrum) ctx.Fail("a mel band edge falls outside the spectrum");
    w[j * mels + i] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) {
      set(center, i, 1);
    } else {
      for (int64_t j = left; j <= center; ++j) set(j, i, double(j - left) / double(center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, double(right - j) / double(right - center));
  }
  ctx.output(0) = TypedOutput(ctx, w, {spectrum, mels});
}

}  // namespace

void RegisterSignalKernels(KernelRegistry& r) {
  r.Register("", "HannWindow", 17, kLatest, WindowKernel(0.5, 0.5, 0));
  r.Register("", "HammingWindow", 17, kLatest, WindowKernel(25.0 / 46, 21.0 / 46, 0));
  r.Register("", "BlackmanWindow", 17, kLatest, WindowKernel(0.42, 0.5, 0.08));
  r.Register("", "DFT", 17, kLatest, DftKernel);
  r.Register("", "STFT", 17, kLatest, StftKernel);
  r.Register("", "MelWeightMatrix", 17, kLatest, MelWeightMatrixKernel);
}

}  // namespace porttool::runtime
