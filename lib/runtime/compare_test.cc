// Per-tensor CompareModels runs the reference first, its tensors going to a temporary file, then
// the candidate against them: these tests cover execution orders that differ (nothing left
// behind), the first divergent tensor in the candidate's order, a run that fails, the tensor
// memory held (no more than one run's), statistics read back from disk equal to in-memory ones,
// and a full disk.
#include "lib/runtime/compare.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "lib/runtime/resource_limits.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

// Two independent branches joined at the end; the node order decides which branch runs first.
constexpr const char* kPFirst = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    p1 = Relu(x)
    p2 = Neg(p1)
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    y = Add(p2, q2)
  })";
constexpr const char* kQFirst = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    p1 = Relu(x)
    p2 = Neg(p1)
    y = Add(p2, q2)
  })";
// As kQFirst with p2 = Abs(p1) = p1 instead of -p1: p2 and y diverge, q1, q2 and p1 do not.
constexpr const char* kQFirstDiverging = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] y) {
    q1 = Sigmoid(x)
    q2 = Abs(q1)
    p1 = Relu(x)
    p2 = Abs(p1)
    y = Add(p2, q2)
  })";

std::vector<std::string> Names(const ModelComparison& c) {
  std::vector<std::string> names;
  for (const auto& t : c.intermediates) names.push_back(t.name);
  return names;
}

TensorMap Inputs(const io::Model& model) {
  Session session(model);
  return RandomInputs(session, 0);
}

TEST(CompareModelsPerTensor, OrdersThatDifferSpillAndComeBackInTheCandidatesOrder) {
  io::Model a = io::ParseText(kPFirst), b = io::ParseText(kQFirst);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  for (size_t budget : {size_t{0}, size_t{4} << 20}) {
    options.lockstep_budget = budget;  // 0: everything A makes before B asks for it is spilled
    ModelComparison c = CompareModels(a, b, Inputs(a), options);
    EXPECT_EQ(Names(c), (std::vector<std::string>{"q1", "q2", "p1", "p2", "y"})) << budget;
    EXPECT_TRUE(c.within_tolerance);
    EXPECT_FALSE(c.first_divergent.has_value());
    ASSERT_EQ(c.outputs.size(), 1u);
    EXPECT_EQ(c.outputs[0].stats.max_abs, 0.0);
    EXPECT_TRUE(std::filesystem::is_empty(scratch.path())) << "spilled tensors are removed";
  }
}

// names_b pairs tensors that the two models name differently (diff of a renamed copy): only the
// mapped ones are compared, under B's names, and the outputs pair through it too.
TEST(CompareModelsPerTensor, NamesMapPairsRenamedTensors) {
  io::Model a = io::ParseText(kPFirst);
  io::Model b = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[64,64] x) => (float[64,64] out) {
    r = Relu(x)
    n = Neg(r)
    s = Sigmoid(x)
    q2 = Abs(s)
    out = Add(n, q2)
  })");
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  options.names_b = {{"p1", "r"}, {"p2", "n"}, {"q1", "s"}, {"y", "out"}};
  ModelComparison c = CompareModels(a, b, Inputs(a), options);
  EXPECT_EQ(Names(c), (std::vector<std::string>{"r", "n", "s", "out"}));  // q2: not mapped
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0].name, "out");
  EXPECT_EQ(c.outputs[0].stats.max_abs, 0.0);
  EXPECT_TRUE(c.unmatched_outputs.empty());
  EXPECT_TRUE(c.within_tolerance);
}

TEST(CompareModelsPerTensor, FirstDivergentTensorInTheCandidatesOrder) {
  io::Model a = io::ParseText(kPFirst), b = io::ParseText(kQFirstDiverging);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  options.lockstep_budget = 0;
  ModelComparison c = CompareModels(a, b, Inputs(a), options);
  ASSERT_TRUE(c.first_divergent.has_value());
  const TensorComparison& first = c.intermediates[*c.first_divergent];
  EXPECT_EQ(first.name, "p2");
  EXPECT_EQ(first.op, "Abs");
  EXPECT_TRUE(c.intermediates[0].stats.within_tolerance);  // q1
  EXPECT_FALSE(c.within_tolerance);
  // Same statistics as comparing the two tensors directly.
  Session sa(a), sb(b);
  TensorMap in = Inputs(a);
  Tensor ya = sa.Run(in)[0].value, yb = sb.Run(in)[0].value;
  TensorStats direct = CompareTensors(ya, yb, 1e-3, 1e-4);
  EXPECT_EQ(c.outputs[0].stats.max_abs, direct.max_abs);
  EXPECT_EQ(c.outputs[0].stats.mean_abs, direct.mean_abs);
  EXPECT_EQ(c.outputs[0].stats.cosine, direct.cosine);
}

// The reference fails at run time (a Reshape to 7 elements of a 6-element tensor) while the
// candidate waits for that tensor: the reference's error comes out, nothing hangs.
TEST(CompareModelsPerTensor, ReferenceFailingMidRunIsReported) {
  io::Model a = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[6] y) {
      n = Neg(x)
      s = Constant<value = int64[1] {7}>()
      r = Reshape(n, s)
      y = Abs(r)
    })");
  io::Model b = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[6] y) {
      n = Neg(x)
      s = Constant<value = int64[1] {6}>()
      r = Reshape(n, s)
      y = Abs(r)
    })");
  CompareOptions options;
  options.per_tensor = true;
  testing::TempDir scratch;
  options.scratch_dir = scratch.path();
  EXPECT_THROW(CompareModels(a, b, Inputs(a), options), Error);
  // And the other way round: the candidate fails, the reference is left to finish.
  EXPECT_THROW(CompareModels(b, a, Inputs(a), options), Error);
}

// A chain of 1 MB activations with a skip connection: a run holds three of them at once.
constexpr const char* kChain = R"(<ir_version: 8, opset_import: ["" : 13]>
  g (float[1,16,128,128] x) => (float[1,16,128,128] y) {
    a1 = Relu(x)
    a2 = Neg(a1)
    a3 = Sigmoid(a2)
    a4 = Abs(a3)
    a5 = Neg(a4)
    a6 = Sigmoid(a5)
    a7 = Abs(a6)
    a8 = Neg(a7)
    y = Add(a8, a1)
  })";

// Issue 16: per-tensor comparison must hold no more tensor memory than one run of the model
// does, whatever the number of intermediates. Running the two models side by side held both
// runs' live tensors plus the hand-over (about twice one run), so the peak grew with the
// activations; the reference's tensors now wait on disk and are compared a chunk at a time.
TEST(CompareModelsPerTensor, HoldsNoMoreTensorMemoryThanOneRun) {
  io::Model model = io::ParseText(kChain);
  TensorMap inputs = Inputs(model);
  ResetPeakTensorBytes();
  const uint64_t before = LiveTensorBytes();
  {
    Session run(model);
    run.Run(inputs);
  }
  const uint64_t one_run = PeakTensorBytes() - before;
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  ResetPeakTensorBytes();
  ModelComparison c = CompareModels(model, model, inputs, options);
  const uint64_t per_tensor = PeakTensorBytes() - before;
  EXPECT_EQ(c.intermediates.size(), 9u);
  EXPECT_TRUE(c.within_tolerance);
  EXPECT_LE(per_tensor, one_run) << "one run holds " << one_run << " bytes of tensors at most, "
                                 << "per-tensor comparison " << per_tensor;
}

// The reference's tensors come back from disk a chunk at a time and as raw bytes of each dtype:
// the statistics must be those of comparing the tensors in memory. Tensors of 30000 elements span
// two chunks; the outputs are float, int64 and bool.
TEST(CompareModelsPerTensor, TensorsReadBackGiveTheSameStatisticsAsInMemory) {
  auto text = [](const char* scale) {
    return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[300,100] x) => (float[300,100] y, int64[300,100] i, bool[300,100] t) {{
        s = Sigmoid(x)
        k = Constant<value = float {{{}}}>()
        m = Mul(s, k)
        thousand = Constant<value = float {{1000}}>()
        big = Mul(m, thousand)
        i = Cast<to = 7>(big)
        half = Constant<value = float {{0.5}}>()
        t = Greater(m, half)
        y = Add(m, s)
      }})",
                       scale);
  };
  io::Model a = io::ParseText(text("1.0")), b = io::ParseText(text("1.0004"));
  TensorMap inputs = Inputs(a);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  ModelComparison c = CompareModels(a, b, inputs, options);
  Session sa(a), sb(b);
  auto outputs_a = sa.Run(inputs), outputs_b = sb.Run(inputs);
  ASSERT_EQ(c.outputs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const TensorStats& got = c.outputs[k].stats;
    TensorStats want = CompareTensors(outputs_a[k].value, outputs_b[k].value, 1e-3, 1e-4);
    EXPECT_EQ(c.outputs[k].name, outputs_a[k].name);
    EXPECT_EQ(got.count, want.count) << outputs_a[k].name;
    EXPECT_EQ(got.max_abs, want.max_abs) << outputs_a[k].name;
    EXPECT_EQ(got.mean_abs, want.mean_abs) << outputs_a[k].name;
    EXPECT_EQ(got.median_abs, want.median_abs) << outputs_a[k].name;
    EXPECT_EQ(got.max_rel, want.max_rel) << outputs_a[k].name;
    EXPECT_EQ(got.cosine, want.cosine) << outputs_a[k].name;
    EXPECT_EQ(got.sqnr_db, want.sqnr_db) << outputs_a[k].name;
    EXPECT_EQ(got.within_tolerance, want.within_tolerance) << outputs_a[k].name;
  }
  EXPECT_GT(c.outputs[1].stats.max_abs, 0.0) << "the int64 output differs somewhere";
  // m differs by 0.04%, within rtol; rounded to integers that is off by one here and there.
  ASSERT_TRUE(c.first_divergent.has_value());
  EXPECT_EQ(c.intermediates[*c.first_divergent].name, "i");
}

// The temporary file meets a full disk (a file-size limit stands in for one): the comparison
// fails with an error that names the directory and says what to do, and leaves nothing behind.
TEST(CompareModelsPerTensor, FullDiskIsAnErrorNamingTheDirectory) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  constexpr rlim_t kLimit = 2 << 20;  // two of the chain's nine 1 MB tensors
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < kLimit) GTEST_SKIP();
  io::Model model = io::ParseText(kChain);
  TensorMap inputs = Inputs(model);
  testing::TempDir scratch;
  CompareOptions options;
  options.per_tensor = true;
  options.scratch_dir = scratch.path();
  std::string message;
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
  rlimit limited = saved;
  limited.rlim_cur = kLimit;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  ErrorKind kind = ErrorKind::kInternal;
  try {
    CompareModels(model, model, inputs, options);
  } catch (const Error& e) {
    message = e.what();
    kind = e.kind();
  } catch (...) {  // whatever it is, the limit must be lifted before anything else runs
    message = "not a porttool::Error";
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(kind, ErrorKind::kBadInput) << "exit 3, as for any input the run cannot take";
  EXPECT_NE(message.find(scratch.path().string()), std::string::npos) << message;
  EXPECT_NE(message.find("free space there"), std::string::npos) << message;
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
}

}  // namespace
}  // namespace porttool::runtime
