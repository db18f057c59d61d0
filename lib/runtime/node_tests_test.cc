// The ONNX backend node tests (Debian's libonnx-testdata) run through the executor: every test
// whose ops all have kernels must reproduce the expected outputs (rtol 1e-3, atol 1e-7 for
// floats; exact for integers and bool), or be rejected with Error(kBadInput) AND be listed with a
// reason in known_unsupported.txt. Tests using an op without a kernel are counted as skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/io/model.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::runtime {
namespace {

namespace fs = std::filesystem;
const fs::path kTestData = "/usr/share/libonnx-testdata/data";

std::map<std::string, std::string> LoadKnownUnsupported() {
  std::map<std::string, std::string> known;
  std::ifstream in(testing::SourceDir() / "lib/runtime/known_unsupported.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name, reason;
    ss >> name;
    std::getline(ss, reason);
    known[name] = reason;
  }
  return known;
}

void CollectOps(const onnx::GraphProto& g, std::set<std::pair<std::string, std::string>>& ops) {
  for (const auto& n : g.node()) {
    ops.insert({CanonicalDomain(n.domain()), n.op_type()});
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectOps(a.g(), ops);
      for (const auto& sg : a.graphs()) CollectOps(sg, ops);
    }
  }
}

bool Close(double a, double e) {
  if (std::isnan(e)) return std::isnan(a);
  if (std::isinf(e)) return a == e;
  return std::abs(a - e) <= 1e-7 + 1e-3 * std::abs(e);
}

// Empty when equal; else a description of the first difference.
std::string Diff(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return "got " + actual.DebugString() + ", expected " + expected.DebugString();
  }
  auto as_double = [](const Tensor& t, int64_t i) -> double {
    switch (t.dtype()) {
      case onnx::TensorProto::FLOAT:
        return t.data<float>()[i];
      case onnx::TensorProto::DOUBLE:
        return t.data<double>()[i];
      default:
        return 0;
    }
  };
  bool is_float =
      expected.dtype() == onnx::TensorProto::FLOAT || expected.dtype() == onnx::TensorProto::DOUBLE;
  if (!is_float) {
    if (std::memcmp(actual.raw(), expected.raw(), expected.bytes()) == 0) return "";
    return "integer/bool values differ";
  }
  for (int64_t i = 0; i < expected.size(); ++i) {
    double a = as_double(actual, i), e = as_double(expected, i);
    if (!Close(a, e)) {
      return "element " + std::to_string(i) + ": got " + std::to_string(a) + ", expected " +
             std::to_string(e);
    }
  }
  return "";
}

std::vector<fs::path> SortedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) files.push_back(e.path());
  }
  // input_10.pb sorts after input_9.pb
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    auto na = a.stem().string(), nb = b.stem().string();
    return na.size() != nb.size() ? na.size() < nb.size() : na < nb;
  });
  return files;
}

// Runs every data set of one test; returns "" on success or the failure.
std::string RunCase(const fs::path& dir) {
  io::Model model = io::Load(dir / "model.onnx");
  Session session(model);
  for (const auto& set : SortedFiles(dir, "test_data_set_")) {
    TensorMap inputs;
    auto input_files = SortedFiles(set, "input_");
    const auto& specs = session.inputs();
    for (size_t i = 0; i < input_files.size() && i < specs.size(); ++i) {
      inputs[specs[i].name] = ReadPb(input_files[i]);
    }
    auto outputs = session.Run(inputs);
    auto expected_files = SortedFiles(set, "output_");
    for (size_t i = 0; i < expected_files.size() && i < outputs.size(); ++i) {
      std::string diff = Diff(outputs[i].value, ReadPb(expected_files[i]));
      if (!diff.empty())
        return set.filename().string() + " output " + outputs[i].name + ": " + diff;
    }
  }
  return "";
}

TEST(NodeTests, BackendNodeTestsPassOrAreKnownUnsupported) {
  if (!fs::exists(kTestData)) GTEST_SKIP() << kTestData << " absent (apt install libonnx-testdata)";
  auto known = LoadKnownUnsupported();
  const auto& registry = KernelRegistry::Default();
  int passed = 0, rejected = 0, skipped = 0;
  std::vector<std::string> failures;
  std::set<std::string> seen_known;
  std::map<std::string, int> missing_ops;  // op without a kernel -> tests skipped for it
  for (const char* suite : {"node", "pytorch-operator", "pytorch-converted", "simple"}) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(kTestData / suite)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      std::string name = dir.filename().string();
      onnx::ModelProto proto;
      {
        std::ifstream in(dir / "model.onnx", std::ios::binary);
        if (!proto.ParseFromIstream(&in)) continue;
      }
      std::set<std::pair<std::string, std::string>> ops;
      CollectOps(proto.graph(), ops);
      bool all_registered = std::all_of(ops.begin(), ops.end(), [&](const auto& op) {
        return registry.HasOp(op.first, op.second);
      });
      if (!all_registered) {
        ++skipped;
        for (const auto& op : ops) {
          if (!registry.HasOp(op.first, op.second)) ++missing_ops[op.second];
        }
        continue;
      }
      std::string failure;
      bool was_rejected = false;
      try {
        failure = RunCase(dir);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kBadInput) {
          was_rejected = true;
          failure = e.what();
        } else {
          failure = std::string("internal error: ") + e.what();
        }
      } catch (const std::exception& e) {
        failure = std::string("exception: ") + e.what();
      }
      bool is_known = known.count(name) > 0;
      if (is_known) seen_known.insert(name);
      if (failure.empty()) {
        ++passed;
        if (is_known) failures.push_back(name + ": passes but is listed in known_unsupported.txt");
      } else if (was_rejected && is_known) {
        ++rejected;
      } else {
        failures.push_back(std::string(suite) + "/" + name + ": " +
                           (was_rejected ? "rejected (not listed): " : "") + failure);
      }
    }
  }
  for (const auto& [name, reason] : known) {
    if (!seen_known.count(name)) failures.push_back(name + ": listed but not run (stale entry)");
  }
  std::printf(
      "node tests: %d passed, %d rejected-with-reason, %d skipped (op not registered), "
      "%zu failed\n",
      passed, rejected, skipped, failures.size());
  for (const auto& [op, count] : missing_ops)
    std::printf("  no kernel: %s (%d)\n", op.c_str(), count);
  for (const auto& f : failures) std::printf("  FAIL %s\n", f.c_str());
  EXPECT_TRUE(failures.empty()) << failures.size() << " node tests failed (listed above)";
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace porttool::runtime
