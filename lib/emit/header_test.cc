// emit-header library: C identifiers, sizes against hand-computed values for every dtype and a
// scalar, a header that compiles as C99 and C++17, a compiled C11 program whose _Static_asserts
// check sizes, alignment and that tensors alive together never overlap in the arena, and weight
// blobs (.bin and .c) that hold exactly the initializers' bytes at the announced offsets.
#include "lib/emit/header.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/emit/emit_header.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::emit {
namespace {

using testing::RunShell;
using testing::TempDir;

// A small net whose tensor names need sanitising: `x.1`, `onnx::MatMul_12`, a leading digit, a C
// keyword, and two names (`h.1`, `h_1`) that sanitise to the same identifier. The text parser
// only takes identifiers, so those names are written as placeholders and set by NetModel().
constexpr const char* kNet = R"(<ir_version: 8, opset_import: ["" : 14]>
net (float[1,8] x_dot_1) => (float[1,4] out, int64[] count)
  <float[1,16] onnx_MatMul_12, float[1,16] n1234, float[1,16] kw_int, float[1,16] h_dot_1,
   float[1,16] h_1, float[1,4] logits,
   float[8,16] w1 = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0,
     15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0,
     30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0,
     45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0,
     60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0,
     75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0,
     90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0,
     104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0,
     117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0},
   float[16,4] w2 = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
     0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
     0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
     0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
   int64[3] idx = {7, -1, 300}, uint8[5] bytes = {1, 2, 3, 4, 5}> {
  onnx_MatMul_12 = MatMul(x_dot_1, w1)
  n1234 = Relu(onnx_MatMul_12)
  kw_int = Sigmoid(onnx_MatMul_12)
  h_dot_1 = Add(n1234, kw_int)
  h_1 = Relu(h_dot_1)
  logits = MatMul(h_1, w2)
  out = Softmax(logits)
  count = Size(out)
})";

// Renames a tensor everywhere it appears in the main graph.
void RenameTensor(onnx::GraphProto& g, const std::string& from, const std::string& to) {
  auto fix = [&](std::string* name) {
    if (*name == from) *name = to;
  };
  for (auto& v : *g.mutable_input()) fix(v.mutable_name());
  for (auto& v : *g.mutable_output()) fix(v.mutable_name());
  for (auto& v : *g.mutable_value_info()) fix(v.mutable_name());
  for (auto& t : *g.mutable_initializer()) fix(t.mutable_name());
  for (auto& n : *g.mutable_node()) {
    for (auto& i : *n.mutable_input()) fix(&i);
    for (auto& o : *n.mutable_output()) fix(&o);
  }
}

// Gives `name` a rank-0 shape (the text form `float[]` leaves the shape unset).
void MakeScalar(onnx::GraphProto& g, const std::string& name) {
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (auto& v : *list) {
      if (v.name() == name) v.mutable_type()->mutable_tensor_type()->mutable_shape()->clear_dim();
    }
  }
}

io::Model NetModel() {
  io::Model m = io::ParseText(kNet);
  auto& g = *m.proto.mutable_graph();
  for (auto [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"x_dot_1", "x.1"},
                                                        {"onnx_MatMul_12", "onnx::MatMul_12"},
                                                        {"n1234", "1234"},
                                                        {"kw_int", "int"},
                                                        {"h_dot_1", "h.1"}}) {
    RenameTensor(g, from, to);
  }
  MakeScalar(g, "count");
  return m;
}

struct Emitted {
  EmitResult result;
  std::string text;
};

Emitted Emit(const TempDir& dir, const io::Model& model, EmitRequest request) {
  request.header_path = dir / "net.h";
  if (request.prefix.empty()) request.prefix = "NET";
  request.command_line = "porttool emit-header net.onnx -o net.h";
  Emitted e{EmitHeaderFiles(model, request), {}};
  e.text = testing::ReadFile(request.header_path);
  return e;
}

// Compiles `source` (written to dir/name) with `compiler_and_flags`; returns the diagnostics.
testing::CommandResult Compile(const TempDir& dir, const std::string& name,
                               const std::string& source, const std::string& compiler_and_flags,
                               const std::string& extra = "-fsyntax-only") {
  testing::WriteFile(dir / name, source);
  return RunShell(
      fmt::format("cd '{}' && {} {} {}", dir.path().string(), compiler_and_flags, extra, name));
}

constexpr const char* kStrictC99 = "gcc -std=c99 -Wall -Wextra -Werror -pedantic";
constexpr const char* kStrictCxx17 = "g++ -std=c++17 -Wall -Wextra -Werror";
constexpr const char* kStrictC11 = "gcc -std=c11 -Wall -Wextra -Werror -pedantic";

TEST(CNamesTest, SanitisesOnnxNames) {
  EXPECT_EQ(SanitizeCIdentifier("onnx::Conv_123"), "onnx_Conv_123");
  EXPECT_EQ(SanitizeCIdentifier("x.1"), "x_1");
  EXPECT_EQ(SanitizeCIdentifier("/backbone/conv1/Conv_output_0"), "backbone_conv1_Conv_output_0");
  EXPECT_EQ(SanitizeCIdentifier("123"), "t_123");
  EXPECT_EQ(SanitizeCIdentifier("7x"), "t_7x");
  EXPECT_EQ(SanitizeCIdentifier("int"), "t_int");
  EXPECT_EQ(SanitizeCIdentifier("class"), "t_class");  // C++ keyword: the header is C++ too
  EXPECT_EQ(SanitizeCIdentifier("a__b"), "a_b");       // no double underscores (reserved in C++)
  EXPECT_EQ(SanitizeCIdentifier("..."), "t");
  EXPECT_EQ(SanitizeCIdentifier("caf\xc3\xa9"), "caf");
  for (const char* name : {"onnx::Conv_123", "x.1", "123", "int", "", "\xff"}) {
    EXPECT_TRUE(IsCIdentifier(SanitizeCIdentifier(name))) << name;
  }
}

TEST(CNamesTest, CollisionsResolvedInRegistrationOrder) {
  CNameTable table({"BYTES", "ALIGNED_BYTES"});
  EXPECT_EQ(table.Assign("x.1"), "x_1");
  EXPECT_EQ(table.Assign("x_1"), "x_1_2");
  EXPECT_EQ(table.Assign("X.1"), "X_1_3");  // macros are upper-case: X_1 is x_1
  EXPECT_EQ(table.Assign("x.1"), "x_1");    // stable
  EXPECT_EQ(table.Assign("w"), "w");
  // W_ALIGNED_BYTES is already w's ALIGNED_BYTES macro.
  EXPECT_EQ(table.Assign("w_aligned"), "w_aligned_2");
  ASSERT_EQ(table.collisions().size(), 3u);
  EXPECT_EQ(table.collisions()[0].name, "x_1");
  EXPECT_EQ(table.collisions()[0].conflict, "x.1");
  EXPECT_EQ(table.collisions()[2].conflict, "w");
}

TEST(CNamesTest, LiteralsAndCommentsAreSafe) {
  EXPECT_EQ(CStringLiteral("a\"b\\c?\?/"), R"("a\"b\\c\?\?/")");
  EXPECT_EQ(CStringLiteral("\n1"), "\"\\0121\"");
  EXPECT_EQ(CommentText("a*/b"), "a* /b");
  EXPECT_EQ(CommentText("x?\?/"), "x? ?/ ");  // a trailing / could pair with a following *
}

TEST(HeaderTest, EveryDtypeHasHandComputedSizes) {
  struct Case {
    const char* type;
    uint64_t size;
    const char* ctype;
  };
  const std::vector<Case> cases = {
      {"float", 4, "float"},       {"double", 8, "double"},   {"float16", 2, "uint16_t"},
      {"bfloat16", 2, "uint16_t"}, {"int8", 1, "int8_t"},     {"uint8", 1, "uint8_t"},
      {"int16", 2, "int16_t"},     {"uint16", 2, "uint16_t"}, {"int32", 4, "int32_t"},
      {"uint32", 4, "uint32_t"},   {"int64", 8, "int64_t"},   {"uint64", 8, "uint64_t"},
      {"bool", 1, "uint8_t"}};
  std::string inputs, outputs, nodes, asserts;
  for (const auto& c : cases) {
    std::string sep = inputs.empty() ? "" : ", ";
    inputs += fmt::format("{}{}[2,3,5] in_{}", sep, c.type, c.type);
    outputs += fmt::format("{}{}[2,3,5] out_{}", sep, c.type, c.type);
    nodes += fmt::format("  out_{0} = Identity(in_{0})\n", c.type);
    std::string stem = "T_INPUT_IN_" + ToUpper(c.type);
    // 30 elements; aligned to 64.
    asserts += fmt::format(
        "_Static_assert({0}_ELEMENTS == 30u, \"elements\");\n"
        "_Static_assert({0}_BYTES == {1}u, \"bytes\");\n"
        "_Static_assert({0}_ALIGNED_BYTES == {2}u, \"aligned\");\n"
        "_Static_assert(sizeof({0}_CTYPE) == {0}_ELEMENT_BYTES, \"ctype\");\n"
        "_Static_assert({0}_RANK == 3 && {0}_DIM2 == 5, \"dims\");\n",
        stem, 30 * c.size, (30 * c.size + 63) / 64 * 64);
  }
  std::string model =
      fmt::format("<ir_version: 8, opset_import: [\"\" : 14]>\nt ({}) => ({}) {{\n{}}}", inputs,
                  outputs, nodes);
  TempDir dir;
  EmitRequest request;
  request.prefix = "T";
  Emitted e = Emit(dir, io::ParseText(model), request);
  ASSERT_EQ(e.result.header.buffers.size(), 2 * cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const BufferInfo& b = e.result.header.buffers[i];
    EXPECT_EQ(b.bytes, 30 * cases[i].size) << cases[i].type;
    EXPECT_EQ(b.aligned_bytes, (30 * cases[i].size + 63) / 64 * 64) << cases[i].type;
    EXPECT_NE(e.text.find(fmt::format("#define T_INPUT_IN_{}_CTYPE {}\n", ToUpper(cases[i].type),
                                      cases[i].ctype)),
              std::string::npos)
        << cases[i].type;
  }
  auto r =
      Compile(dir, "check.c", "#include \"net.h\"\n" + asserts + "int main(void) { return 0; }\n",
              kStrictC11, "-o check");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(HeaderTest, ScalarHasRankZeroAndOneElement) {
  TempDir dir;
  io::Model model = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 14]>
s (float[] gain, float[3] x) => (float[3] y) { y = Mul(x, gain) })");
  MakeScalar(*model.proto.mutable_graph(), "gain");
  Emitted e = Emit(dir, model, {});
  const BufferInfo& gain = e.result.header.buffers[0];
  EXPECT_TRUE(gain.dims.empty());
  EXPECT_EQ(gain.elements, 1u);
  EXPECT_EQ(gain.bytes, 4u);
  EXPECT_EQ(gain.aligned_bytes, 64u);
  EXPECT_NE(e.text.find("#define NET_INPUT_GAIN_RANK 0\n"), std::string::npos);
  EXPECT_EQ(e.text.find("NET_INPUT_GAIN_DIMS"), std::string::npos);  // `{}` is not C99
  EXPECT_EQ(Compile(dir, "s.c", "#include \"net.h\"\n", kStrictC99).exit_code, 0);
}

TEST(HeaderTest, NamesAreSanitisedAndCollisionsReported) {
  TempDir dir;
  EmitRequest request;
  request.arena = true;
  Emitted e = Emit(dir, NetModel(), request);
  const auto& names = e.result.header.c_names;
  EXPECT_EQ(names.at("x.1"), "x_1");
  EXPECT_EQ(names.at("onnx::MatMul_12"), "onnx_MatMul_12");
  EXPECT_EQ(names.at("1234"), "t_1234");
  EXPECT_EQ(names.at("int"), "t_int");
  EXPECT_EQ(names.at("h.1"), "h_1");
  EXPECT_EQ(names.at("h_1"), "h_1_2");
  ASSERT_EQ(e.result.header.collisions.size(), 1u);
  EXPECT_EQ(e.result.header.collisions[0].conflict, "h.1");
  EXPECT_NE(e.text.find("\"h_1\" -> h_1_2 (the identifier was taken by \"h.1\")"),
            std::string::npos);
  EXPECT_NE(e.text.find("#define NET_INPUT_X_1_NAME \"x.1\"\n"), std::string::npos);
}

TEST(HeaderTest, FullHeaderCompilesAsC99AndCxx17) {
  TempDir dir;
  EmitRequest request;
  request.arena = true;
  request.weights_path = dir / "net_weights.c";
  Emitted e = Emit(dir, NetModel(), request);
  EXPECT_NE(e.text.find("#ifndef NET_H_\n#define NET_H_\n"), std::string::npos);
  EXPECT_NE(e.text.find(" * sha256:"), std::string::npos);
  EXPECT_NE(e.text.find(" * command:   porttool emit-header net.onnx -o net.h"), std::string::npos);
  EXPECT_NE(e.text.find(std::string(" * porttool:  ") + PORTTOOL_VERSION), std::string::npos);
  std::string use =
      "#include \"net.h\"\n#include \"net.h\"\n"  // the include guard works
      "static NET_ALIGNED(64) uint8_t arena[NET_ARENA_SIZE];\n"
      "static NET_ALIGNED(64) NET_INPUT_X_1_CTYPE input[NET_INPUT_X_1_ELEMENTS];\n"
      "int main(void) {\n"
      "  NET_ARENA_H_1_2_CTYPE* h = NET_ARENA_H_1_2_PTR(arena);\n"
      "  const NET_WEIGHT_W1_CTYPE* w1 = NET_WEIGHT_W1_PTR(net_weights);\n"
      "  long dims[] = NET_INPUT_X_1_DIMS;\n"
      "  h[0] = w1[0] + input[0];\n"
      "  return (int)(h[0] + (float)dims[0] + (float)sizeof(NET_OUTPUT_COUNT_CTYPE));\n"
      "}\n";
  auto c = Compile(dir, "use.c", use, kStrictC99, "-c -o use_c.o");
  EXPECT_EQ(c.exit_code, 0) << c.err;
  auto cxx = Compile(dir, "use.cc", use, kStrictCxx17, "-c -o use_cc.o");
  EXPECT_EQ(cxx.exit_code, 0) << cxx.err;
  auto weights = RunShell(
      fmt::format("cd '{}' && {} -c net_weights.c -o w.o", dir.path().string(), kStrictC99));
  EXPECT_EQ(weights.exit_code, 0) << weights.err;
  auto link = RunShell(fmt::format("cd '{}' && gcc use_c.o w.o -o use && g++ use_cc.o w.o -o use2",
                                   dir.path().string()));
  EXPECT_EQ(link.exit_code, 0) << link.err;
}

// _Static_asserts, compiled: every arena tensor aligned and inside the arena, no two tensors
// alive at the same step overlapping, I/O aligned sizes consistent.
std::string ArenaChecks(const EmitResult& r, const std::string& p) {
  std::string out = "#include \"net.h\"\n";
  out += fmt::format("_Static_assert({0}_ARENA_SIZE % {0}_ALIGNMENT == 0, \"size\");\n", p);
  out += fmt::format("_Static_assert({0}_ARENA_SIZE >= {0}_ARENA_SIZE_LOWER_BOUND, \"lb\");\n", p);
  std::vector<std::string> stems;
  for (const auto& t : r.arena->tensors) {
    std::string s = p + "_ARENA_" + ToUpper(r.header.c_names.at(t.name));
    stems.push_back(s);
    out += fmt::format(
        "_Static_assert({0}_OFFSET % {1}_ALIGNMENT == 0, \"aligned\");\n"
        "_Static_assert({0}_OFFSET + {0}_BYTES <= {1}_ARENA_SIZE, \"inside\");\n",
        s, p);
  }
  for (size_t i = 0; i < stems.size(); ++i) {
    for (size_t j = i + 1; j < stems.size(); ++j) {
      out += fmt::format(
          "_Static_assert({0}_LAST_USE < {1}_FIRST_USE || {1}_LAST_USE < {0}_FIRST_USE || "
          "{0}_OFFSET + {0}_BYTES <= {1}_OFFSET || {1}_OFFSET + {1}_BYTES <= {0}_OFFSET, "
          "\"overlap {2} {3}\");\n",
          stems[i], stems[j], i, j);
    }
  }
  for (const auto& b : r.header.buffers) {
    std::string s = fmt::format("{}_{}_{}", p, b.is_input ? "INPUT" : "OUTPUT", ToUpper(b.c_name));
    out += fmt::format(
        "_Static_assert({0}_ALIGNED_BYTES % {1}_ALIGNMENT == 0 && {0}_ALIGNED_BYTES >= "
        "{0}_BYTES && {0}_ALIGNED_BYTES - {0}_BYTES < {1}_ALIGNMENT, \"io\");\n"
        "_Static_assert({0}_BYTES == {0}_ELEMENTS * sizeof({0}_CTYPE), \"io bytes\");\n"
        "_Static_assert({1}_ALIGN_UP({0}_BYTES) == {0}_ALIGNED_BYTES, \"align up\");\n",
        s, p);
  }
  return out + "int main(void) { return 0; }\n";
}

TEST(HeaderTest, CompiledStaticAssertsCheckTheArena) {
  for (uint64_t align : {1, 16, 256}) {
    TempDir dir;
    EmitRequest request;
    request.arena = true;
    request.alignment = align;
    request.arena_options.include_graph_inputs = true;
    request.arena_options.include_graph_outputs = true;
    Emitted e = Emit(dir, NetModel(), request);
    ASSERT_TRUE(e.result.arena.has_value());
    EXPECT_EQ(e.result.arena->tensors.size(), 9u);  // 6 intermediates + x.1, out, count
    auto r = Compile(dir, "arena_check.c", ArenaChecks(e.result, "NET"), kStrictC11, "-o check");
    EXPECT_EQ(r.exit_code, 0) << "align " << align << ": " << r.err;
  }
}

TEST(HeaderTest, StaticAssertProgramCatchesAnOverlap) {
  // The check program must be able to fail: move one live tensor onto another.
  TempDir dir;
  EmitRequest request;
  request.arena = true;
  Emitted e = Emit(dir, NetModel(), request);
  std::string checks = ArenaChecks(e.result, "NET");
  std::string text = e.text;
  std::string from = "#define NET_ARENA_T_INT_OFFSET ";
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  size_t end = text.find('\n', at);
  std::string one = "#define NET_ARENA_T_1234_OFFSET ";
  size_t other = text.find(one);
  std::string other_offset =
      text.substr(other + one.size(), text.find('\n', other) - other - one.size());
  text.replace(at, end - at, from + other_offset);
  testing::WriteFile(dir / "net.h", text);
  auto r = Compile(dir, "bad.c", checks, kStrictC11);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("overlap"), std::string::npos) << r.err;
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

void ExpectBlobHoldsWeights(const std::vector<uint8_t>& blob, const WeightsLayout& layout) {
  ASSERT_EQ(blob.size(), layout.total_bytes);
  ASSERT_EQ(layout.entries.size(), 4u);
  std::map<std::string, const WeightEntry*> by_name;
  for (const auto& e : layout.entries) {
    EXPECT_EQ(e.offset % layout.alignment, 0u) << e.name;
    by_name[e.name] = &e;
  }
  auto at = [&](const std::string& name) { return blob.data() + by_name.at(name)->offset; };
  float w1[128];
  std::memcpy(w1, at("w1"), sizeof w1);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(w1[i], float(i + 1));
  float w2_last;
  std::memcpy(&w2_last, at("w2") + 63 * 4, 4);
  EXPECT_EQ(w2_last, 0.5f);
  int64_t idx[3];
  std::memcpy(idx, at("idx"), sizeof idx);
  EXPECT_EQ(idx[0], 7);
  EXPECT_EQ(idx[1], -1);
  EXPECT_EQ(idx[2], 300);
  EXPECT_EQ(std::vector<uint8_t>(at("bytes"), at("bytes") + 5),
            (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(by_name.at("bytes")->bytes, 5u);
}

TEST(WeightsTest, BinBlobRoundTrips) {
  TempDir dir;
  EmitRequest request;
  request.alignment = 32;
  request.weights_path = dir / "w.bin";
  Emitted e = Emit(dir, NetModel(), request);
  ASSERT_TRUE(e.result.weights.has_value());
  // w1 512 bytes, w2 256, idx 24 -> 32, bytes 5 -> 32.
  EXPECT_EQ(e.result.weights->total_bytes, 512u + 256 + 32 + 32);
  ExpectBlobHoldsWeights(Bytes(testing::ReadFile(dir / "w.bin")), *e.result.weights);
  EXPECT_NE(e.text.find("#define NET_WEIGHT_IDX_OFFSET 768u\n"), std::string::npos);
}

TEST(WeightsTest, CSourceRoundTripsThroughTheCompiler) {
  TempDir dir;
  EmitRequest request;
  request.alignment = 128;
  request.weights_path = dir / "net_weights.c";
  Emitted e = Emit(dir, NetModel(), request);
  std::string dump =
      "#include <stdio.h>\n#include \"net.h\"\n"
      "int main(void) {\n"
      "  if ((uintptr_t)net_weights % NET_ALIGNMENT != 0) return 2;\n"
      "  return fwrite(net_weights, 1, NET_WEIGHTS_SIZE, stdout) == NET_WEIGHTS_SIZE ? 0 : 1;\n"
      "}\n";
  testing::WriteFile(dir / "dump.c", dump);
  auto r = RunShell(fmt::format("(cd '{}' && {} dump.c net_weights.c -o dump && ./dump > blob)",
                                dir.path().string(), kStrictC99));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectBlobHoldsWeights(Bytes(testing::ReadFile(dir / "blob")), *e.result.weights);
}

TEST(WeightsTest, ExternalDataIsReadThroughTheMap) {
  TempDir dir;
  io::Model model = NetModel();
  io::SaveOptions save;
  save.external_data = true;
  save.external_threshold = 0;
  io::Save(model, dir / "net.onnx", save);
  io::Model loaded = io::Load(dir / "net.onnx");
  ASSERT_TRUE(io::IsExternal(loaded.proto.graph().initializer(0)));
  EmitRequest request;
  request.header_path = dir / "net.h";
  request.weights_path = dir / "w.bin";
  request.alignment = 16;
  EmitResult r = EmitHeaderFiles(loaded, request);
  ExpectBlobHoldsWeights(Bytes(testing::ReadFile(dir / "w.bin")), *r.weights);
  EXPECT_NE(testing::ReadFile(dir / "net.h").find("#ifndef NET_H_"), std::string::npos);
}

TEST(EmitHeaderTest, UsageErrors) {
  TempDir dir;
  io::Model model = NetModel();
  auto kind_of = [&](EmitRequest r) {
    try {
      EmitHeaderFiles(model, r);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  EmitRequest r;
  r.header_path = dir / "net.h";
  r.alignment = 48;
  EXPECT_EQ(kind_of(r), ErrorKind::kUsage);
  r.alignment = 8192;
  EXPECT_EQ(kind_of(r), ErrorKind::kUsage);
  r.alignment = 0;
  EXPECT_EQ(kind_of(r), ErrorKind::kUsage);
  r.alignment = 64;
  r.prefix = "9lives";
  EXPECT_EQ(kind_of(r), ErrorKind::kUsage);
  r.prefix = "";
  r.weights_path = dir / "w.txt";
  EXPECT_EQ(kind_of(r), ErrorKind::kUsage);
  EXPECT_FALSE(std::filesystem::exists(dir / "net.h"));
}

}  // namespace
}  // namespace porttool::emit
