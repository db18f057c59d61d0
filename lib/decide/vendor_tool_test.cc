// A profile's vendor_tool (target.h): each shipped profile names its tool with the values port's
// vendor step needs, and a malformed section is bad input naming the file and JSON pointer.
#include <gtest/gtest.h>

#include "lib/decide/target.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::decide::vendor_tool_test {
namespace {

TEST(VendorTool, ShippedProfilesNameTheirTool) {
  auto rules = testing::SourceDir() / "rules";
  struct Want {
    const char* target;
    const char* tool;
    const char* platform;
    const char* float_precision;
  };
  for (const Want& w : {Want{"rknn-rk3588", "rknn-toolkit2", "rk3588", "float16"},
                        Want{"rknn-rv1106", "rknn-toolkit2", "rv1106", ""},
                        Want{"jetson-orin", "trtexec", "", "fp16"},
                        Want{"stm32f767", "stedgeai", "stm32f7", "float32"},
                        Want{"onnxruntime-cpu", "none", "", ""}}) {
    SCOPED_TRACE(w.target);
    TargetProfile t = LoadTarget(rules, w.target);
    ASSERT_TRUE(t.vendor_tool.has_value());
    EXPECT_EQ(t.vendor_tool->tool, w.tool);
    EXPECT_EQ(t.vendor_tool->platform, w.platform);
    EXPECT_EQ(t.vendor_tool->float_precision, w.float_precision);
    EXPECT_FALSE(t.vendor_tool->source.empty());
  }
  // rv1106 replaces rk3588's section (extends): no float on its NPU, kept-float nodes go int16.
  TargetProfile rv = LoadTarget(rules, "rknn-rv1106");
  EXPECT_EQ(rv.vendor_tool->raised_precision.at("float"), "int16");
}

std::string LoadError(const testing::TempDir& dir, const std::string& vendor_tool) {
  testing::WriteFile(dir / "bad.json", R"({"schema": "porttool.target/1", "name": "bad",
  "title": "t", "sources": [{"document": "d", "toolkit": "k", "location": "l"}],
  "hardware": {"class": "cortex-m", "ram_bytes": 1, "flash_bytes": 1, "weights_in_ram": false,
               "has_host_cpu": false},
  "dtypes": {"supported": ["int8"], "weights": "int8", "activations": "int8"},
  "opset": {"min": 7, "max": 17}, "dynamic_shapes": {"support": "none", "text": "t"},
  "cpu_fallback": "none", "accelerator_ops": ["Conv"],
  "vendor_tool": )" + vendor_tool + "}");
  try {
    LoadTargetFile(dir / "bad.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "no error";
}

TEST(VendorTool, MalformedSectionNamesFileAndPointer) {
  testing::TempDir dir;
  EXPECT_EQ(LoadError(dir, R"({"tool": "none", "source": "s"})"), "no error");
  std::string e = LoadError(dir, R"({"tool": "tflite", "source": "s"})");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("/vendor_tool/tool"), std::string::npos) << e;
  e = LoadError(dir, R"({"tool": "stedgeai", "source": "s", "version": "3.0.0"})");
  EXPECT_NE(e.find("/vendor_tool/platform"), std::string::npos) << e;
  e = LoadError(dir, R"({"tool": "trtexec", "source": "s"})");
  EXPECT_NE(e.find("/vendor_tool/version"), std::string::npos) << e;
  e = LoadError(dir, R"({"tool": "none", "source": "s", "raised_precision": {"fp8": "x"}})");
  EXPECT_NE(e.find("/vendor_tool/raised_precision"), std::string::npos) << e;
  e = LoadError(dir, R"({"tool": "none"})");
  EXPECT_NE(e.find("/vendor_tool/source"), std::string::npos) << e;
}

}  // namespace
}  // namespace porttool::decide::vendor_tool_test
