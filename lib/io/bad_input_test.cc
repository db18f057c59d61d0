// Every unreadable or unsafe input the issue lists: through the CLI (exit code 3, a one-line
// message naming the tensor and location, the input untouched) and through the library.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "lib/io/external_data.h"
#include "lib/io/model.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::io {
namespace {

using porttool::testing::ReadFile;
using porttool::testing::RunPorttool;
using porttool::testing::TempDir;
using porttool::testing::WriteFile;

constexpr const char* kTinyAdd4 = R"(
<ir_version: 8, opset_import: ["" : 14]>
tiny (float[4] x) => (float[4] y) {
  y = Add(x, w)
}
)";

// Writes a model whose initializer `w` (4 floats) points at `location` + `offset`.
std::filesystem::path WriteExternalModel(const TempDir& dir, const std::string& location,
                                         uint64_t offset = 0, uint64_t length = 16) {
  Model m = ParseText(kTinyAdd4);
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(length / 4);
  SetExternalRef(*w, location, offset, length);
  auto path = dir / "model.onnx";
  WriteFile(path, m.proto.SerializeAsString());
  return path;
}

// Runs `porttool check` and asserts exit 3 with a one-line message containing every `needle`,
// and that the model file is unchanged.
void ExpectBadInput(const std::filesystem::path& model, const std::vector<std::string>& needles) {
  std::string before = std::filesystem::is_regular_file(model) ? ReadFile(model) : "";
  auto r = RunPorttool("check '" + model.string() + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one-line cause: " << r.err;
  if (std::filesystem::is_regular_file(model)) {
    EXPECT_EQ(ReadFile(model), before);
  }
}

TEST(BadInput, EmptyFile) {
  TempDir dir;
  WriteFile(dir / "empty.onnx", "");
  ExpectBadInput(dir / "empty.onnx", {"empty"});
}

TEST(BadInput, RandomBytes) {
  TempDir dir;
  std::mt19937 rng(42);
  std::string junk(4096, '\0');
  for (auto& c : junk) c = static_cast<char>(rng());
  WriteFile(dir / "junk.onnx", junk);
  ExpectBadInput(dir / "junk.onnx", {"junk.onnx"});
}

TEST(BadInput, TruncatedProtobuf) {
  TempDir dir;
  std::string full = ReadFile(porttool::testing::TestData("demo_detector.onnx"));
  WriteFile(dir / "cut.onnx", full.substr(0, full.size() / 2));
  ExpectBadInput(dir / "cut.onnx", {"truncated"});
}

TEST(BadInput, Directory) {
  TempDir dir;
  std::filesystem::create_directory(dir / "d.onnx");
  ExpectBadInput(dir / "d.onnx", {"directory"});
}

TEST(BadInput, ModelWithoutGraph) {
  TempDir dir;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("nothing");
  WriteFile(dir / "nograph.onnx", m.SerializeAsString());
  ExpectBadInput(dir / "nograph.onnx", {"no graph"});
}

TEST(BadInput, HostileExternalLocations) {
  for (std::string location : {"../../etc/passwd", "/etc/passwd", "sub/../../x"}) {
    SCOPED_TRACE(location);
    TempDir dir;
    ExpectBadInput(WriteExternalModel(dir, location), {"'w'", "'" + location + "'"});
  }
}

TEST(BadInput, SymlinkPointingOutside) {
  TempDir dir;
  std::filesystem::create_symlink("/etc/passwd", dir / "w.bin");
  ExpectBadInput(WriteExternalModel(dir, "w.bin"), {"'w'", "'w.bin'", "outside"});
}

TEST(BadInput, OffsetPastEndOfFile) {
  TempDir dir;
  WriteFile(dir / "w.bin", std::string(16, '\0'));
  ExpectBadInput(WriteExternalModel(dir, "w.bin", /*offset=*/100), {"'w'", "'w.bin'", "offset"});
  ExpectBadInput(WriteExternalModel(dir, "w.bin", /*offset=*/8, /*length=*/16),
                 {"'w'", "past the end"});
}

TEST(BadInput, ExternalDataThatIsNotARegularFile) {
  TempDir dir;
  std::filesystem::create_directory(dir / "w.bin");
  ExpectBadInput(WriteExternalModel(dir, "w.bin"), {"'w'", "regular file"});
}

TEST(BadInput, LibraryThrowsBadInputNamingTensor) {
  TempDir dir;
  auto path = WriteExternalModel(dir, "../secret.bin");
  try {
    Load(path);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos);
  }
}

// A weight file of `bytes` that occupies no disk: a hole made with ftruncate.
void MakeSparseFile(const std::filesystem::path& path, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes)), 0);
  ::close(fd);
}

// Peak RSS in KiB of `porttool <sub> MODEL` (GNU time), with the exit code.
std::pair<long, int> PeakRssKb(const std::string& sub, const std::filesystem::path& model) {
  auto r = porttool::testing::RunShell("/usr/bin/time -f 'RSS_KB=%M' " +
                                       porttool::testing::PorttoolBin() + " " + sub + " '" +
                                       model.string() + "'");
  auto pos = r.err.rfind("RSS_KB=");
  if (pos == std::string::npos) {
    ADD_FAILURE() << r.err;
    return {0, r.exit_code};
  }
  return {std::stol(r.err.substr(pos + 7)), r.exit_code};
}

// Against the same model with a 16-byte weight file, so the figure is what the 4 GiB cost and not
// the process's own baseline (which a sanitizer build multiplies).
TEST(BadInput, CheckOfFourGigabytesOfExternalDataKeepsRssLow) {
  TempDir dir;
  constexpr uint64_t kBytes = uint64_t{4} << 30;
  MakeSparseFile(dir / "w.bin", kBytes);
  MakeSparseFile(dir / "small.bin", 16);
  // WriteExternalModel always writes dir/model.onnx: the small one first, moved aside.
  std::filesystem::rename(WriteExternalModel(dir, "small.bin", 0, 16), dir / "small.onnx");
  auto model = WriteExternalModel(dir, "w.bin", 0, kBytes);
  // The graph expects float[4]; the huge weight is what matters for memory, not validity.
  for (const char* sub : {"check", "inspect"}) {
    auto [base_kb, base_exit] = PeakRssKb(sub, dir / "small.onnx");
    auto [rss_kb, exit_code] = PeakRssKb(sub, model);
    // 0 or 1 (the findings): anything else means the command did not run the model at all.
    EXPECT_TRUE(base_exit == 0 || base_exit == 1) << sub << " exited " << base_exit;
    EXPECT_TRUE(exit_code == 0 || exit_code == 1) << sub << " exited " << exit_code;
    EXPECT_LT(rss_kb - base_kb, 64 * 1024)
        << sub << " read the weights? " << rss_kb << " KiB against " << base_kb << " KiB";
  }
}

TEST(BadInput, InlineSaveOverTwoGigabytesIsRefusedNamingExternalData) {
  TempDir dir;
  Model m = ParseText(kTinyAdd4);
  auto* w = m.proto.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT8);
  w->add_dims(static_cast<int64_t>(kProtobufLimit) + 1);
  // A stage that materialised a huge weight inline (e.g. folding); the save must refuse it
  // before writing anything.
  w->mutable_raw_data()->resize(kProtobufLimit + 1);
  try {
    Save(m, dir / "big.onnx");
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    // The library names the remedy; the CLI adds the flag (WithFlagHint).
    EXPECT_NE(std::string(e.what()).find("external data"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(BadInput, LoadingAFileOverTwoGigabytesIsBadInput) {
  TempDir dir;
  MakeSparseFile(dir / "huge.onnx", kProtobufLimit + 16);
  ExpectBadInput(dir / "huge.onnx", {"2 GB"});
}

// If/Loop/Scan bodies nest at most kMaxSubgraphDepth (16) levels: every graph walk (checks, shape
// inference, the executor, the passes) recurses per level, so a file nesting deeper is refused at
// load, naming the graph where the limit was crossed, before any stage walks it.
Model NestedIfs(int levels) {
  Model m = ParseText(kTinyAdd4);
  onnx::GraphProto* g = m.proto.mutable_graph();
  for (int i = 1; i <= levels; ++i) {
    auto* node = g->add_node();
    node->set_op_type("If");
    node->set_name("if" + std::to_string(i));
    node->add_input("x");
    node->add_output("o" + std::to_string(i));
    auto* attr = node->add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    g = attr->mutable_g();
    g->set_name("level" + std::to_string(i));
  }
  return m;
}

TEST(BadInput, SubgraphsNestedPastTheLimitAreRefusedAtLoad) {
  TempDir dir;
  WriteFile(dir / "deep16.onnx", NestedIfs(kMaxSubgraphDepth).proto.SerializeAsString());
  EXPECT_NO_THROW(Load(dir / "deep16.onnx"));
  WriteFile(dir / "deep17.onnx", NestedIfs(kMaxSubgraphDepth + 1).proto.SerializeAsString());
  try {
    Load(dir / "deep17.onnx");
    FAIL() << "expected bad input";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("nest deeper than 16 levels (at graph 'level17')"),
              std::string::npos)
        << e.what();
  }
  ExpectBadInput(dir / "deep17.onnx", {"deep17.onnx", "nest deeper than 16 levels"});
  // Far deeper than protobuf's own recursion limit: the parser refuses it, also as bad input.
  WriteFile(dir / "deep200.onnx", NestedIfs(200).proto.SerializeAsString());
  ExpectBadInput(dir / "deep200.onnx", {"deep200.onnx"});
}

}  // namespace
}  // namespace porttool::io
