// TfIdfVectorizer (opset 9): for each row of token ids (X [C] or [N, C], int32 or int64), counts
// the occurrences of the n-grams listed in the node's pool and writes one float per output column
// (C' = max(ngram_indexes) + 1): the count (TF), the column's weight when the count is non-zero
// (IDF) or count x weight (TFIDF); without weights every weight is 1.
//
// Semantics follow the ONNX reference implementation, which generated the node tests' outputs:
// - an n-gram at skip s is the tokens i, i + (s+1), ..., i + (n-1)(s+1) of one row, for every s in
//   [0, max_skip_count]; every (start, skip) occurrence counts, except that unigrams do not depend
//   on the skip and are counted at s = 0 only;
// - only pool n-grams of a length in [min_gram_length, max_gram_length] are looked for;
// - weights are indexed by output column (as in the reference and ONNX Runtime), so a node whose
//   ngram_indexes leave gaps needs a weight for each column up to C'.
// String pools (pool_strings) are refused at plan time: the executor has no string tensors.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lib/runtime/kernels/all_kernels.h"
#include "lib/runtime/kernels/kernel_util.h"

namespace porttool::runtime {
namespace {

using namespace kernels;  // NOLINT

enum class Weighting { kTf, kIdf, kTfIdf };

// The pool as a trie over token ids: one walk from a start position finds the pool n-grams of
// every length starting there, instead of one lookup per length.
struct TrieNode {
  std::unordered_map<int64_t, size_t> children;  // token id -> index in TfIdfConfig::trie
  int64_t column = -1;                           // output column of the n-gram ending here
};

struct TfIdfConfig {
  Weighting weighting = Weighting::kTf;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  int64_t columns = 0;
  std::vector<float> weights;              // per output column; empty: every weight is 1
  std::vector<TrieNode> trie{TrieNode{}};  // trie[0] is the root
};

// Output columns beyond this are a malformed node, not a vocabulary (and C' must not overflow).
constexpr int64_t kMaxColumns = int64_t{1} << 31;

int64_t RequiredInt(const KernelContext& ctx, const char* name) {
  if (!ctx.HasAttribute(name)) ctx.Fail(fmt::format("required attribute '{}' is missing", name));
  return ctx.GetInt(name, 0);
}

Weighting ParseWeighting(const KernelContext& ctx) {
  if (!ctx.HasAttribute("mode")) ctx.Fail("required attribute 'mode' is missing");
  const std::string mode = ctx.GetString("mode", "");
  if (mode == "TF") return Weighting::kTf;
  if (mode == "IDF") return Weighting::kIdf;
  if (mode == "TFIDF") return Weighting::kTfIdf;
  ctx.Fail(fmt::format("attribute 'mode' value '{}' is not TF, IDF or TFIDF", mode));
}

void ParseGramLengths(const KernelContext& ctx, TfIdfConfig& c) {
  c.min_gram = RequiredInt(ctx, "min_gram_length");
  c.max_gram = RequiredInt(ctx, "max_gram_length");
  c.max_skip = RequiredInt(ctx, "max_skip_count");
  if (c.min_gram < 1) {
    ctx.Fail(fmt::format("attribute 'min_gram_length' value {} must be at least 1", c.min_gram));
  }
  if (c.max_gram < c.min_gram) {
    ctx.Fail(fmt::format("attribute 'max_gram_length' value {} is below min_gram_length {}",
                         c.max_gram, c.min_gram));
  }
  if (c.max_skip < 0) {
    ctx.Fail(fmt::format("attribute 'max_skip_count' value {} is negative", c.max_skip));
  }
}

// The output columns: each n-gram's ngram_indexes entry, C' = the largest + 1.
std::vector<int64_t> ParseColumns(const KernelContext& ctx, TfIdfConfig& c) {
  if (!ctx.HasAttribute("ngram_indexes")) ctx.Fail("required attribute 'ngram_indexes' is missing");
  const std::vector<int64_t> indexes = ctx.GetInts("ngram_indexes");
  if (indexes.empty()) ctx.Fail("attribute 'ngram_indexes' is empty: the output has no columns");
  for (int64_t column : indexes) {
    if (column < 0 || column >= kMaxColumns) {
      ctx.Fail(fmt::format("attribute 'ngram_indexes' value {} must be in [0, 2^31)", column));
    }
  }
  c.columns = *std::max_element(indexes.begin(), indexes.end()) + 1;
  return indexes;
}

void InsertGram(const KernelContext& ctx, TfIdfConfig& c, const int64_t* tokens, int64_t n,
                int64_t column) {
  size_t node = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto found = c.trie[node].children.find(tokens[i]);
    if (found == c.trie[node].children.end()) {
      c.trie.emplace_back();  // may reallocate: look the parent up again below
      found = c.trie[node].children.emplace(tokens[i], c.trie.size() - 1).first;
    }
    node = found->second;
  }
  if (c.trie[node].column >= 0) {
    ctx.Fail(fmt::format("attribute 'pool_int64s' holds the {}-gram [{}] twice", n,
                         fmt::join(tokens, tokens + n, ", ")));
  }
  c.trie[node].column = column;
}

// ngram_counts[k] is where the (k+1)-grams start in pool_int64s; they run to the next entry (or the
// pool's end). N-grams are numbered in pool order across all lengths, and the i-th one is counted
// in column ngram_indexes[i].
void BuildPool(const KernelContext& ctx, TfIdfConfig& c, const std::vector<int64_t>& indexes) {
  if (ctx.HasAttribute("pool_strings")) {
    ctx.Fail(fmt::format(
        "attribute 'pool_strings' ({} strings) is not supported: string tensors are not supported "
        "by the executor; only pool_int64s over int32/int64 token ids is",
        ctx.Attribute("pool_strings")->strings_size()));
  }
  if (!ctx.HasAttribute("pool_int64s")) ctx.Fail("required attribute 'pool_int64s' is missing");
  if (!ctx.HasAttribute("ngram_counts")) ctx.Fail("required attribute 'ngram_counts' is missing");
  const std::vector<int64_t> pool = ctx.GetInts("pool_int64s");
  const std::vector<int64_t> starts = ctx.GetInts("ngram_counts");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  size_t ordinal = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t n = static_cast<int64_t>(k) + 1;
    const int64_t begin = starts[k];
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : pool_size;
    if (begin < 0 || begin > end || end > pool_size) {
      ctx.Fail(fmt::format(
          "attribute 'ngram_counts' value {} at position {} does not start a section of the {} "
          "pool values (sections must be in order)",
          begin, k, pool_size));
    }
    if ((end - begin) % n != 0) {
      ctx.Fail(fmt::format(
          "attribute 'ngram_counts': the {}-grams take {} pool values, not a multiple of {}", n,
          end - begin, n));
    }
    for (int64_t at = begin; at < end; at += n, ++ordinal) {
      // Lengths outside [min, max] are never looked for, but still take their ngram_indexes slot.
      const bool wanted = n >= c.min_gram && n <= c.max_gram;
      if (wanted && ordinal < indexes.size()) {
        InsertGram(ctx, c, pool.data() + at, n, indexes[ordinal]);
      }
    }
  }
  if (ordinal != indexes.size()) {
    ctx.Fail(fmt::format("attribute 'ngram_indexes' has {} values for {} pool n-grams",
                         indexes.size(), ordinal));
  }
}

void ParseWeights(const KernelContext& ctx, TfIdfConfig& c) {
  c.weights = ctx.GetFloats("weights");
  if (!c.weights.empty() && static_cast<int64_t>(c.weights.size()) < c.columns) {
    ctx.Fail(fmt::format(
        "attribute 'weights' has {} values; the output has {} columns (max(ngram_indexes) + 1) "
        "and each column is weighted by its own entry",
        c.weights.size(), c.columns));
  }
}

TfIdfConfig ParseTfIdfConfig(const KernelContext& ctx) {
  ctx.AllowAttributes({"max_gram_length", "max_skip_count", "min_gram_length", "mode",
                       "ngram_counts", "ngram_indexes", "pool_int64s", "pool_strings", "weights"});
  TfIdfConfig c;
  c.weighting = ParseWeighting(ctx);
  ParseGramLengths(ctx, c);
  const std::vector<int64_t> indexes = ParseColumns(ctx, c);
  BuildPool(ctx, c, indexes);
  ParseWeights(ctx, c);
  return c;
}

// Follows the trie along tokens start, start + distance, ... and counts every pool n-gram of at
// least `shortest` tokens met on the way. A token with no branch ends the walk: no longer pool
// n-gram has that prefix.
template <typename T>
void CountFrom(const TfIdfConfig& c, const T* row, int64_t length, int64_t start, int64_t distance,
               int64_t shortest, int64_t* counts) {
  size_t node = 0;
  int64_t n = 1;
  for (int64_t i = start; i < length && n <= c.max_gram; i += distance, ++n) {
    const auto& children = c.trie[node].children;
    const auto hit = children.find(static_cast<int64_t>(row[i]));
    if (hit == children.end()) return;
    node = hit->second;
    if (n >= shortest && c.trie[node].column >= 0) ++counts[c.trie[node].column];
  }
}

// Counts the pool n-grams of one row into counts[0, columns).
template <typename T>
void CountRow(const TfIdfConfig& c, const T* row, int64_t length, int64_t* counts) {
  if (length == 0) return;
  // A distance of `length` or more fits no second token, so a huge max_skip_count costs nothing.
  const int64_t max_distance = std::min(c.max_skip, length - 1) + 1;
  int64_t shortest = c.min_gram;
  for (int64_t distance = 1; distance <= max_distance; ++distance) {
    // The last start whose shortest n-gram still ends inside the row.
    for (int64_t start = 0; start + distance * (shortest - 1) < length; ++start) {
      CountFrom(c, row, length, start, distance, shortest, counts);
    }
    // Unigrams are the same at every skip: counted at distance 1 only.
    if (shortest == 1) shortest = 2;
    if (shortest > c.max_gram) return;
  }
}

float Weighted(const TfIdfConfig& c, int64_t column, int64_t count) {
  const float weight = c.weights.empty() ? 1.f : c.weights[column];
  switch (c.weighting) {
    case Weighting::kTf:
      return static_cast<float>(count);
    case Weighting::kIdf:
      return count > 0 ? weight : 0.f;
    case Weighting::kTfIdf:
      return static_cast<float>(count) * weight;
  }
  return 0.f;
}

template <typename T>
void Vectorize(const TfIdfConfig& c, const Tensor& x, int64_t rows, Tensor& y) {
  const int64_t length = rows == 0 ? 0 : x.size() / rows;
  const T* px = x.data<T>();
  float* py = y.mutable_data<float>();
  ParallelElements(rows, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> counts(static_cast<size_t>(c.columns));
    for (int64_t r = begin; r < end; ++r) {
      std::fill(counts.begin(), counts.end(), 0);
      CountRow(c, px + r * length, length, counts.data());
      float* out = py + r * c.columns;
      for (int64_t col = 0; col < c.columns; ++col) out[col] = Weighted(c, col, counts[col]);
    }
  });
}

std::shared_ptr<const void> TfIdfVectorizerPrepare(const KernelContext& ctx) {
  return std::make_shared<const TfIdfConfig>(ParseTfIdfConfig(ctx));
}

void TfIdfVectorizerKernel(KernelContext& ctx) {
  std::optional<TfIdfConfig> parsed;  // only outside a Session, which runs the prepare step
  const TfIdfConfig* prepared = ctx.prepared<TfIdfConfig>();
  const TfIdfConfig& c = prepared ? *prepared : parsed.emplace(ParseTfIdfConfig(ctx));
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) {
    ctx.Fail(fmt::format("X {} must be [C] or [N, C] token ids", x.DebugString()));
  }
  const int64_t rows = x.rank() == 1 ? 1 : x.dim(0);
  std::vector<int64_t> shape = {c.columns};
  if (x.rank() == 2) shape.insert(shape.begin(), rows);
  Tensor& y = ctx.output(0) = Tensor(TP::FLOAT, shape);
  Dispatch<int32_t, int64_t>(ctx, x.dtype(),
                             [&](auto tag) { Vectorize<decltype(tag)>(c, x, rows, y); });
}

}  // namespace

void RegisterTfIdfVectorizerKernels(KernelRegistry& r) {
  r.Register("", "TfIdfVectorizer", 9, kLatest, TfIdfVectorizerKernel, TfIdfVectorizerPrepare);
}

}  // namespace porttool::runtime
