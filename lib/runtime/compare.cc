#include "lib/runtime/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "lib/ir/dtype.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v(t.size());
  auto copy = [&](const auto* p) {
    for (int64_t i = 0; i < t.size(); ++i) v[i] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case TP::FLOAT:
      copy(t.data<float>());
      break;
    case TP::DOUBLE:
      copy(t.data<double>());
      break;
    case TP::INT8:
      copy(t.data<int8_t>());
      break;
    case TP::UINT8:
      copy(t.data<uint8_t>());
      break;
    case TP::INT16:
      copy(t.data<int16_t>());
      break;
    case TP::UINT16:
      copy(t.data<uint16_t>());
      break;
    case TP::INT32:
      copy(t.data<int32_t>());
      break;
    case TP::UINT32:
      copy(t.data<uint32_t>());
      break;
    case TP::INT64:
      copy(t.data<int64_t>());
      break;
    case TP::UINT64:
      copy(t.data<uint64_t>());
      break;
    case TP::BOOL:
      copy(t.data<bool>());
      break;
    default:
      ThrowBadInput("cannot compare {} tensors", ir::DtypeName(t.dtype()));
  }
  return v;
}

// Builds the sessions' input maps: each model gets the inputs it declares.
TensorMap InputsFor(const Session& session, const TensorMap& all) {
  TensorMap mine;
  for (const auto& spec : session.inputs()) {
    auto it = all.find(spec.name);
    if (it != all.end()) mine[spec.name] = it->second;
  }
  return mine;
}

}  // namespace

TensorStats CompareTensors(const Tensor& reference, const Tensor& candidate, double rtol,
                           double atol) {
  TensorStats s;
  if (reference.shape() != candidate.shape()) {
    s.comparable = s.within_tolerance = false;
    s.note =
        fmt::format("shape differs: {} vs {}", reference.DebugString(), candidate.DebugString());
    return s;
  }
  auto a = AsDoubles(reference), b = AsDoubles(candidate);
  s.count = reference.size();
  double dot = 0, na = 0, nb = 0, noise = 0;
  for (int64_t i = 0; i < s.count; ++i) {
    double x = a[i], y = b[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) {
        s.within_tolerance = false;
        s.max_abs = s.max_rel = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    double d = x == y ? 0 : std::abs(y - x);  // inf == inf counts as equal
    s.max_abs = std::max(s.max_abs, d);
    s.max_rel = std::max(s.max_rel, d / std::max(std::abs(x), 1e-6));
    if (!(d <= atol + rtol * std::abs(x))) s.within_tolerance = false;
    if (std::isfinite(d)) {
      dot += x * y;
      na += x * x;
      nb += y * y;
      noise += d * d;
    }
  }
  s.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  s.sqnr_db = noise == 0 ? std::numeric_limits<double>::infinity()
                         : 10.0 * std::log10(std::max(na, 1e-300) / noise);
  return s;
}

ModelComparison CompareModels(const io::Model& a, const io::Model& b, const TensorMap& inputs,
                              const CompareOptions& options) {
  SessionOptions options_b = options.session;
  if (options.kernels_b) options_b.kernels = options.kernels_b;
  Session sa(a, options.session), sb(b, options_b);
  // Names B's nodes produce: the only intermediates of A worth keeping.
  std::set<std::string> b_produces;
  for (const auto& n : b.proto.graph().node())
    b_produces.insert(n.output().begin(), n.output().end());
  std::unordered_map<std::string, Tensor> kept;
  Observer keep = [&](const std::string& name, const Tensor& t) {
    if (b_produces.count(name)) kept[name] = t;
  };
  auto out_a = sa.Run(InputsFor(sa, inputs), options.per_tensor ? keep : Observer());
  ModelComparison result;
  Observer compare = [&](const std::string& name, const Tensor& t) {
    auto it = kept.find(name);
    if (it == kept.end()) return;
    result.intermediates.push_back(
        {name, CompareTensors(it->second, t, options.rtol, options.atol)});
    kept.erase(it);  // release A's copy as soon as it is compared
  };
  auto out_b = sb.Run(InputsFor(sb, inputs), options.per_tensor ? compare : Observer());
  for (const auto& oa : out_a) {
    auto it = std::find_if(out_b.begin(), out_b.end(),
                           [&](const NamedTensor& o) { return o.name == oa.name; });
    if (it == out_b.end()) {
      result.unmatched_outputs.push_back(oa.name);
      result.within_tolerance = false;
      continue;
    }
    result.outputs.push_back(
        {oa.name, CompareTensors(oa.value, it->value, options.rtol, options.atol)});
    if (!result.outputs.back().stats.within_tolerance) result.within_tolerance = false;
  }
  std::stable_sort(result.intermediates.begin(), result.intermediates.end(),
                   [](const TensorComparison& x, const TensorComparison& y) {
                     if (x.stats.comparable != y.stats.comparable) return !x.stats.comparable;
                     return x.stats.sqnr_db < y.stats.sqnr_db;
                   });
  return result;
}

}  // namespace porttool::runtime
