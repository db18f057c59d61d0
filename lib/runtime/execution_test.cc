// Execution settings per session: two sessions with different thread counts in one process each
// run with their own (the chunks their kernels' ParallelFor makes), a scope sets them for
// everything a thread does, and the pool's chunks see the caller's settings.
#include "lib/runtime/execution.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>

#include "lib/runtime/kernels/kernel_test_util.h"
#include "lib/runtime/kernels/ort_oracle_test_util.h"
#include "lib/runtime/parallel.h"
#include "lib/runtime/session.h"

namespace porttool::runtime {
namespace {

using testing_util::FloatTensor;
using testing_util::NodeBuilder;
using testing_util::OneNodeModel;

// A kernel that reports how many chunks one ParallelFor over 1000 items made, and whether the
// chunks saw the caller's thread count.
struct Probe {
  std::mutex mu;
  std::set<int64_t> chunk_starts;
  std::set<int> threads_seen_in_chunks;
};

KernelRegistry WithProbe(Probe& probe) {
  KernelRegistry registry = KernelRegistry::Default();
  registry.Register("com.example", "Probe", 1, 1, [&probe](KernelContext& ctx) {
    ParallelFor(1000, 1, [&](int64_t begin, int64_t) {
      std::lock_guard<std::mutex> lock(probe.mu);
      probe.chunk_starts.insert(begin);
      probe.threads_seen_in_chunks.insert(CurrentExecution().threads);
    });
    ctx.output(0) = ctx.input(0);
  });
  return registry;
}

io::Model ProbeModel() {
  onnx::NodeProto node = NodeBuilder("Probe", 0, 0).node();
  node.set_domain("com.example");
  node.add_input("x");
  node.add_output("y");
  io::Model model;
  model.proto = OneNodeModel(node, 17, {{"x", FloatTensor({2}, {1, 2})}}, onnx::TensorProto::FLOAT);
  auto* ex = model.proto.add_opset_import();
  ex->set_domain("com.example");
  ex->set_version(1);
  return model;
}

// The chunks one run of `session` made, and the thread counts its chunks saw.
std::pair<size_t, std::set<int>> RunProbe(Session& session, Probe& probe) {
  probe.chunk_starts.clear();
  probe.threads_seen_in_chunks.clear();
  session.Run({{"x", FloatTensor({2}, {1, 2})}});
  return {probe.chunk_starts.size(), probe.threads_seen_in_chunks};
}

TEST(Execution, TwoSessionsKeepTheirOwnThreadCounts) {
  Probe probe;
  KernelRegistry registry = WithProbe(probe);
  io::Model model = ProbeModel();
  Session one(model, {.registry = &registry, .threads = 1});
  Session three(model, {.registry = &registry, .threads = 3});
  // Created after `one`: with a process-wide setting the last session created would win.
  EXPECT_EQ(RunProbe(one, probe), (std::pair<size_t, std::set<int>>{1, {1}}));
  EXPECT_EQ(RunProbe(three, probe), (std::pair<size_t, std::set<int>>{3, {3}}));
  EXPECT_EQ(RunProbe(one, probe).first, 1u);
}

TEST(Execution, AScopeSetsTheCountForSessionsThatAskForNone) {
  Probe probe;
  KernelRegistry registry = WithProbe(probe);
  io::Model model = ProbeModel();
  Session inherits(model, {.registry = &registry});
  {
    ScopedExecution two({.threads = 2});
    EXPECT_EQ(CurrentExecution().threads, 2);
    EXPECT_EQ(RunProbe(inherits, probe).first, 2u);
    Session own(model, {.registry = &registry, .threads = 1});
    EXPECT_EQ(RunProbe(own, probe).first, 1u);  // its own count wins over the scope's
  }
  EXPECT_EQ(CurrentExecution().threads, DefaultExecution().threads);
}

TEST(Execution, PoisonIsAnExplicitSettingNotAnEnvironmentVariable) {
  {
    ScopedExecution poisoned({.poison_uninitialized = true});
    Tensor t = Tensor::Uninitialized(onnx::TensorProto::FLOAT, {4});
    for (int64_t i = 0; i < t.size(); ++i) EXPECT_TRUE(std::isnan(t.data<float>()[i]));
    // A chunk on a pool worker allocates with the caller's settings too.
    ScopedExecution two({.threads = 2});
    std::atomic<int> nan_chunks{0};
    ParallelFor(2, 1, [&](int64_t, int64_t) {
      Tensor u = Tensor::Uninitialized(onnx::TensorProto::FLOAT, {1});
      nan_chunks += std::isnan(u.data<float>()[0]) ? 1 : 0;
    });
    EXPECT_EQ(nan_chunks, 2);
  }
}

// The scan for NaN/Inf inputs runs over blocks of 1024 elements and then a scalar tail: a bad
// value inside a block (first or later), in the tail, or none, for float and double inputs.
TEST(Execution, NonFiniteInputsAreFoundInBlocksAndTail) {
  for (int32_t dtype : {onnx::TensorProto::FLOAT, onnx::TensorProto::DOUBLE}) {
    const int64_t n = 2 * 1024 + 37;
    for (int64_t bad_at : {int64_t{-1}, int64_t{5}, int64_t{1500}, n - 3}) {
      for (bool nan : {true, false}) {
        Tensor x = Tensor(dtype, {n});
        const double v = nan ? std::nan("") : -std::numeric_limits<double>::infinity();
        if (bad_at >= 0 && dtype == onnx::TensorProto::FLOAT) {
          x.mutable_data<float>()[bad_at] = static_cast<float>(v);
        } else if (bad_at >= 0) {
          x.mutable_data<double>()[bad_at] = v;
        }
        onnx::NodeProto node = NodeBuilder("Relu", 1, 1).node();
        node.set_input(0, "x");
        node.set_output(0, "y");
        io::Model model;
        model.proto = OneNodeModel(node, 14, {{"x", x}}, dtype);
        Session session(model);
        session.Run({{"x", x}});
        EXPECT_EQ(session.warnings().size(), bad_at >= 0 ? 1u : 0u)
            << "dtype " << dtype << " bad at " << bad_at << (nan ? " NaN" : " -Inf");
      }
    }
  }
}

}  // namespace
}  // namespace porttool::runtime
