// TfIdfVectorizer on hand-computed cases the seven backend node tests (all TF mode, no weights)
// leave out: skip-grams mixed with unigrams (counted once, not once per skip), a min_gram_length
// that drops the pool's unigrams, IDF and TFIDF with per-column weights, and the plan-time
// rejection of string pools and inconsistent attributes.
#include <gtest/gtest.h>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

using testing_util::ExpectClose;
using testing_util::Int64Tensor;
using testing_util::NodeBuilder;
using testing_util::RunOp;

// Pool: unigram 1 -> column 3; bigrams (1,2) -> 0, (2,1) -> 1, (1,1) -> 2.
NodeBuilder SkipGramNode(int64_t min_gram, int64_t max_skip) {
  NodeBuilder b("TfIdfVectorizer", 1);
  b.Str("mode", "TF")
      .Int("min_gram_length", min_gram)
      .Int("max_gram_length", 2)
      .Int("max_skip_count", max_skip)
      .Ints("ngram_counts", {0, 1})
      .Ints("ngram_indexes", {3, 0, 1, 2})
      .Ints("pool_int64s", {1, 1, 2, 2, 1, 1, 1});
  return b;
}

Tensor Int32Tensor(const std::vector<int64_t>& shape, const std::vector<int32_t>& values) {
  Tensor t(onnx::TensorProto::INT32, shape);
  std::copy(values.begin(), values.end(), t.mutable_data<int32_t>());
  return t;
}

TEST(TfIdfVectorizerKernel, SkipGramsCountEveryStartAndSkipButUnigramsOnce) {
  Tensor x = Int64Tensor({4}, {1, 2, 1, 2});
  // Skip 0 pairs: (1,2) (2,1) (1,2). Skip 1 pairs: (1,1) (2,2). Unigram 1 twice, not twice per
  // skip.
  auto skip1 = RunOp(SkipGramNode(1, 1).node(), 9, {&x});
  ExpectClose(skip1[0], {4}, {2, 1, 1, 2}, "max_skip_count 1");
  auto skip0 = RunOp(SkipGramNode(1, 0).node(), 9, {&x});
  ExpectClose(skip0[0], {4}, {2, 1, 0, 2}, "max_skip_count 0");
  // min_gram_length 2: the pool's unigram is never looked for, its column stays 0.
  auto bigrams = RunOp(SkipGramNode(2, 1).node(), 9, {&x});
  ExpectClose(bigrams[0], {4}, {2, 1, 1, 0}, "min_gram_length 2");
  // A batch of int32 rows, counted independently. Row 2 = [2, 1, 1, 5]: skip 0 pairs (2,1) (1,1)
  // (1,5), skip 1 pairs (2,1) (1,5), unigram 1 twice.
  Tensor batch = Int32Tensor({2, 4}, {1, 2, 1, 2, 2, 1, 1, 5});
  auto rows = RunOp(SkipGramNode(1, 1).node(), 9, {&batch});
  ExpectClose(rows[0], {2, 4}, {2, 1, 1, 2, 0, 2, 1, 2}, "batch");
}

// Unigrams only, in `mode`, with the given output columns; the pool is added by the caller.
NodeBuilder UnigramNode(const std::string& mode, const std::vector<int64_t>& indexes) {
  NodeBuilder b("TfIdfVectorizer", 1);
  b.Str("mode", mode)
      .Int("min_gram_length", 1)
      .Int("max_gram_length", 1)
      .Int("max_skip_count", 0)
      .Ints("ngram_counts", {0})
      .Ints("ngram_indexes", indexes);
  return b;
}

// Unigrams 7 -> column 2, 8 -> column 0, 9 -> column 1; weights are per output column.
onnx::NodeProto WeightedNode(const std::string& mode, bool with_weights) {
  NodeBuilder b = UnigramNode(mode, {2, 0, 1});
  b.Ints("pool_int64s", {7, 8, 9});
  if (with_weights) b.Floats("weights", {0.5f, 2.f, 4.f});
  return b.node();
}

TEST(TfIdfVectorizerKernel, IdfAndTfIdfWeighByColumn) {
  // Counts: 7 twice (column 2), 9 once (column 1), 8 never (column 0); 3 is not in the pool.
  Tensor x = Int64Tensor({4}, {7, 7, 9, 3});
  ExpectClose(RunOp(WeightedNode("TF", true), 9, {&x})[0], {3}, {0, 1, 2}, "TF ignores weights");
  ExpectClose(RunOp(WeightedNode("IDF", true), 9, {&x})[0], {3}, {0, 2, 4}, "IDF");
  ExpectClose(RunOp(WeightedNode("IDF", false), 9, {&x})[0], {3}, {0, 1, 1}, "IDF unweighted");
  ExpectClose(RunOp(WeightedNode("TFIDF", true), 9, {&x})[0], {3}, {0, 2, 8}, "TFIDF");
  ExpectClose(RunOp(WeightedNode("TFIDF", false), 9, {&x})[0], {3}, {0, 1, 2}, "TFIDF unweighted");
}

std::string PrepareError(const onnx::NodeProto& node) {
  const PrepareFn* prepare = KernelRegistry::Default().FindPrepare("", "TfIdfVectorizer", 9);
  if (prepare == nullptr) return "no prepare step";
  KernelContext ctx(node, 9, {nullptr});
  try {
    (*prepare)(ctx);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TfIdfVectorizerKernel, RejectsStringPoolsAndInconsistentAttributesAtPlanTime) {
  EXPECT_EQ(PrepareError(WeightedNode("TF", true)), "");
  NodeBuilder strings = UnigramNode("TF", {0, 1});
  strings.Strs("pool_strings", {"a", "b"});
  const std::string pool = PrepareError(strings.node());
  EXPECT_NE(pool.find("attribute 'pool_strings' (2 strings) is not supported"), std::string::npos)
      << pool;
  EXPECT_NE(pool.find("TfIdfVectorizer_under_test"), std::string::npos) << pool;

  NodeBuilder mode("TfIdfVectorizer", 1);
  mode.Str("mode", "BM25");
  const std::string bad_mode = PrepareError(mode.node());
  EXPECT_NE(bad_mode.find("attribute 'mode' value 'BM25'"), std::string::npos) << bad_mode;

  // Three pool unigrams but two ngram_indexes.
  NodeBuilder mismatch = UnigramNode("TF", {0, 1});
  mismatch.Ints("pool_int64s", {7, 8, 9});
  const std::string count = PrepareError(mismatch.node());
  EXPECT_NE(count.find("attribute 'ngram_indexes' has 2 values for 3 pool n-grams"),
            std::string::npos)
      << count;

  NodeBuilder weights = UnigramNode("IDF", {0, 5});
  weights.Ints("pool_int64s", {7, 8}).Floats("weights", {1.f, 1.f});
  const std::string few = PrepareError(weights.node());
  EXPECT_NE(few.find("attribute 'weights' has 2 values; the output has 6 columns"),
            std::string::npos)
      << few;

  NodeBuilder lengths("TfIdfVectorizer", 1);
  lengths.Str("mode", "TF")
      .Int("min_gram_length", 0)
      .Int("max_gram_length", 1)
      .Int("max_skip_count", 0);
  const std::string min = PrepareError(lengths.node());
  EXPECT_NE(min.find("attribute 'min_gram_length' value 0"), std::string::npos) << min;
}

}  // namespace
}  // namespace porttool::runtime
