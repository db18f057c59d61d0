// Issue 54: names from a model reach generated code as text, never as code. A model whose
// op_type, domain, node, tensor and attribute names hold comment terminators, quotes,
// backslashes, line breaks, trigraphs, `#`, `${}`, `$()`, backticks, NUL and invalid UTF-8 goes
// through every generator (scaffold-op with all adapters, emit-header, kit, split + emit-runner);
// each generated C/C++ package builds with -Wall -Wextra -Werror, its Python parses, its scripts
// pass `sh -n`, and nm finds no symbol the names tried to define (`porttool_injected`).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

// Writes hostile.onnx (a custom op then a Gelu in a hostile domain), plain.onnx (standard ops,
// hostile node, tensor and graph names) and plain_utf8.onnx (the same, valid UTF-8) into `dir`.
// python onnx refuses strings that are not UTF-8, so the invalid bytes and the NUL go in
// afterwards, over same-length placeholders
// (`@@` -> ff fe, `%%` -> 00 01) in the serialised bytes: no length prefix changes.
constexpr const char* kMakeModels = R"PY(
import sys
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
inject = "*/ int porttool_injected(void) { return 42; } /*"
evil = inject + "\n\"'\\??/??=??( #define X ${HOME} $(id) `id` @V@;\r@@%%\\"
op = "Gelu " + evil
x, mid, y = "in\"put " + evil, "mid " + evil, "out\\ " + evil
custom = helper.make_node(op, [x], [mid], name="node " + evil, domain="dom.ain " + evil)
custom.attribute.extend([
    helper.make_attribute("alpha " + evil, 0.5),
    helper.make_attribute("mode " + evil, evil.encode()),
    helper.make_attribute("axes " + evil, [1, 2]),
    # Names that sanitise to one C field, or to another's count field.
    helper.make_attribute("a.b", 1), helper.make_attribute("a_b", 2),
    helper.make_attribute("ints", [3]), helper.make_attribute("ints_count", 4),
])
gelu = helper.make_node("Gelu", [mid], [y], name="gelu " + evil, domain="com.evil " + evil)
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4])
graph = helper.make_graph([custom, gelu], "graph " + evil, [vi(x)], [vi(y)], value_info=[vi(mid)])
model = helper.make_model(graph, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("dom.ain " + evil, 1),
    helper.make_opsetid("com.evil " + evil, 1)])

relu = helper.make_node("Relu", [x], [mid], name="relu " + evil)
add = helper.make_node("Add", [mid, "w " + evil], [y], name="add " + evil)
w = helper.make_tensor("w " + evil, TensorProto.FLOAT, [1, 4], [1.0, 2.0, 3.0, 4.0])
plain = helper.make_model(
    helper.make_graph([relu, add], "graph " + evil, [vi(x)], [vi(y)], [w], value_info=[vi(mid)]),
    opset_imports=[helper.make_opsetid("", 17)])
plain.ir_version = 8
model.ir_version = 8

for name, m in (("hostile", model), ("plain", plain)):
    data = m.SerializeToString().replace(b"@@", b"\xff\xfe").replace(b"%%", b"\x00\x01")
    open(f"{out}/{name}.onnx", "wb").write(data)
# split refuses names at a segment boundary that are not UTF-8 (segment files are ONNX, where
# names are strings): the runner's model keeps every other hostile character.
open(f"{out}/plain_utf8.onnx", "wb").write(plain.SerializeToString())
)PY";

constexpr const char* kStrict = "-Wall -Wextra -Werror";

class HostileNamesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    testing::WriteFile(*dir_ / "make.py", kMakeModels);
    auto r = RunShell(fmt::format("{} {}/make.py {}", testing::kSystemPython, dir_->path().string(),
                                  dir_->path().string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path Dir() { return dir_->path(); }
  static std::string Model(const char* name) { return (Dir() / name).string() + ".onnx"; }
  static TempDir* dir_;
};
TempDir* HostileNamesTest::dir_ = nullptr;

// The defined external symbols of the object files and libraries under `dir` (in parentheses:
// RunShell's own redirections would otherwise take the pipe's last stdin).
std::string DefinedSymbols(const fs::path& dir) {
  auto r = RunShell(fmt::format(
      "(find {} \\( -name '*.o' -o -name '*.a' -o -name '*.so' \\) -print0 | "
      "xargs -0 -r nm -g --defined-only 2>/dev/null | awk 'NF >= 3 {{print $3}}' | sort -u)",
      dir.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The names tried to define porttool_injected; only the sanitised identifiers that contain the
// words may exist (`..._porttool_injected_void_return_42_...`), never the function itself.
void ExpectNoInjectedSymbol(const fs::path& dir) {
  std::string symbols = DefinedSymbols(dir);
  EXPECT_FALSE(symbols.empty()) << "nothing compiled under " << dir
                                << RunShell("find " + dir.string()).out;
  EXPECT_EQ(("\n" + symbols).find("\nporttool_injected\n"), std::string::npos) << symbols;
  // The text may appear inside comments and literals only: no generated line starts with it.
  auto lines = RunShell(
      fmt::format("grep -rhE '^[[:space:]]*int porttool_injected' {} || true", dir.string()));
  EXPECT_EQ(lines.out, "");
}

TEST_F(HostileNamesTest, ScaffoldOpPackagesBuildWithoutInjectedCode) {
  for (const char* node : {"#0", "#1"}) {
    fs::path pkg = Dir() / fmt::format("pkg{}", node + 1);
    auto r = RunPorttool(fmt::format("scaffold-op {} --node '{}' --target all -o {}",
                                     Model("hostile"), node, pkg.string()));
    ASSERT_EQ(r.exit_code, 0) << node << ": " << r.err;
    auto build = RunShell(fmt::format(
        "cmake -S {0} -B {0}/build -DCMAKE_BUILD_TYPE=Release '-DCMAKE_C_FLAGS={1}' "
        "'-DCMAKE_CXX_FLAGS={1}' > {0}/configure.log 2>&1 && cmake --build {0}/build -j2 2>&1",
        pkg.string(), kStrict));
    ASSERT_EQ(build.exit_code, 0) << node << ": " << build.out << build.err
                                  << testing::ReadFile(pkg / "configure.log");
    ExpectNoInjectedSymbol(pkg / "build");
    // The Python toolkit class parses, warnings (invalid escapes) included. The RKNN, TensorRT
    // and TFLite Micro C/C++ adapters need their SDKs' headers and are not built here; their
    // names go through the same template filters as the ORT adapter, built above on its stub.
    auto py =
        RunShell(fmt::format("for f in {}/rknn/*.py; do {} -W error -c "
                             "\"import ast,sys; ast.parse(open(sys.argv[1]).read())\" "
                             "\"$f\" || exit 1; done",
                             pkg.string(), testing::kSystemPython));
    EXPECT_EQ(py.exit_code, 0) << node << ": " << py.err;
  }
}

TEST_F(HostileNamesTest, EmitHeaderAndKitCompile) {
  fs::path out = Dir() / "header";
  fs::create_directories(out);
  auto r = RunPorttool(fmt::format("emit-header {} -o {}/plain.h --arena --weights {}/w.c",
                                   Model("plain"), out.string(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto kit = RunPorttool(fmt::format("kit {} --node '#1' -o {}/kit", Model("plain"), out.string()));
  ASSERT_EQ(kit.exit_code, 0) << kit.err;
  auto build = RunShell(fmt::format(
      // kit.h is included by a kit's test, which uses its arrays; alone they are unused.
      "cd {0} && cc -std=c99 {1} -pedantic -c -x c plain.h -o h.o && "
      "c++ -std=c++17 {1} -fsyntax-only -x c++ plain.h && cc -std=c99 {1} -c w.c -o w.o && "
      "for h in $(find kit -name kit.h); do cc -std=c99 {1} -Wno-unused-const-variable -c -x c "
      "\"$h\" -o kit.o || exit 1; "
      "done",
      out.string(), kStrict));
  ASSERT_EQ(build.exit_code, 0) << build.out << build.err;
  ExpectNoInjectedSymbol(out);
}

// The weights source includes the header by its path, where C has no escapes: a path with a
// quote is refused before anything is written.
TEST_F(HostileNamesTest, HeaderPathAnIncludeCannotHoldIsRefused) {
  fs::path out = Dir() / "include";
  fs::create_directories(out);
  auto r = RunPorttool(fmt::format("emit-header {} -o '{}/a\"b.h' --weights {}/w.c", Model("plain"),
                                   out.string(), out.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("#include"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(HostileNamesTest, EmitRunnerBuilds) {
  fs::path split = Dir() / "split";
  auto r =
      RunPorttool(fmt::format("split {} --at '#1' -o {}", Model("plain_utf8"), split.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path pkg = Dir() / "runner";
  r = RunPorttool(fmt::format("emit-runner {}/pipeline.json -o {}", split.string(), pkg.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const char* pc = std::getenv("PORTTOOL_PKG_CONFIG_PATH");
  auto build = RunShell(
      fmt::format("PKG_CONFIG_PATH={0} cmake -S {1} -B {1}/build -DCMAKE_BUILD_TYPE=Release "
                  "'-DCMAKE_C_FLAGS={2}' >/dev/null && cmake --build {1}/build",
                  pc ? pc : "", pkg.string(), kStrict));
  ASSERT_EQ(build.exit_code, 0) << build.out << build.err;
  ExpectNoInjectedSymbol(pkg / "build");
}

}  // namespace
}  // namespace porttool
