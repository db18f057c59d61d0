// Issue 54 for the port bundle's vendor steps: tensor, node and file names holding quotes,
// backslashes, line breaks, trigraphs, `$()`, backticks, NUL and invalid UTF-8 reach
// rknn/convert.py as Python string literals that read back byte for byte (surrogateescape), the
// trtexec and stedgeai scripts as shell words (`sh -n` accepts them, no command runs), and the
// READMEs as visible text on one line.
#include "lib/emit/vendor_steps.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::TempDir;

std::string Evil() {
  return std::string("x\"'\\?\?/\n*/ $(touch INJECTED) `touch INJECTED` ${HOME};\r\xff") +
         std::string(1, '\0') + "\\";
}

VendorStepRequest Request(const std::string& tool) {
  VendorStepRequest q;
  q.target = "board";
  q.tool = VendorToolSpec{tool, "2.3.0", "rk3588", "float16", {}, "test"};
  VendorSegment seg;
  seg.stem = "00_accelerator";
  seg.file = "segments/00_accelerator.onnx";
  seg.inputs = {"in " + Evil()};
  seg.outputs = {"out " + Evil()};
  seg.input_dims = {{1, 4}};
  seg.float_nodes = {"node " + Evil()};
  q.segments = {seg};
  return q;
}

TEST(VendorSteps, RknnConvertPyReadsNamesBackByteForByte) {
  TempDir dir;
  auto r = WriteVendorSteps(Request("rknn-toolkit2"), dir.path());
  ASSERT_FALSE(r.files.empty());
  // The SEGMENTS literal, evaluated without running the script (it imports the toolkit).
  testing::WriteFile(dir / "check.py", R"(import ast, sys
tree = ast.parse(open(sys.argv[1], encoding='utf-8').read())
for node in tree.body:
    if isinstance(node, ast.Assign) and node.targets[0].id == 'SEGMENTS':
        seg = ast.literal_eval(node.value)[0]
        sys.stdout.buffer.write(seg['inputs'][0].encode('utf-8', 'surrogateescape') + b'|')
        sys.stdout.buffer.write(seg['outputs'][0].encode('utf-8', 'surrogateescape'))
)");
  auto run =
      RunShell(fmt::format("{} -W error {}/check.py {}/rknn/convert.py", testing::kSystemPython,
                           dir.path().string(), dir.path().string()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "in " + Evil() + "|out " + Evil());
}

TEST(VendorSteps, ScriptsAndReadmesHoldNamesAsText) {
  for (const char* tool : {"rknn-toolkit2", "trtexec", "stedgeai"}) {
    SCOPED_TRACE(tool);
    TempDir dir;
    VendorStepRequest q = Request(tool);
    if (std::string(tool) == "trtexec") q.tool->float_precision = "fp16";
    q.segments[0].file = "segments/" + Evil() + ".onnx";
    auto r = WriteVendorSteps(q, dir.path());
    ASSERT_FALSE(r.files.empty());
    for (const auto& f : r.files) {
      std::string text = testing::ReadFile(dir / f);
      if (f.ends_with(".sh")) {
        auto sh = RunShell(fmt::format("cd {} && sh -n {}", dir.path().string(), f));
        EXPECT_EQ(sh.exit_code, 0) << f << sh.err << text;
      }
      if (f.ends_with(".md") || f.ends_with(".sh") || f.ends_with(".py")) {
        EXPECT_EQ(text.find('\0'), std::string::npos) << f;
        EXPECT_EQ(text.find('\r'), std::string::npos) << f;
        EXPECT_EQ(text.find("$(touch INJECTED)\n"), std::string::npos) << f;
      }
    }
    EXPECT_FALSE(fs::exists(dir / "INJECTED"));
  }
}

}  // namespace
}  // namespace porttool::emit
