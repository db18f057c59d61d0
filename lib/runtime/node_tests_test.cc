// The ONNX backend node tests (Debian's libonnx-testdata) run through the executor: every test
// whose ops all have kernels must reproduce the expected outputs (rtol 1e-3, atol 1e-7 for
// floats; exact for integers and bool), or be rejected with Error(kBadInput) AND be listed with a
// reason in known_unsupported.txt. A test using an op without a kernel is excluded only when that
// op is listed there too ("op:NAME  reason"); an unlisted op without a kernel fails the driver, so
// a missing kernel cannot hide among the exclusions, and a listed op that has gained a kernel
// fails it as a stale entry.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
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

struct KnownUnsupported {
  std::map<std::string, std::string> tests;  // test name -> reason it is rejected
  std::map<std::string, std::string> ops;    // op type -> reason it has no kernel
  std::vector<std::string> errors;           // malformed lines
};

KnownUnsupported LoadKnownUnsupported() {
  KnownUnsupported known;
  std::ifstream in(testing::SourceDir() / "lib/runtime/known_unsupported.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || std::isspace(static_cast<unsigned char>(line[0]))) {
      continue;
    }
    std::istringstream ss(line);
    std::string name, reason;
    ss >> name;
    std::getline(ss, reason);
    reason.erase(0, reason.find_first_not_of(" \t"));
    if (reason.empty())
      known.errors.push_back("known_unsupported.txt: '" + name + "' has no reason");
    if (name.rfind("op:", 0) == 0) {
      known.ops[name.substr(3)] = reason;
    } else {
      known.tests[name] = reason;
    }
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

int32_t DeclaredType(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
                     const std::string& name) {
  for (const auto& vi : values) {
    if (vi.name() == name) return vi.type().tensor_type().elem_type();
  }
  return 0;
}

// The test data of the onnx release Debian packages stores bfloat16 values as uint16 tensors
// holding the bit patterns; read them as the bfloat16 values the model declares.
Tensor ReadPbAs(const fs::path& file, int32_t declared) {
  Tensor t = ReadPb(file);
  if (declared != onnx::TensorProto::BFLOAT16 || t.dtype() != onnx::TensorProto::UINT16) return t;
  Tensor widened(onnx::TensorProto::FLOAT, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) {
    widened.mutable_data<float>()[i] = BFloat16ToFloat(t.data<uint16_t>()[i]);
  }
  return widened;
}

// Runs every data set of one test; returns "" on success or the failure.
std::string RunCase(const fs::path& dir) {
  io::Model model = io::Load(dir / "model.onnx");
  Session session(model);
  const auto sets = SortedFiles(dir, "test_data_set_");
  if (sets.empty()) return "no test_data_set_* directory";
  for (const auto& set : sets) {
    TensorMap inputs;
    auto input_files = SortedFiles(set, "input_");
    const auto& specs = session.inputs();
    for (size_t i = 0; i < input_files.size() && i < specs.size(); ++i) {
      const int32_t declared = DeclaredType(model.proto.graph().input(), specs[i].name);
      inputs[specs[i].name] = ReadPbAs(input_files[i], declared);
    }
    auto outputs = session.Run(inputs);
    auto expected_files = SortedFiles(set, "output_");
    // Every output compared: a data set whose expected outputs are missing (or a run producing
    // fewer) is a failure, never a pass by comparing nothing.
    if (expected_files.empty() || expected_files.size() != outputs.size()) {
      return fmt::format("{}: {} expected output file(s), the run produced {} output(s)",
                         set.filename().string(), expected_files.size(), outputs.size());
    }
    for (size_t i = 0; i < expected_files.size(); ++i) {
      const int32_t declared = DeclaredType(model.proto.graph().output(), outputs[i].name);
      std::string diff = Diff(outputs[i].value, ReadPbAs(expected_files[i], declared));
      if (!diff.empty())
        return set.filename().string() + " output " + outputs[i].name + ": " + diff;
    }
  }
  return "";
}

TEST(NodeTests, BackendNodeTestsPassOrAreKnownUnsupported) {
  if (!fs::exists(kTestData))
    PORTTOOL_SKIP_MISSING(kTestData << " absent (apt install libonnx-testdata)");
  const KnownUnsupported known = LoadKnownUnsupported();
  const auto& registry = KernelRegistry::Default();
  int passed = 0, rejected = 0, excluded = 0;
  std::vector<std::string> failures = known.errors;
  std::set<std::string> seen_known;
  std::map<std::string, int> excluded_ops;  // listed op without a kernel -> tests excluded for it
  std::map<std::string, std::vector<std::string>> unlisted_ops;  // op -> its tests
  for (const char* suite : {"node", "pytorch-operator", "pytorch-converted", "simple"}) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(kTestData / suite)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      std::string name = dir.filename().string();
      onnx::ModelProto proto;
      {
        std::ifstream in(dir / "model.onnx", std::ios::binary);
        if (!proto.ParseFromIstream(&in)) {
          failures.push_back(std::string(suite) + "/" + name + ": model.onnx does not parse");
          continue;
        }
      }
      std::set<std::pair<std::string, std::string>> ops;
      CollectOps(proto.graph(), ops);
      std::vector<std::string> missing;
      for (const auto& [domain, op] : ops) {
        if (!registry.HasOp(domain, op)) missing.push_back(op);
      }
      if (!missing.empty()) {
        bool all_accounted = true;
        for (const auto& op : missing) {
          if (known.ops.count(op)) {
            ++excluded_ops[op];
          } else {
            unlisted_ops[op].push_back(std::string(suite) + "/" + name);
            all_accounted = false;
          }
        }
        if (all_accounted) ++excluded;
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
      bool is_known = known.tests.count(name) > 0;
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
  for (const auto& [name, reason] : known.tests) {
    if (!seen_known.count(name)) failures.push_back(name + ": listed but not run (stale entry)");
  }
  for (const auto& [op, tests] : unlisted_ops) {
    failures.push_back(fmt::format(
        "no kernel for {} and no 'op:{}  <reason>' line in known_unsupported.txt ({} tests, "
        "e.g. {})",
        op, op, tests.size(), tests.front()));
  }
  const std::vector<std::string> registered = registry.OpNames();
  auto has_kernel = [&](const std::string& op) {
    return std::any_of(registered.begin(), registered.end(), [&](const std::string& qualified) {
      return qualified.size() >= op.size() + 2 &&
             qualified.compare(qualified.size() - op.size() - 2, std::string::npos, "::" + op) == 0;
    });
  };
  for (const auto& [op, reason] : known.ops) {
    if (has_kernel(op)) {
      failures.push_back("op:" + op + " is listed in known_unsupported.txt but has a kernel now " +
                         "(stale entry: delete the line)");
    }
  }
  std::printf("node tests: %d passed, %d rejected-with-reason, %d excluded-by-op, %zu failed\n",
              passed, rejected, excluded, failures.size());
  for (const auto& [op, count] : excluded_ops) {
    std::printf("  excluded: %s (%d): %s\n", op.c_str(), count, known.ops.at(op).c_str());
  }
  for (const auto& f : failures) std::printf("  FAIL %s\n", f.c_str());
  EXPECT_TRUE(failures.empty()) << failures.size() << " node tests failed (listed above)";
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace porttool::runtime
