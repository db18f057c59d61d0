// ctest's `porttool_runtime_poisoned` entry runs this suite with PORTTOOL_POISON_UNINITIALIZED
// set. The test program turns the variable into the program's default ExecutionEnv, as the CLI
// turns its flags into settings: the library itself reads no environment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "lib/runtime/execution.h"
#include "lib/runtime/tensor.h"

namespace porttool::runtime {
namespace {

bool PoisonRequested() { return std::getenv("PORTTOOL_POISON_UNINITIALIZED") != nullptr; }

class PoisonFromEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!PoisonRequested()) return;
    ExecutionEnv env = DefaultExecution();
    env.poison_uninitialized = true;
    SetDefaultExecution(env);
  }
};

[[maybe_unused]] ::testing::Environment* const kPoison =
    ::testing::AddGlobalTestEnvironment(new PoisonFromEnvironment);

// The poisoned run really poisons (otherwise it would pass as a plain second run).
TEST(PoisonedRun, UninitializedStorageIsNanWhenRequested) {
  if (!PoisonRequested()) GTEST_SKIP() << "runs in the porttool_runtime_poisoned ctest entry";
  Tensor t = Tensor::Uninitialized(onnx::TensorProto::FLOAT, {8});
  for (int64_t i = 0; i < t.size(); ++i) EXPECT_TRUE(std::isnan(t.data<float>()[i]));
}

}  // namespace
}  // namespace porttool::runtime
