// End-to-end tests of `porttool diff`: a renamed copy is the same (exit 0), a simplified copy
// differs (exit 1) with every removed node accounted for, usage and bad input exit 2 and 3, the
// inputs are never touched, --html writes a page; and on PP-OCRv4 det (when the shared models are
// present), det against `porttool simplify det`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "lib/io/model.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

using testing::RunPorttool;
using testing::ShellQuote;
using testing::TempDir;

// Every node and every intermediate tensor renamed (graph inputs and outputs keep their names, so
// the copy stays a drop-in replacement), saved to `out`.
void WriteRenamedCopy(const std::filesystem::path& in, const std::filesystem::path& out) {
  io::Model m = io::Load(in);
  auto* g = m.proto.mutable_graph();
  std::set<std::string> keep;
  for (const auto& v : g->input()) keep.insert(v.name());
  for (const auto& v : g->output()) keep.insert(v.name());
  auto rename = [&](std::string* s) {
    if (!s->empty() && !keep.count(*s)) *s = "renamed." + *s;
  };
  int k = 0;
  for (auto& n : *g->mutable_node()) {
    n.set_name("n" + std::to_string(k++));
    for (auto& s : *n.mutable_input()) rename(&s);
    for (auto& s : *n.mutable_output()) rename(&s);
  }
  for (auto& t : *g->mutable_initializer()) rename(t.mutable_name());
  for (auto& v : *g->mutable_value_info()) rename(v.mutable_name());
  io::Save(m, out);
}

// det when ../shared/models holds it, else empty.
std::filesystem::path SharedDet() {
  auto dir = testing::SharedModelsDir();
  if (dir.empty() || !std::filesystem::exists(dir / "ch_PP-OCRv4_det_infer.onnx")) return {};
  return dir / "ch_PP-OCRv4_det_infer.onnx";
}

// Every node of A is matched or removed, every node of B matched or added.
void ExpectEveryNodeAccountedFor(const nlohmann::json& doc) {
  const auto& s = doc["summary"];
  EXPECT_EQ(s["matched"].get<int>() + s["removed"].get<int>(), s["nodes_a"].get<int>());
  EXPECT_EQ(s["matched"].get<int>() + s["added"].get<int>(), s["nodes_b"].get<int>());
  for (const auto& r : doc["removed"]) EXPECT_FALSE(r["fate"].get<std::string>().empty());
}

TEST(CliDiff, RenamedCopyIsTheSameAndInputsAreUntouched) {
  TempDir dir;
  auto a = dir / "demo.onnx", b = dir / "renamed.onnx";
  std::filesystem::copy_file(testing::DemoModelPath(), a);
  WriteRenamedCopy(a, b);
  std::string before_a = testing::ReadFile(a), before_b = testing::ReadFile(b);
  auto r = RunPorttool("diff " + ShellQuote(a) + " " + ShellQuote(b) +
                       " --random-inputs --input-shape images:1x3x32x32");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no structural differences"), std::string::npos) << r.out;
  EXPECT_EQ(testing::ReadFile(a), before_a);
  EXPECT_EQ(testing::ReadFile(b), before_b);
}

TEST(CliDiff, SimplifiedCopyDiffersWithTheRemovedNodesListed) {
  TempDir dir;
  auto s = dir / "demo.simple.onnx";
  auto simplify = RunPorttool("simplify " + testing::DemoArg() + " -o " + ShellQuote(s));
  ASSERT_EQ(simplify.exit_code, 0) << simplify.err;
  auto html = dir / "diff.html";
  auto r = RunPorttool("diff " + testing::DemoArg() + " " + ShellQuote(s) + " --json --html " +
                       ShellQuote(html));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc["same"].get<bool>());
  std::set<std::string> removed;
  for (const auto& n : doc["removed"]) removed.insert(n["op"].get<std::string>());
  EXPECT_EQ(removed, std::set<std::string>{"BatchNormalization"});
  EXPECT_EQ(doc["summary"]["removed"], 3);
  EXPECT_EQ(doc["removed"][0]["fate"], "fused into 'stem/Conv' (Conv)");
  EXPECT_EQ(doc["values"].size(), 3u);  // the three Conv weights the BNs were folded into
  ExpectEveryNodeAccountedFor(doc);
  std::string page = testing::ReadFile(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("stem/BatchNormalization"), std::string::npos);
}

TEST(CliDiff, MissingArgumentIsAUsageError) {
  auto r = RunPorttool("diff " + testing::DemoArg());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto both = RunPorttool("diff " + testing::DemoArg() + " " + testing::DemoArg() +
                          " --random-inputs --data /tmp");
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

TEST(CliDiff, NotAModelIsBadInput) {
  TempDir dir;
  testing::WriteFile(dir / "notes.onnx", "not a model at all\n");
  auto r = RunPorttool("diff " + testing::DemoArg() + " " + ShellQuote(dir / "notes.onnx"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST(CliDiff, HtmlOverTheInputIsRefused) {
  TempDir dir;
  auto a = dir / "m.onnx";
  std::filesystem::copy_file(testing::DemoModelPath(), a);
  std::string before = testing::ReadFile(a);
  auto r =
      RunPorttool("diff " + ShellQuote(a) + " " + testing::DemoArg() + " --html " + ShellQuote(a));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(testing::ReadFile(a), before);
}

TEST(CliDiff, DetAgainstItsSimplificationAccountsForEveryNode) {
  auto det = SharedDet();
  if (det.empty()) PORTTOOL_SKIP_MISSING("../shared/models/ch_PP-OCRv4_det_infer.onnx is absent");
  TempDir dir;
  auto s = dir / "det.simple.onnx";
  auto simplify = RunPorttool("simplify " + ShellQuote(det) + " -o " + ShellQuote(s));
  ASSERT_EQ(simplify.exit_code, 0) << simplify.err;
  auto r = RunPorttool("diff " + ShellQuote(det) + " " + ShellQuote(s) + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ExpectEveryNodeAccountedFor(doc);
  EXPECT_EQ(doc["summary"]["nodes_a"], 672);
  EXPECT_EQ(doc["summary"]["added"], 0);
  int batch_norms = 0;
  for (const auto& n : doc["removed"]) {
    if (n["op"] == "BatchNormalization") {
      ++batch_norms;
      EXPECT_EQ(n["fate"].get<std::string>().rfind("fused into", 0), 0u) << n.dump();
    }
  }
  EXPECT_EQ(batch_norms, 3);
}

TEST(CliDiff, DetAgainstARenamedCopyIsTheSame) {
  auto det = SharedDet();
  if (det.empty()) PORTTOOL_SKIP_MISSING("../shared/models/ch_PP-OCRv4_det_infer.onnx is absent");
  TempDir dir;
  WriteRenamedCopy(det, dir / "renamed.onnx");
  auto r = RunPorttool("diff " + ShellQuote(det) + " " + ShellQuote(dir / "renamed.onnx"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace porttool
