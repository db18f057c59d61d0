// pipeline.json as emit-runner reads it (issue 54): every field of a real split's manifest
// changed to each wrong type, -1, 2^31, 2^40, 2^63, 1e308, an empty value, or removed, is loaded
// or refused as bad input naming the file, never a truncated index or a foreign exception.
#include "lib/emit/runner_pipeline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/emit/demo_split_test_util.h"
#include "lib/emit/split_writer.h"
#include "lib/io/model.h"
#include "lib/ir/split.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::WriteDemoSplit;

void ManifestPointers(const json& v, const std::string& p, std::vector<std::string>& out) {
  if (!p.empty()) out.push_back(p);
  if (v.is_object()) {
    for (const auto& item : v.items()) ManifestPointers(item.value(), p + "/" + item.key(), out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) ManifestPointers(v[i], p + "/" + std::to_string(i), out);
  }
}

// "" when `pipeline` loads or is refused as bad input naming it; otherwise what went wrong.
std::string ManifestMisbehaviour(const fs::path& pipeline) {
  try {
    emit::LoadPipeline(pipeline);
  } catch (const Error& e) {
    std::string what = e.what();
    if (e.kind() != ErrorKind::kBadInput) return "not bad input: " + what;
    if (what.find("pipeline.json") == std::string::npos &&
        what.find(".onnx") == std::string::npos) {
      return "names no file: " + what;
    }
  } catch (const std::exception& e) {
    return std::string("not a porttool::Error: ") + e.what();
  }
  return "";
}

TEST(PipelineJson, EveryFieldMutatedLoadsOrIsRefusedAsBadInput) {
  testing::TempDir dir;
  fs::path pipeline = WriteDemoSplit(dir / "split");
  const json original = json::parse(testing::ReadFile(pipeline));
  const std::vector<json> values = {
      "x",     -1, int64_t{1} << 31, int64_t{1} << 40, uint64_t{1} << 63, 1e308, true,
      nullptr, "", json::array(),    json::object()};
  std::vector<std::string> pointers;
  ManifestPointers(original, "", pointers);
  size_t total = 0;
  for (const auto& p : pointers) {
    json::json_pointer ptr(p);
    std::vector<json> docs;
    for (const auto& v : values) {
      json d = original;
      d[ptr] = v;
      docs.push_back(std::move(d));
    }
    json removed = original;
    json& parent = removed[ptr.parent_pointer()];
    if (parent.is_object()) {
      parent.erase(ptr.back());
    } else {
      parent.erase(std::stoul(ptr.back()));
    }
    docs.push_back(std::move(removed));
    for (const auto& d : docs) {
      testing::WriteFile(pipeline, d.dump(2));
      EXPECT_EQ(ManifestMisbehaviour(pipeline), "")
          << p << " -> " << d[ptr.parent_pointer()].dump();
      ++total;
    }
  }
  EXPECT_GT(total, 500u);
}

// The reported case: get<int>() made 2^40 segment 0, a valid-looking producer.
TEST(PipelineJson, SegmentIndexBeyondIntIsRefusedNotTruncated) {
  testing::TempDir dir;
  fs::path pipeline = WriteDemoSplit(dir / "split");
  json doc = json::parse(testing::ReadFile(pipeline));
  doc["bridges"][0]["producer"] = int64_t{1} << 40;
  testing::WriteFile(pipeline, doc.dump(2));
  try {
    emit::LoadPipeline(pipeline);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    std::string what = e.what();
    EXPECT_NE(what.find("/bridges/0/producer: expected a segment index from 0 to 2, got "
                        "1099511627776"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace porttool
