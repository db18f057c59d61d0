#include "lib/util/json_text.h"

#include <gtest/gtest.h>

namespace porttool::util {
namespace {

// The fuzz_split finding crash-385ef7bc: a dim_param "d\xCF" (a truncated two-byte sequence) in a
// model made pipeline.json's dump() throw type_error.316, an internal error (exit 4).
TEST(JsonText, InvalidUtf8IsReplacedNotThrown) {
  nlohmann::json doc = {{"shape", {"d0", "d\xCF"}}, {"name", "caf\xC3\xA9"}};
  EXPECT_THROW(doc.dump(), nlohmann::json::type_error);
  std::string text = DumpJson(doc);
  EXPECT_EQ(text, "{\"name\":\"caf\xC3\xA9\",\"shape\":[\"d0\",\"d\xEF\xBF\xBD\"]}");
  EXPECT_TRUE(IsValidUtf8(text));
  EXPECT_EQ(nlohmann::json::parse(text)["shape"][1], "d\xEF\xBF\xBD");
}

TEST(JsonText, KeysAreReplacedToo) {
  nlohmann::json doc = {{"\xFF", 1}};
  EXPECT_EQ(DumpJson(doc, 2), "{\n  \"\xEF\xBF\xBD\": 1\n}");
}

TEST(JsonText, IsValidUtf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("d\xCF"));                                // truncated
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));                             // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));                         // a UTF-16 surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));                     // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));                                 // a lone continuation
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));                             // cut short at the end
}

}  // namespace
}  // namespace porttool::util
