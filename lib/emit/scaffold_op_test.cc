// scaffold-op: the package for the demo model's Custom_GELU_0 describes the node (op.json read
// back), is byte-identical across runs and carries the model's sha256; every known activation's
// kernel passes its kit (expected outputs from porttool's executor) on the SSE2 path and the plain
// C fallback, compiled with -Wall -Wextra -Werror as C99 and as C++17; the generated schema
// registers through libonnx and infers the output shape; an unknown op gets a skeleton whose test
// fails with "not implemented". The SDK adapters: the ONNX Runtime one compiles with -Wall -Wextra
// -Werror against the package's stub of the C API and links into a library exporting only
// RegisterCustomOps; the RKNN callbacks, built against a contract shim, reproduce the kit; the NEON
// path parses for AArch64 and ARMv7 (clang, skipped without it); the TensorRT plugin and the TFLite
// Micro registration compile against contract shims; the RKNN toolkit class is valid Python;
// --target selects the adapters.
#include "lib/emit/scaffold_op.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "lib/emit/c_names.h"
#include "lib/emit/embedded_files.h"
#include "lib/emit/scaffold_adapters.h"
#include "lib/runtime/custom_op_library.h"
#include "lib/shape/input_shapes.h"
#include "lib/shape/test_models.h"
#include "lib/util/error.h"
#include "lib/util/sha256.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::TempDir;

constexpr const char* kCFlags = "gcc -std=c99 -O1 -Wall -Wextra -Werror -pedantic";
constexpr const char* kCxxFlags = "g++ -std=c++17 -O1 -Wall -Wextra -Werror -x c++";

// A one-op model whose op input spans [-6, 6) (x is random in [0, 1)), saved to a file so the
// package names its sha256.
io::Model ActivationModel(const TempDir& dir, const std::string& op, const std::string& domain,
                          const std::string& attrs) {
  std::string call = (domain.empty() ? "" : domain + ".") + op + attrs;
  std::string text = fmt::format(
      R"(<ir_version: 8, opset_import: ["" : 14, "com.microsoft" : 1, "porttool.test" : 1]>
g (float[2,3,5,7] x) => (float[2,3,5,7] y) {{
  half = Constant<value = float {{0.5}}>()
  twelve = Constant<value = float {{12.0}}>()
  c = Sub(x, half)
  t = Mul(c, twelve)
  y = {}(t)
}})",
      call);
  io::Model m = io::ParseText(text);
  m.proto.mutable_graph()->mutable_node(4)->set_name("act");
  io::Save(m, dir / (op + ".onnx"));
  return io::Load(dir / (op + ".onnx"));
}

std::map<std::string, std::string> ReadTree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) {
      files[fs::relative(e.path(), root).string()] = testing::ReadFile(e.path());
    }
  }
  return files;
}

// Builds the kit test twice (SSE2 and -DPT_NO_SIMD), with `strict_cxx` also the kernel and ABI
// glue as C++17 (and the glue as C99); returns
// the SIMD test's output, or a description of the failing step.
std::string BuildAndRunKitTest(const fs::path& pkg, const std::string& sym,
                               bool strict_cxx = false) {
  std::string k = (pkg / "kernel").string();
  std::string sources = fmt::format("{0}/{1}.c", k, sym);
  for (const char* define : {"", "-DPT_NO_SIMD"}) {
    auto build =
        RunShell(fmt::format("{} {} -I{} {}/test/{}_test.c {} -o {}/t{} -lm", kCFlags, define, k,
                             pkg.string(), sym, sources, pkg.string(), *define ? "_scalar" : ""));
    if (build.exit_code != 0) return "C99 build failed: " + build.err;
  }
  if (strict_cxx) {
    auto cxx = RunShell(fmt::format("{} -I{} -fsyntax-only {}/{}.c {}/{}_porttool.c", kCxxFlags, k,
                                    k, sym, k, sym));
    if (cxx.exit_code != 0) return "C++17 build failed: " + cxx.err;
    auto glue = RunShell(fmt::format("{} -I{} -fsyntax-only {}/{}_porttool.c", kCFlags, k, k, sym));
    if (glue.exit_code != 0) return "glue C99 build failed: " + glue.err;
  }
  auto simd = RunShell(pkg.string() + "/t");
  auto scalar = RunShell(pkg.string() + "/t_scalar");
  return simd.out + "|scalar: " + scalar.out;
}

bool HaveClang() { return RunShell("command -v clang >/dev/null 2>&1").exit_code == 0; }

// The kernel's NEON path cannot run here; this checks that it parses and type-checks as C99 for
// AArch64 and for ARMv7 (no vector divide there) with warnings as errors, and that the NEON path
// is the one compiled. The Arm sysroot is not installed: tiny math.h / string.h shims declare what
// the kernel uses. "" when fine. Needs clang (the caller skips without it).
std::string NeonSyntaxCheck(const fs::path& pkg, const std::string& sym) {
  fs::path shim = pkg / "neon_shim";
  fs::create_directories(shim);
  testing::WriteFile(shim / "math.h",
                     "float fabsf(float);\nfloat expf(float);\nfloat erff(float);\n"
                     "float tanhf(float);\n");
  testing::WriteFile(shim / "string.h",
                     "#include <stddef.h>\nvoid* memset(void*, int, size_t);\n"
                     "int strcmp(const char*, const char*);\n");
  testing::WriteFile(shim / "neon_check.c",
                     fmt::format("#include \"{0}.c\"\n#ifndef {1}_NEON\n#error no NEON path\n"
                                 "#endif\n",
                                 sym, ToUpper(sym)));
  for (const char* target :
       {"--target=aarch64-linux-gnu", "--target=armv7a-linux-gnueabihf -mfpu=neon"}) {
    auto r = RunShell(fmt::format(
        "clang {} -std=c99 -Wall -Wextra -Werror -pedantic -ffreestanding -fsyntax-only "
        "-isystem {} -I{} {}",
        target, shim.string(), (pkg / "kernel").string(), (shim / "neon_check.c").string()));
    if (r.exit_code != 0) return std::string(target) + ": " + r.err;
  }
  return "";
}

// "SIMD verdict|plain C verdict" from BuildAndRunKitTest's output.
std::string Verdicts(const std::string& out) {
  auto verdict = [](const std::string& text) {
    size_t end = text.find(" failed");
    size_t begin = text.rfind('\n', end);
    return end == std::string::npos
               ? std::string("none")
               : text.substr(begin == std::string::npos ? 0 : begin + 1,
                             end + 7 - (begin == std::string::npos ? 0 : begin + 1));
  };
  size_t split = out.find("|scalar: ");
  if (split == std::string::npos) return "build failed";
  return verdict(out.substr(0, split)) + "|" + verdict(out.substr(split));
}

TEST(ScaffoldOpTest, DemoGeluPackageDescribesTheNodeAndIsDeterministic) {
  TempDir dir;
  io::Model model = testing::DemoModel();
  ScaffoldResult a = ScaffoldOp(model, {"Custom_GELU_0", 0}, dir / "a");
  ScaffoldOp(model, {"Custom_GELU_0", 0}, dir / "b");
  const auto& spec = a.spec;
  EXPECT_EQ(spec.domain, "com.microsoft");
  EXPECT_EQ(spec.op_type, "Gelu");
  EXPECT_EQ(spec.kernel, "gelu");
  EXPECT_EQ(spec.shape_rule, "same_as_input");
  ASSERT_EQ(spec.inputs.size(), 1u);
  EXPECT_EQ(spec.inputs[0].shape, (std::vector<int64_t>{1, 32, 16, 16}));
  EXPECT_EQ(spec.outputs[0].shape, (std::vector<int64_t>{1, 32, 16, 16}));
  EXPECT_EQ(spec.source_sha256, util::Sha256File(testing::TestData("demo_detector.onnx")));

  shape::CustomOpSpec back = shape::ReadOpSpec(dir / "a");
  EXPECT_EQ(shape::OpSpecToJson(back), shape::OpSpecToJson(spec));
  // Byte-identical, adapters included, also when written elsewhere (no paths in the text).
  ScaffoldOp(model, {"Custom_GELU_0", 0}, dir / "elsewhere" / "c");
  auto files_a = ReadTree(dir / "a"), files_b = ReadTree(dir / "b");
  EXPECT_EQ(files_a, files_b);
  EXPECT_EQ(files_a, ReadTree(dir / "elsewhere" / "c"));
  for (const char* f :
       {"op.json", "CMakeLists.txt", "kernel/gelu.c", "kernel/gelu.h", "kernel/gelu_porttool.c",
        "schema/gelu_schema.cc", "test/gelu_test.c", "test/kit/model.onnx", "test/kit/kit.json",
        "test/kit/kit.h", "test/kit/test_data_set_0/input_0.pb"}) {
    EXPECT_TRUE(files_a.count(f)) << f;
  }
  EXPECT_NE(files_a["kernel/gelu.c"].find(spec.source_sha256), std::string::npos);
  const char* adapter_files[] = {
      "ort/gelu_ort.cc",       "ort/exports.lds",         "ort/stub/onnxruntime_c_api.h",
      "ort/README.md",         "rknn/gelu_rknn.c",        "rknn/gelu_rknn.h",
      "rknn/librkcst_gelu.c",  "rknn/cstGelu_toolkit.py", "rknn/README.md",
      "tensorrt/GeluPlugin.h", "tensorrt/GeluPlugin.cpp", "tensorrt/README.md",
      "tflm/gelu_tflm.h",      "tflm/gelu_tflm.cc",       "tflm/README.md"};
  for (const char* f : adapter_files) {
    ASSERT_TRUE(files_a.count(f)) << f;
    if (fs::path(f).filename() != "exports.lds" && fs::path(f).parent_path() != "ort/stub") {
      EXPECT_NE(files_a[f].find(spec.source_sha256), std::string::npos) << f;
    }
  }
  EXPECT_EQ(a.files.size(), 11u + std::size(adapter_files));
  // ORT owns com.microsoft (its contrib Gelu): the library registers porttool.custom::Gelu and
  // the README's model patch moves the node there.
  EXPECT_NE(files_a["ort/gelu_ort.cc"].find("kDomain = \"porttool.custom\""), std::string::npos);
  EXPECT_NE(files_a["ort/README.md"].find("n.domain = \"porttool.custom\""), std::string::npos);
  EXPECT_NE(files_a["ort/README.md"].find("register_custom_ops_library"), std::string::npos);
  EXPECT_NE(files_a["ort/exports.lds"].find("global: RegisterCustomOps;"), std::string::npos);
  EXPECT_NE(files_a["rknn/gelu_rknn.c"].find("rknn_register_custom_ops(ctx"), std::string::npos);
  EXPECT_NE(files_a["rknn/cstGelu_toolkit.py"].find("def shape_infer(self, node, in_shapes"),
            std::string::npos);
  EXPECT_NE(files_a["tensorrt/GeluPlugin.h"].find("kPluginName[] = \"Gelu\""), std::string::npos);
  EXPECT_NE(files_a["tensorrt/GeluPlugin.h"].find("kPluginVersion[] = \"1\""), std::string::npos);
  EXPECT_NE(files_a["tflm/gelu_tflm.cc"].find("RegisterOp(Init, Prepare, Invoke)"),
            std::string::npos);
  for (const char* root : {"ONNXRUNTIME_ROOT", "RKNN_SDK_ROOT", "TENSORRT_ROOT", "TFLM_ROOT"}) {
    EXPECT_NE(files_a["CMakeLists.txt"].find(fmt::format("if({})", root)), std::string::npos)
        << root;
  }
  EXPECT_EQ(Verdicts(BuildAndRunKitTest(dir / "a", "gelu", /*strict_cxx=*/true)),
            "1 passed, 0 failed|1 passed, 0 failed");
  EXPECT_EQ(files_a["kernel/porttool_custom_op.h"],
            testing::ReadFile(testing::SourceDir() / "lib/runtime/custom_op_abi.h"));
}

TEST(ScaffoldOpTest, KnownKernelsPassTheirKitsOnSimdAndPlainC) {
  struct Case {
    const char* op;
    const char* domain;
    const char* attrs;
  };
  const Case cases[] = {
      {"Gelu", "com.microsoft", ""},
      {"FastGelu", "com.microsoft", ""},
      {"QuickGelu", "com.microsoft", "<alpha = 1.5>"},
      {"HardSwish", "", ""},
      {"HardSigmoid", "", "<alpha = 0.3>"},
      {"Relu", "", ""},
      {"LeakyRelu", "", "<alpha = 0.2>"},
      {"Elu", "", "<alpha = 0.7>"},
      {"Selu", "", ""},
      {"Sigmoid", "", ""},
      {"Tanh", "", ""},
      {"Softsign", "", ""},
      {"Exp", "", ""},
      {"Erf", "", ""},
      {"Abs", "", ""},
      {"Neg", "", ""},
      {"ThresholdedRelu", "", "<alpha = 2.0>"},
  };
  const bool clang = HaveClang();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    TempDir dir;
    io::Model model = ActivationModel(dir, c.op, c.domain, c.attrs);
    ScaffoldResult r = ScaffoldOp(model, {"act", 3}, dir / "pkg");
    EXPECT_TRUE(HasKnownKernel(c.op));
    std::string out = BuildAndRunKitTest(dir / "pkg", r.spec.symbol);
    EXPECT_EQ(Verdicts(out), "1 passed, 0 failed|1 passed, 0 failed") << out;
    if (clang) {
      EXPECT_EQ(NeonSyntaxCheck(dir / "pkg", r.spec.symbol), "");
    }
  }
  if (!clang) {
    PORTTOOL_SKIP_MISSING(
        "clang not installed: the kernels ran here, but their NEON paths were not "
        "syntax-checked for AArch64/ARMv7 (scripts/setup.sh installs clang)");
  }
}

TEST(ScaffoldOpTest, KitTestCatchesAWrongKernel) {
  TempDir dir;
  io::Model model = ActivationModel(dir, "Gelu", "com.microsoft", "");
  ScaffoldOp(model, {"act", 0}, dir / "pkg");
  // Swap erf for tanh: close in shape, wrong in value.
  std::string kernel = testing::ReadFile(dir / "pkg/kernel/gelu.c");
  size_t at = kernel.find("pt_s_erf(pt_s_mul(");
  ASSERT_NE(at, std::string::npos);
  kernel.replace(at, 8, "pt_s_tanh");
  testing::WriteFile(dir / "pkg/kernel/gelu.c", kernel);
  std::string out = BuildAndRunKitTest(dir / "pkg", "gelu");
  EXPECT_EQ(Verdicts(out), "0 passed, 1 failed|0 passed, 1 failed") << out;
}

TEST(ScaffoldOpTest, SchemaRegistersThroughLibonnxAndInfersTheOutputShape) {
  TempDir dir;
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0}, dir / "pkg");
  std::string s = (dir / "pkg/schema").string();
  auto build = RunShell(fmt::format(
      "g++ -std=c++17 -Wall -Wextra -Werror -DONNX_NAMESPACE=onnx -DONNX_ML=1 {0}/gelu_schema.cc "
      "{0}/gelu_schema_test.cc -o {0}/t -lonnx -lonnx_proto -lprotobuf -lpthread",
      s));
  ASSERT_EQ(build.exit_code, 0) << build.err;
  auto run = RunShell(s + "/t");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("inferred output rank 4"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1 passed, 0 failed"), std::string::npos) << run.out;
}

TEST(ScaffoldOpTest, UnknownOpGetsASkeletonThatSaysNotImplemented) {
  TempDir dir;
  io::Model model = ActivationModel(dir, "DeformThing", "porttool.test", "<groups = 2>");
  ScaffoldResult r = ScaffoldOp(model, {"act", 0}, dir / "pkg");
  EXPECT_EQ(r.spec.kernel, "skeleton");
  ASSERT_EQ(r.spec.attributes.size(), 1u);
  EXPECT_EQ(r.spec.attributes[0].name, "groups");
  EXPECT_EQ(r.spec.attributes[0].default_value, 2);
  std::string k = (dir / "pkg/kernel").string();
  auto build =
      RunShell(fmt::format("{} -I{} {}/test/deformthing_test.c {}/deformthing.c -o {}/t "
                           "-lm",
                           kCFlags, k, (dir / "pkg").string(), k, k));
  ASSERT_EQ(build.exit_code, 0) << build.err;
  auto run = RunShell(k + "/t");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("not implemented"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("0 passed, 1 failed"), std::string::npos) << run.out;
}

// The dynamic symbols a shared library defines, one per line, sorted (version nodes left out).
std::string ExportedSymbols(const fs::path& lib) {
  // (RunShell redirects the last command's stdin: the pipeline runs in a subshell.)
  auto nm =
      RunShell(fmt::format("(nm -D --defined-only {} | awk '$2 != \"A\" {{print $3}}' | "
                           "sed 's/@.*//' | sort)",
                           lib.string()));
  return nm.out;
}

// The ONNX Runtime adapter for `pkg`: compiled with -Wall -Wextra -Werror against the package's
// stub of the C API, linked (with the kernel) into a shared library through exports.lds; returns
// the library's exported symbols, or the failing step.
std::string OrtAdapterExports(const fs::path& pkg, const std::string& sym) {
  std::string p = pkg.string();
  auto kernel =
      RunShell(fmt::format("{} -fPIC -fvisibility=hidden -I{}/kernel -c {}/kernel/{}.c "
                           "-o {}/kernel.o",
                           kCFlags, p, p, sym, p));
  if (kernel.exit_code != 0) return "kernel: " + kernel.err;
  auto lib = RunShell(fmt::format(
      "g++ -std=c++17 -O1 -Wall -Wextra -Werror -pedantic -fPIC -fvisibility=hidden -shared "
      "-DPT_ORT_STUB_COMPILE_ONLY -I{0}/ort/stub -I{0}/kernel {0}/ort/{1}_ort.cc {0}/kernel.o "
      "-Wl,--version-script={0}/ort/exports.lds -o {0}/lib{1}_ort.so -lm",
      p, sym));
  if (lib.exit_code != 0) return "adapter: " + lib.err;
  return ExportedSymbols(pkg / ("lib" + sym + "_ort.so"));
}

// A fake ONNX Runtime host, compiled against the stub: RegisterCustomOps must ask for API 17, add
// one domain holding one op, and fill every OrtCustomOp member ONNX Runtime reads for version 17
// (it calls GetInputMemoryType for any version > 12 without a null check: custom_ops.cc).
constexpr const char* kOrtHost = R"(#include <onnxruntime_c_api.h>
#include <string>
#include <cstdio>
#include <cstring>
extern "C" OrtStatus* RegisterCustomOps(OrtSessionOptions*, const OrtApiBase*);
static const OrtCustomOp* added = nullptr;
static std::string domain_name;
static int domains = 0, requested = 0;
static OrtApi api;
static const OrtApi* GetApi(uint32_t v) noexcept { requested = static_cast<int>(v); return &api; }
int main() {
  api.CreateCustomOpDomain = [](const char* d, OrtCustomOpDomain** out) noexcept -> OrtStatus* {
    domain_name = d;
    *out = reinterpret_cast<OrtCustomOpDomain*>(&domain_name);
    return nullptr;
  };
  api.CustomOpDomain_Add = [](OrtCustomOpDomain*, const OrtCustomOp* op) noexcept -> OrtStatus* {
    added = op;
    return nullptr;
  };
  api.AddCustomOpDomain = [](OrtSessionOptions*, OrtCustomOpDomain*) noexcept -> OrtStatus* {
    ++domains;
    return nullptr;
  };
  OrtApiBase base = {GetApi, nullptr};
  if (RegisterCustomOps(nullptr, &base) != nullptr || added == nullptr) return 2;
  const OrtCustomOp* op = added;
  bool all = op->GetName && op->GetExecutionProviderType && op->GetInputType &&
             op->GetInputTypeCount && op->GetOutputType && op->GetOutputTypeCount &&
             op->KernelDestroy && op->GetInputCharacteristic && op->GetOutputCharacteristic &&
             op->GetInputMemoryType && op->GetVariadicInputMinArity &&
             op->GetVariadicInputHomogeneity && op->GetVariadicOutputMinArity &&
             op->GetVariadicOutputHomogeneity && op->CreateKernelV2 && op->KernelComputeV2 &&
             op->InferOutputShapeFn && op->GetStartVersion && op->GetEndVersion;
  std::printf("api %d version %u domains %d %s::%s inputs %zu type %d memtype %d all %d\n",
              requested, op->version, domains, domain_name.c_str(), op->GetName(op),
              op->GetInputTypeCount(op), static_cast<int>(op->GetInputType(op, 0)),
              static_cast<int>(op->GetInputMemoryType(op, 0)), all ? 1 : 0);
  return 0;
}
)";

TEST(ScaffoldOpTest, OrtAdapterCompilesAgainstTheStubAndExportsOnlyRegisterCustomOps) {
  TempDir dir;
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0}, dir / "gelu");
  EXPECT_EQ(OrtAdapterExports(dir / "gelu", "gelu"), "RegisterCustomOps\n");
  testing::WriteFile(dir / "gelu/ort_host.cc", kOrtHost);
  auto host =
      RunShell(fmt::format("g++ -std=c++17 -Wall -Wextra -Werror -DPT_ORT_STUB_COMPILE_ONLY "
                           "-I{0}/ort/stub {0}/ort_host.cc "
                           "-L{0} -lgelu_ort -Wl,-rpath,{0} -o {0}/ort_host && {0}/ort_host",
                           (dir / "gelu").string()));
  ASSERT_EQ(host.exit_code, 0) << host.out << host.err;
  EXPECT_EQ(host.out,
            "api 17 version 17 domains 1 porttool.custom::Gelu inputs 1 type 1 memtype 0 all 1\n");

  // Every attribute type, an optional input (FastGelu's bias) and a static shape rule.
  io::Model attrs = ActivationModel(dir, "Thing", "porttool.test",
                                    "<f = 1.5, i = 2, s = \"mode\", fs = [1.0, 2.5], is = [3, 4]>");
  ScaffoldResult r = ScaffoldOp(attrs, {"act", 0}, dir / "thing");
  ASSERT_EQ(r.spec.attributes.size(), 5u);
  EXPECT_EQ(OrtAdapterExports(dir / "thing", "thing"), "RegisterCustomOps\n");
  // A custom domain is kept: no model patch.
  EXPECT_NE(testing::ReadFile(dir / "thing/ort/thing_ort.cc").find("kDomain = \"porttool.test\""),
            std::string::npos);
  ScaffoldOp(ActivationModel(dir, "FastGelu", "com.microsoft", ""), {"act", 0}, dir / "fast");
  EXPECT_EQ(OrtAdapterExports(dir / "fast", "fastgelu"), "RegisterCustomOps\n");
  EXPECT_NE(testing::ReadFile(dir / "fast/ort/fastgelu_ort.cc")
                .find("kInputOptional[kNumInputs] = {false, true}"),
            std::string::npos);

  // The package's CMake branch for a real SDK (-DONNXRUNTIME_ROOT) builds lib<op>_ort.so through
  // exports.lds. No SDK here: a stand-in root holding the stub exercises that branch.
  fs::create_directories(dir / "fakeort/include");
  fs::copy_file(dir / "gelu/ort/stub/onnxruntime_c_api.h",
                dir / "fakeort/include/onnxruntime_c_api.h");
  auto cmake = RunShell(fmt::format(
      "cmake -S {0} -B {0}/sdk -DCMAKE_DISABLE_FIND_PACKAGE_ONNX=ON -DONNXRUNTIME_ROOT={1} "
      "-DCMAKE_CXX_FLAGS=-DPT_ORT_STUB_COMPILE_ONLY >/dev/null && cmake --build {0}/sdk "
      "--target gelu_ort",
      (dir / "gelu").string(), (dir / "fakeort").string()));
  ASSERT_EQ(cmake.exit_code, 0) << cmake.out << cmake.err;
  EXPECT_EQ(ExportedSymbols(dir / "gelu/sdk/libgelu_ort.so"), "RegisterCustomOps\n");

  // The static shape rule, through the generator directly.
  shape::CustomOpSpec spec = r.spec;
  spec.shape_rule = "static";
  spec.outputs[0].shape = {2, 105};
  AdapterFiles ort = GenerateAdapter("ort", spec, TemplateVarsFor(spec), "", false);
  EXPECT_NE(ort.files["ort/thing_ort.cc"].find("kOutputDims[kNumOutputs] = {{2, 105}}"),
            std::string::npos);

  // The stub refuses to be mistaken for the SDK.
  auto bare =
      RunShell(fmt::format("(echo '#include <onnxruntime_c_api.h>' | g++ -x c++ "
                           "-fsyntax-only -I{}/ort/stub -)",
                           (dir / "gelu").string()));
  EXPECT_NE(bare.exit_code, 0);
  EXPECT_NE(bare.err.find("compile-only"), std::string::npos) << bare.err;
}

// A contract shim for the RKNN runtime's custom-op API, written from the documented fields
// (rknn_custom_op.h / RKNPU user guide 5.5), not a copy of the SDK headers: enough to compile the
// generated callbacks and drive them with host buffers laid out as librknnrt passes them.
constexpr const char* kRknnApiShim = R"(#pragma once
#include <stdint.h>
#define RKNN_MAX_DIMS 16
#define RKNN_MAX_NAME_LEN 256
typedef uint64_t rknn_context;
typedef enum { RKNN_TENSOR_NCHW = 0, RKNN_TENSOR_NHWC, RKNN_TENSOR_NC1HWC2, RKNN_TENSOR_UNDEFINED }
    rknn_tensor_format;
typedef enum { RKNN_TENSOR_FLOAT32 = 0, RKNN_TENSOR_FLOAT16, RKNN_TENSOR_INT8, RKNN_TENSOR_UINT8,
               RKNN_TENSOR_INT16, RKNN_TENSOR_UINT16, RKNN_TENSOR_INT32, RKNN_TENSOR_UINT32,
               RKNN_TENSOR_INT64, RKNN_TENSOR_BOOL } rknn_tensor_type;
typedef struct { uint32_t index, n_dims, dims[RKNN_MAX_DIMS]; char name[RKNN_MAX_NAME_LEN];
                 uint32_t n_elems, size; rknn_tensor_format fmt; rknn_tensor_type type; }
    rknn_tensor_attr;
typedef struct { void* virt_addr; uint64_t phys_addr; int32_t fd; int32_t offset; uint32_t size;
                 uint32_t flags; void* priv_data; } rknn_tensor_mem;
)";
constexpr const char* kRknnCustomOpShim = R"(#pragma once
#include "rknn_api.h"
typedef enum { RKNN_TARGET_TYPE_CPU = 1, RKNN_TARGET_TYPE_GPU = 2 } rknn_target_type;
typedef struct { rknn_target_type target; void* priv_data; } rknn_custom_op_context;
typedef struct { rknn_tensor_attr attr; rknn_tensor_mem mem; } rknn_custom_op_tensor;
typedef struct { char name[RKNN_MAX_NAME_LEN]; rknn_tensor_type dtype; uint32_t n_elems;
                 void* data; } rknn_custom_op_attr;
typedef int (*rknn_custom_op_fn)(rknn_custom_op_context*, rknn_custom_op_tensor*, uint32_t,
                                 rknn_custom_op_tensor*, uint32_t);
typedef struct { uint32_t version; rknn_target_type target; char op_type[RKNN_MAX_NAME_LEN];
                 char cl_kernel_name[RKNN_MAX_NAME_LEN]; char* cl_kernel_source;
                 uint64_t cl_source_size; char cl_build_options[RKNN_MAX_NAME_LEN];
                 rknn_custom_op_fn init, prepare, compute, compute_native;
                 int (*destroy)(rknn_custom_op_context*); } rknn_custom_op;
int rknn_register_custom_ops(rknn_context ctx, rknn_custom_op* op, uint32_t custom_op_num);
void rknn_custom_op_get_op_attr(rknn_custom_op_context* op_ctx, const char* attr_name,
                                rknn_custom_op_attr* op_attr);
)";

// Plays librknnrt: registers the op, hands it alpha = ALPHA, runs init/compute/destroy on the
// kit's NCHW float32 data (base + offset addressing), and checks the output against the kit; an
// NHWC input must be refused.
constexpr const char* kRknnDriver = R"(#include <math.h>
#include <stdio.h>
#include <string.h>
#include "leakyrelu_rknn.h"
#include "kit/kit.h"
static rknn_custom_op* registered;
int rknn_register_custom_ops(rknn_context ctx, rknn_custom_op* op, uint32_t n) {
  (void)ctx;
  registered = n == 1 ? op : NULL;
  return 0;
}
static float alpha = ALPHA;
void rknn_custom_op_get_op_attr(rknn_custom_op_context* c, const char* name,
                                rknn_custom_op_attr* a) {
  (void)c;
  if (strcmp(name, "alpha") == 0) {
    a->dtype = RKNN_TENSOR_FLOAT32;
    a->n_elems = 1;
    a->data = &alpha;
  }
}
static float in_buf[16 + LEAKYRELU_ACT_INPUT_0_COUNT], out_buf[8 + LEAKYRELU_ACT_OUTPUT_0_COUNT];
static void describe(rknn_custom_op_tensor* t, const int64_t* dims, int rank, void* base,
                     int32_t offset) {
  int i;
  memset(t, 0, sizeof *t);
  t->attr.n_dims = (uint32_t)rank;
  for (i = 0; i < rank; ++i) t->attr.dims[i] = (uint32_t)dims[i];
  t->attr.fmt = RKNN_TENSOR_NCHW;
  t->attr.type = RKNN_TENSOR_FLOAT32;
  t->mem.virt_addr = base;
  t->mem.offset = offset;
}
int main(void) {
  rknn_custom_op_context ctx;
  rknn_custom_op_tensor in, out;
  long i, bad = 0;
  int refused;
  memset(&ctx, 0, sizeof ctx);
  if (leakyrelu_rknn_register(1) != 0 || registered == NULL ||
      strcmp(registered->op_type, "cstLeakyRelu") != 0) return 2;
  memcpy(in_buf + 16, leakyrelu_act_input_0, sizeof leakyrelu_act_input_0);
  describe(&in, leakyrelu_act_input_0_dims, LEAKYRELU_ACT_INPUT_0_RANK, in_buf, 16 * 4);
  describe(&out, leakyrelu_act_output_0_dims, LEAKYRELU_ACT_OUTPUT_0_RANK, out_buf, 8 * 4);
  if (registered->init(&ctx, &in, 1, &out, 1) != 0) return 3;
  if (registered->compute(&ctx, &in, 1, &out, 1) != 0) return 4;
  for (i = 0; i < LEAKYRELU_ACT_OUTPUT_0_COUNT; ++i) {
    double want = leakyrelu_act_output_0[i], err = fabs(out_buf[8 + i] - want);
    if (!(err <= LEAKYRELU_ACT_ATOL + LEAKYRELU_ACT_RTOL * fabs(want))) ++bad;
  }
  in.attr.fmt = RKNN_TENSOR_NHWC;
  refused = registered->compute(&ctx, &in, 1, &out, 1) == -1;
  registered->destroy(&ctx);
  printf("%d passed, %d failed\n", bad == 0 && refused, !(bad == 0 && refused));
  return 0;
}
)";

TEST(ScaffoldOpTest, RknnCallbacksRunTheKernelThroughAContractShim) {
  TempDir dir;
  ScaffoldOp(ActivationModel(dir, "LeakyRelu", "", "<alpha = 0.2>"), {"act", 0}, dir / "pkg");
  fs::path pkg = dir / "pkg";
  fs::create_directories(pkg / "shim");
  testing::WriteFile(pkg / "shim/rknn_api.h", kRknnApiShim);
  testing::WriteFile(pkg / "shim/rknn_custom_op.h", kRknnCustomOpShim);
  testing::WriteFile(pkg / "test/rknn_driver.c", kRknnDriver);
  std::string p = pkg.string();
  for (const char* alpha : {"0.2f", "0.5f"}) {
    SCOPED_TRACE(alpha);
    auto build = RunShell(fmt::format(
        "{0} -DALPHA={1} -I{2}/shim -I{2}/kernel -I{2}/rknn {2}/test/rknn_driver.c "
        "{2}/rknn/leakyrelu_rknn.c {2}/rknn/librkcst_leakyrelu.c {2}/kernel/leakyrelu.c "
        "-o {2}/rknn_driver -lm",
        kCFlags, alpha, p));
    ASSERT_EQ(build.exit_code, 0) << build.err;
    auto run = RunShell(p + "/rknn_driver");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    // alpha 0.5 is not the kit's: the attribute read through rknn_custom_op_get_op_attr is used.
    EXPECT_NE(
        run.out.find(std::string(alpha) == "0.2f" ? "1 passed, 0 failed" : "0 passed, 1 failed"),
        std::string::npos)
        << run.out;
  }
}

// TensorRT 10's plugin interfaces as documented (IPluginV3 + IPluginV3One{Core,Build,Runtime},
// IPluginCreatorV3One, PluginField), reduced to what the plugin uses: written here, not copied
// from NvInfer headers, which are not installed. It catches template regressions, not API drift.
constexpr const char* kCudaShim = R"(#pragma once
#include <cstddef>
typedef struct CUstream_st* cudaStream_t;
enum cudaError_t { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
cudaError_t cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
)";
constexpr const char* kTrtShim = R"(#pragma once
#include <cstdint>
#include <cstddef>
#include "cuda_runtime_api.h"
namespace nvinfer1 {
using AsciiChar = char;
enum class DataType : int32_t { kFLOAT, kHALF, kINT8, kINT32, kBOOL, kUINT8, kFP8, kBF16, kINT64, kINT4 };
enum class TensorFormat : int32_t { kLINEAR };
enum class PluginFieldType : int32_t { kFLOAT16, kFLOAT32, kFLOAT64, kINT8, kINT16, kINT32, kCHAR, kDIMS, kUNKNOWN, kBF16, kINT64 };
enum class PluginCapabilityType : int32_t { kCORE, kBUILD, kRUNTIME };
enum class TensorRTPhase : int32_t { kBUILD, kRUNTIME };
struct Dims { int32_t nbDims; int64_t d[8]; };
class IDimensionExpr {};
struct DimsExprs { int32_t nbDims; IDimensionExpr const* d[8]; };
class IExprBuilder { public: IDimensionExpr const* constant(int64_t); };
struct PluginTensorDesc { Dims dims; DataType type; TensorFormat format; float scale; };
struct DynamicPluginTensorDesc { PluginTensorDesc desc; Dims min, max, opt; };
struct PluginField { AsciiChar const* name; void const* data; PluginFieldType type; int32_t length;
  PluginField(AsciiChar const* n = nullptr, void const* d = nullptr, PluginFieldType t = PluginFieldType::kUNKNOWN, int32_t l = 0) : name(n), data(d), type(t), length(l) {} };
struct PluginFieldCollection { int32_t nbFields; PluginField const* fields; };
class IPluginCapability { public: virtual ~IPluginCapability() = default; };
class IPluginResourceContext {};
class ILoggerFinder {};
class IPluginV3 { public: virtual ~IPluginV3() = default;
  virtual IPluginCapability* getCapabilityInterface(PluginCapabilityType) noexcept = 0;
  virtual IPluginV3* clone() noexcept = 0; };
class IPluginV3OneCore : public IPluginCapability { public:
  virtual char const* getPluginName() const noexcept = 0;
  virtual char const* getPluginVersion() const noexcept = 0;
  virtual char const* getPluginNamespace() const noexcept = 0; };
class IPluginV3OneBuild : public IPluginCapability { public:
  virtual int32_t configurePlugin(DynamicPluginTensorDesc const*, int32_t, DynamicPluginTensorDesc const*, int32_t) noexcept = 0;
  virtual int32_t getOutputDataTypes(DataType*, int32_t, DataType const*, int32_t) const noexcept = 0;
  virtual int32_t getOutputShapes(DimsExprs const*, int32_t, DimsExprs const*, int32_t, DimsExprs*, int32_t, IExprBuilder&) noexcept = 0;
  virtual bool supportsFormatCombination(int32_t, DynamicPluginTensorDesc const*, int32_t, int32_t) noexcept = 0;
  virtual int32_t getNbOutputs() const noexcept = 0;
  virtual size_t getWorkspaceSize(DynamicPluginTensorDesc const*, int32_t, DynamicPluginTensorDesc const*, int32_t) const noexcept { return 0; } };
class IPluginV3OneRuntime : public IPluginCapability { public:
  virtual int32_t setTactic(int32_t) noexcept { return 0; }
  virtual int32_t onShapeChange(PluginTensorDesc const*, int32_t, PluginTensorDesc const*, int32_t) noexcept = 0;
  virtual int32_t enqueue(PluginTensorDesc const*, PluginTensorDesc const*, void const* const*, void* const*, void*, cudaStream_t) noexcept = 0;
  virtual IPluginV3* attachToContext(IPluginResourceContext*) noexcept = 0;
  virtual PluginFieldCollection const* getFieldsToSerialize() noexcept = 0; };
class IPluginCreatorInterface { public: virtual ~IPluginCreatorInterface() = default; };
class IPluginCreatorV3One : public IPluginCreatorInterface { public:
  virtual IPluginV3* createPlugin(AsciiChar const*, PluginFieldCollection const*, TensorRTPhase) noexcept = 0;
  virtual PluginFieldCollection const* getFieldNames() noexcept = 0;
  virtual AsciiChar const* getPluginName() const noexcept = 0;
  virtual AsciiChar const* getPluginVersion() const noexcept = 0;
  virtual AsciiChar const* getPluginNamespace() const noexcept = 0; };
class IPluginRegistry { public: bool registerCreator(IPluginCreatorInterface&, AsciiChar const*) noexcept; };
}
extern "C" nvinfer1::IPluginRegistry* getPluginRegistry() noexcept;
)";

TEST(ScaffoldOpTest, TensorRtPluginCompilesAgainstAContractShim) {
  TempDir dir;
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0, {"tensorrt"}}, dir / "pkg");
  std::string p = (dir / "pkg").string();
  fs::create_directories(dir / "pkg/shim");
  testing::WriteFile(dir / "pkg/shim/cuda_runtime_api.h", kCudaShim);
  testing::WriteFile(dir / "pkg/shim/NvInferRuntime.h", kTrtShim);
  auto build =
      RunShell(fmt::format("{} -fsyntax-only -I{}/shim -I{}/kernel -I{}/tensorrt "
                           "{}/tensorrt/GeluPlugin.cpp",
                           kCxxFlags, p, p, p, p));
  EXPECT_EQ(build.exit_code, 0) << build.err;
}

// TFLite Micro's kernel API and flexbuffers as documented (TFLMRegistration, RegisterOp,
// GetEvalInput/Output, MicroContext temp tensors, the arena calls of TfLiteContext), reduced to
// what the adapter uses: like the TensorRT shim, it keeps the template compiling, no more.
constexpr const char* kTflmKernelUtilShim = R"(#pragma once
#include <stddef.h>
#include <stdint.h>
typedef enum { kTfLiteOk = 0, kTfLiteError = 1 } TfLiteStatus;
typedef enum { kTfLiteNoType = 0, kTfLiteFloat32 = 1, kTfLiteInt32 = 2, kTfLiteUInt8 = 3,
               kTfLiteInt64 = 4, kTfLiteInt8 = 9 } TfLiteType;
typedef struct { int size; int data[1]; } TfLiteIntArray;
typedef union { void* data; float* f; } TfLitePtrUnion;
typedef struct { TfLiteType type; TfLitePtrUnion data; TfLiteIntArray* dims; } TfLiteTensor;
typedef struct { TfLitePtrUnion data; TfLiteIntArray* dims; TfLiteType type; } TfLiteEvalTensor;
typedef struct { TfLiteIntArray* inputs; TfLiteIntArray* outputs; void* user_data; } TfLiteNode;
typedef struct TfLiteContext {
  void* (*AllocatePersistentBuffer)(struct TfLiteContext* ctx, size_t bytes);
  TfLiteStatus (*RequestScratchBufferInArena)(struct TfLiteContext* ctx, size_t bytes, int* index);
  void* (*GetScratchBuffer)(struct TfLiteContext* ctx, int index);
  void (*ReportError)(struct TfLiteContext*, const char* format, ...);
} TfLiteContext;
#define TF_LITE_ENSURE(context, a) do { if (!(a)) { (void)(context); return kTfLiteError; } } while (0)
#define TF_LITE_ENSURE_MSG(context, a, msg) do { if (!(a)) { (void)(context); (void)(msg); return kTfLiteError; } } while (0)
#define TF_LITE_ENSURE_EQ(context, a, b) TF_LITE_ENSURE(context, (a) == (b))
#define TF_LITE_ENSURE_STATUS(a) do { if ((a) != kTfLiteOk) return kTfLiteError; } while (0)
typedef struct {
  void* (*init)(TfLiteContext*, const char*, size_t);
  void (*free)(TfLiteContext*, void*);
  TfLiteStatus (*prepare)(TfLiteContext*, TfLiteNode*);
  TfLiteStatus (*invoke)(TfLiteContext*, TfLiteNode*);
  void (*reset)(TfLiteContext*, void*);
  int32_t builtin_code;
  const char* custom_name;
} TFLMRegistration;
namespace tflite {
namespace micro {
TFLMRegistration RegisterOp(void* (*init)(TfLiteContext*, const char*, size_t),
                            TfLiteStatus (*prepare)(TfLiteContext*, TfLiteNode*),
                            TfLiteStatus (*invoke)(TfLiteContext*, TfLiteNode*),
                            void (*free)(TfLiteContext*, void*) = nullptr,
                            void (*reset)(TfLiteContext*, void*) = nullptr);
const TfLiteEvalTensor* GetEvalInput(const TfLiteContext* context, const TfLiteNode* node, int index);
TfLiteEvalTensor* GetEvalOutput(const TfLiteContext* context, const TfLiteNode* node, int index);
}  // namespace micro
}  // namespace tflite
)";
constexpr const char* kTflmMicroContextShim = R"(#pragma once
#include "tensorflow/lite/micro/kernels/kernel_util.h"
namespace tflite {
class MicroContext {
 public:
  TfLiteTensor* AllocateTempInputTensor(const TfLiteNode* node, int index);
  void DeallocateTempTfLiteTensor(TfLiteTensor* tensor);
};
MicroContext* GetMicroContext(const TfLiteContext* context);
}  // namespace tflite
)";
constexpr const char* kTflmMicroLogShim = R"(#pragma once
void MicroPrintf(const char* format, ...);
)";
constexpr const char* kFlexbuffersShim = R"(#pragma once
#include <stddef.h>
#include <stdint.h>
namespace flexbuffers {
class String { public: size_t length() const; const char* c_str() const; };
class Reference;
class Vector { public: size_t size() const; Reference operator[](size_t i) const; };
class TypedVector { public: size_t size() const; Reference operator[](size_t i) const; };
class Reference {
 public:
  bool IsNull() const;
  bool IsTypedVector() const;
  float AsFloat() const;
  int64_t AsInt64() const;
  String AsString() const;
  Vector AsVector() const;
  TypedVector AsTypedVector() const;
  class Map AsMap() const;
};
class Map { public: Reference operator[](const char* key) const; };
Reference GetRoot(const uint8_t* buffer, size_t size);
}  // namespace flexbuffers
// Map from a Reference, as flexbuffers' Reference::AsMap() returns.
)";

TEST(ScaffoldOpTest, TfliteMicroRegistrationCompilesAgainstAContractShim) {
  TempDir dir;
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0, {"tflm"}}, dir / "pkg");
  std::string p = (dir / "pkg").string();
  fs::create_directories(
      (dir / "pkg/shim" / "tensorflow/lite/micro/kernels/kernel_util.h").parent_path());
  testing::WriteFile(dir / "pkg/shim" / "tensorflow/lite/micro/kernels/kernel_util.h",
                     kTflmKernelUtilShim);
  fs::create_directories(
      (dir / "pkg/shim" / "tensorflow/lite/micro/micro_context.h").parent_path());
  testing::WriteFile(dir / "pkg/shim" / "tensorflow/lite/micro/micro_context.h",
                     kTflmMicroContextShim);
  fs::create_directories((dir / "pkg/shim" / "tensorflow/lite/micro/micro_log.h").parent_path());
  testing::WriteFile(dir / "pkg/shim" / "tensorflow/lite/micro/micro_log.h", kTflmMicroLogShim);
  fs::create_directories((dir / "pkg/shim" / "flatbuffers/flexbuffers.h").parent_path());
  testing::WriteFile(dir / "pkg/shim" / "flatbuffers/flexbuffers.h", kFlexbuffersShim);
  auto build =
      RunShell(fmt::format("{} -fsyntax-only -I{}/shim -I{}/kernel -I{}/tflm "
                           "{}/tflm/gelu_tflm.cc",
                           kCxxFlags, p, p, p, p));
  EXPECT_EQ(build.exit_code, 0) << build.err;
}

TEST(ScaffoldOpTest, RknnToolkitClassIsValidPython) {
  if (RunShell("command -v python3 >/dev/null 2>&1").exit_code != 0)
    PORTTOOL_SKIP_MISSING("no python3");
  TempDir dir;
  ScaffoldOp(ActivationModel(dir, "QuickGelu", "com.microsoft", "<alpha = 1.5>"), {"act", 0},
             dir / "pkg");
  std::string py = testing::ReadFile(dir / "pkg/rknn/cstQuickGelu_toolkit.py");
  EXPECT_NE(py.find("_div(x, _add(_c(1.0), _exp(_mul(_c(-p.alpha), x))))"), std::string::npos)
      << py;
  EXPECT_NE(py.find("\"alpha\": 1.5"), std::string::npos) << py;
  auto r = RunShell(
      fmt::format("python3 -m py_compile {}", (dir / "pkg/rknn/cstQuickGelu_toolkit.py").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(ScaffoldOpTest, TargetsSelectTheAdapters) {
  TempDir dir;
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0, {"ort"}}, dir / "pkg");
  EXPECT_TRUE(fs::exists(dir / "pkg/ort/gelu_ort.cc"));
  for (const char* d : {"rknn", "tensorrt", "tflm"}) {
    EXPECT_FALSE(fs::exists(dir / "pkg" / d)) << d;
  }
  std::string cmake = testing::ReadFile(dir / "pkg/CMakeLists.txt");
  EXPECT_NE(cmake.find("ONNXRUNTIME_ROOT"), std::string::npos);
  EXPECT_EQ(cmake.find("TENSORRT_ROOT"), std::string::npos);
  ScaffoldOp(testing::DemoModel(), {"Custom_GELU_0", 0, {}}, dir / "none");
  EXPECT_FALSE(fs::exists(dir / "none/ort"));

  EXPECT_EQ(ParseAdapterTargets(""), AdapterTargets());
  EXPECT_EQ(ParseAdapterTargets("all"), AdapterTargets());
  EXPECT_EQ(ParseAdapterTargets("tflm,ort,tflm"), (std::vector<std::string>{"ort", "tflm"}));
  try {
    ParseAdapterTargets("ort,trt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("'trt'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ort, rknn, tensorrt, tflm"), std::string::npos)
        << e.what();
  }
}

TEST(ScaffoldOpTest, UnknownNodeIsAUsageErrorWithASuggestion) {
  TempDir dir;
  try {
    ScaffoldOp(testing::DemoModel(), {"Custom_GELU", 0}, dir / "pkg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("Custom_GELU_0"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "pkg"));
}

// Issue 54: the SDK adapters of a node whose op_type, domain, name and attributes (names and
// the TensorRT plugin version and namespace, which are string values) hold comment terminators,
// quotes, line breaks, trigraphs, NUL and invalid UTF-8 compile with -Werror against the contract
// shims, and define no symbol the names spell (`porttool_injected`).
TEST(ScaffoldOpTest, HostileNamesStayTextInEverySdkAdapter) {
  TempDir dir;
  io::Model m = ActivationModel(dir, "Relu", "", "");
  const std::string evil = std::string("*/ int porttool_injected(void) { return 42; } /*\n\"'\\?") +
                           "?/?\?=#${x}$(id)`id`\r\xff" + std::string(1, '\0') + "\\";
  auto* node = m.proto.mutable_graph()->mutable_node(4);
  node->set_op_type("Gelu " + evil);
  node->set_domain("dom " + evil);
  node->set_name("node " + evil);
  auto* opset = m.proto.add_opset_import();
  opset->set_domain(node->domain());
  opset->set_version(1);
  for (const std::string& name :
       std::vector<std::string>{"alpha " + evil, "plugin_version", "plugin_namespace"}) {
    auto* a = node->add_attribute();
    a->set_name(name);
    if (name[0] == 'a') {
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(0.5f);
    } else {
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(evil);
    }
  }
  io::Save(m, dir / "evil.onnx");
  auto result = ScaffoldOp(io::Load(dir / "evil.onnx"), {"#4", 0}, dir / "pkg");
  const std::string& sym = result.spec.symbol;
  std::string sym_camel = sym;
  sym_camel[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sym_camel[0])));
  fs::path shim = dir / "pkg/shim";
  std::vector<std::pair<std::string, const char*>> shims = {
      {"rknn_api.h", kRknnApiShim},
      {"rknn_custom_op.h", kRknnCustomOpShim},
      {"cuda_runtime_api.h", kCudaShim},
      {"NvInferRuntime.h", kTrtShim},
      {"tensorflow/lite/micro/kernels/kernel_util.h", kTflmKernelUtilShim},
      {"tensorflow/lite/micro/micro_context.h", kTflmMicroContextShim},
      {"tensorflow/lite/micro/micro_log.h", kTflmMicroLogShim},
      {"flatbuffers/flexbuffers.h", kFlexbuffersShim}};
  for (const auto& file : shims) {
    fs::create_directories((shim / file.first).parent_path());
    testing::WriteFile(shim / file.first, file.second);
  }
  std::string p = (dir / "pkg").string();
  std::string inc = fmt::format("-I{0}/shim -I{0}/kernel -I{0}/rknn -I{0}/tensorrt -I{0}/tflm", p);
  auto build = RunShell(fmt::format(
      "cd {0} && {1} {2} -c kernel/{3}.c -o k.o && {1} {2} -c kernel/{3}_porttool.c -o g.o && "
      "{1} {2} -c rknn/{3}_rknn.c -o r.o && {1} {2} -c rknn/librkcst_{3}.c -o rp.o && "
      "{4} {2} -c tensorrt/{5}Plugin.cpp -o t.o && {4} {2} -c tflm/{3}_tflm.cc -o f.o && "
      "nm -g --defined-only k.o g.o r.o rp.o t.o f.o",
      p, kCFlags, inc, sym, kCxxFlags, sym_camel));
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(build.out.find(" " + sym), std::string::npos) << "nm listed no kernel symbol";
  EXPECT_EQ(build.out.find(" porttool_injected\n"), std::string::npos) << build.out;
  // The plugin's version and namespace are the attribute strings, escaped, not truncated at NUL.
  std::string plugin = testing::ReadFile(dir / "pkg/tensorrt" / (sym_camel + "Plugin.h"));
  EXPECT_NE(plugin.find("kPluginNamespace[] = \"*/ int porttool_injected(void) { return 42; } "
                        "/*\\012\\\"'\\\\\\?\\?/\\?\\?=#${x}$(id)`id`\\015\\377\\000\\\\\";"),
            std::string::npos)
      << plugin;
}

// Every generated file goes through FillTemplate: a placeholder nobody set is porttool's bug and
// must fail loudly (exit 4 at the CLI) rather than ship "{{name}}" in a user's package; C++
// initialisers such as "{{1, 2}}" are not placeholders.
TEST(FillTemplate, FillsEveryPlaceholderAndRefusesOneLeftUnfilled) {
  EXPECT_EQ(
      FillTemplate("int {{sym}}_n = {{n}}; int d[1][2] = {{1, 2}};", {{"sym", "gelu"}, {"n", "3"}}),
      "int gelu_n = 3; int d[1][2] = {{1, 2}};");
  // Values go in verbatim (a node may be named "a{{b}}"), and a brace before a placeholder stays.
  EXPECT_EQ(FillTemplate("node {{node|c_comment}}", {{"node", "a{{b}}"}}), "node a{{b}}");
  EXPECT_EQ(FillTemplate("{{{sym}}}", {{"sym", "gelu"}}), "{gelu}");
  try {
    FillTemplate("{{sym}}_{{missing}}", {{"sym", "gelu"}});
    FAIL() << "an unfilled placeholder passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("{{missing}}"), std::string::npos) << e.what();
  }
}

// Model text (op_type, domain, node and file names) is quoted by the template, for the language
// at that spot: `{{Op|c_string}}` inside a C literal, `{{Op|c_comment}}` in a comment. A bare
// `{{Op}}` would write the name as code, so it fails like an unfilled placeholder.
TEST(FillTemplate, ModelTextNeedsAFilter) {
  const ScaffoldVars vars = {{"Op", "a\"b */ c"}, {"sym", "a_b"}};
  EXPECT_EQ(FillTemplate("/* {{Op|c_comment}} */ \"{{Op|c_string}}\" {{sym}}", vars),
            "/* a\"b * / c */ \"a\\\"b */ c\" a_b");
  EXPECT_EQ(FillTemplate("'{{Op|py_string}}' {{Op|cmake}} {{Op|sh}}", vars),
            "'a\\\"b */ c' \"a\\\"b */ c\" 'a\"b */ c'");
  for (const char* bad : {"{{Op}}", "{{Op|nosuchfilter}}"}) {
    try {
      FillTemplate(bad, vars);
      FAIL() << bad << " passed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal) << bad;
    }
  }
}

// Every placeholder of model text in every embedded template carries a filter: scaffolding the
// demo's node with every adapter would throw otherwise, but a template no test fills would not.
TEST(FillTemplate, NoTemplateWritesModelTextBare) {
  for (const char* name : {"Op", "domain", "node", "model", "ort_domain", "ort_model", "trt_model",
                           "trt_version", "trt_namespace"}) {
    for (const auto& path : {"op/README.md",
                             "op/kernel.h",
                             "op/kernel_common.c",
                             "op/kernel_skeleton.c",
                             "op/kit_test.c",
                             "op/package.cmake",
                             "op/porttool_glue.c",
                             "op/schema.cc",
                             "op/schema_test.cc",
                             "op/skeleton_test.c",
                             "ort/README.md",
                             "ort/adapter.cc",
                             "ort/patch_move_domain.md",
                             "ort/patch_none.md",
                             "rknn/README.md",
                             "rknn/adapter.c",
                             "rknn/adapter.h",
                             "rknn/plugin.c",
                             "rknn/toolkit.py",
                             "tensorrt/README.md",
                             "tensorrt/plugin.cpp",
                             "tensorrt/plugin.h",
                             "tflm/README.md",
                             "tflm/adapter.cc",
                             "tflm/adapter.h"}) {
      std::string text(Template(path));
      EXPECT_EQ(text.find(std::string("{{") + name + "}}"), std::string::npos)
          << path << " writes {{" << name << "}} unquoted";
    }
  }
}

}  // namespace
}  // namespace porttool::emit
