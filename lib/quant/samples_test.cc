// Image preprocessing by hand: resize (bilinear with half-pixel centres, nearest), channel order,
// layout, scale/mean/std, crops, keep_ratio and text-box samples on tiny images whose expected
// tensors are worked out below.
#include "lib/quant/samples.h"

#include <gtest/gtest.h>

#include <fstream>

#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool::quant {
namespace {

namespace fs = std::filesystem;

// 24-bit BMP of w x h pixels given top-down as RGB: BMP stores rows bottom-up, as BGR, each
// padded to 4 bytes.
fs::path WriteBmp(const fs::path& path, int w, int h, const std::vector<uint8_t>& rgb) {
  const int row = (w * 3 + 3) / 4 * 4;
  std::vector<uint8_t> f(54 + static_cast<size_t>(row * h), 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) f[at + k] = static_cast<uint8_t>(v >> (8 * k));
  };
  f[0] = 'B';
  f[1] = 'M';
  put32(2, static_cast<uint32_t>(f.size()));
  put32(10, 54);  // pixel data offset
  put32(14, 40);  // BITMAPINFOHEADER
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  f[26] = 1;   // planes
  f[28] = 24;  // bits per pixel
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        f[54 + static_cast<size_t>((h - 1 - y) * row + x * 3 + (2 - c))] =
            rgb[static_cast<size_t>((y * w + x) * 3 + c)];
      }
    }
  }
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  return path;
}

// A 4x1 image whose R channel is 0, 40, 80, 120 (G = R + 1, B = R + 2).
std::vector<uint8_t> Ramp() {
  std::vector<uint8_t> px;
  for (int x = 0; x < 4; ++x) {
    for (int c = 0; c < 3; ++c) px.push_back(static_cast<uint8_t>(40 * x + c));
  }
  return px;
}

TEST(LoadImage, BilinearHalfPixelDownscale) {
  testing::TempDir tmp;
  fs::path f = WriteBmp(tmp / "ramp.bmp", 4, 1, Ramp());
  Preprocess p;
  p.width = 2;
  p.height = 1;
  p.scale = 1.0;
  // Output x = 0 samples source x = (0 + 0.5) * 4 / 2 - 0.5 = 0.5: halfway between 0 and 40 -> 20;
  // output x = 1 samples 2.5 -> 100. NCHW: R row, then G, then B.
  runtime::Tensor t = LoadImage(f, p);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{1, 3, 1, 2}));
  const float* v = t.data<float>();
  EXPECT_FLOAT_EQ(v[0], 20);
  EXPECT_FLOAT_EQ(v[1], 100);
  EXPECT_FLOAT_EQ(v[2], 21);
  EXPECT_FLOAT_EQ(v[5], 102);
}

TEST(LoadImage, NearestBgrNhwcAndNormalisation) {
  testing::TempDir tmp;
  fs::path f = WriteBmp(tmp / "ramp.bmp", 4, 1, Ramp());
  Preprocess p;
  p.width = 2;
  p.height = 1;
  p.interpolation = "nearest";
  p.layout = "NHWC";
  p.channel_order = "BGR";
  p.scale = 0.5;
  p.mean = {1, 2, 3};
  p.std = {2, 4, 8};
  // Nearest: x 0.5 rounds to 1 (R 40), x 2.5 rounds to 3 (R 120). BGR puts B (R + 2) first:
  // pixel 0 = ((42 * .5 - 1) / 2, (41 * .5 - 2) / 4, (40 * .5 - 3) / 8) = (10, 4.625, 2.125).
  runtime::Tensor t = LoadImage(f, p);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{1, 1, 2, 3}));
  const float* v = t.data<float>();
  EXPECT_FLOAT_EQ(v[0], 10);
  EXPECT_FLOAT_EQ(v[1], 4.625f);
  EXPECT_FLOAT_EQ(v[2], 2.125f);
  EXPECT_FLOAT_EQ(v[3], (122 * .5 - 1) / 2);
}

TEST(LoadImage, CropWindowIsSixtyPercentAtItsCorner) {
  testing::TempDir tmp;
  // 5x5 grey ramp (value 10 * (y * 5 + x)): crop 1 is the top-left 3x3 window, crop 4 the
  // bottom-right one; without a resize the tensor is the window itself.
  std::vector<uint8_t> px;
  for (int i = 0; i < 25; ++i) px.insert(px.end(), 3, static_cast<uint8_t>(10 * i));
  fs::path f = WriteBmp(tmp / "grid.bmp", 5, 5, px);
  Preprocess p;
  p.scale = 1.0;
  runtime::Tensor top_left = LoadImage(f, p, {.crop = 1}),
                  bottom_right = LoadImage(f, p, {.crop = 4});
  ASSERT_EQ(top_left.shape(), (std::vector<int64_t>{1, 3, 3, 3}));
  EXPECT_FLOAT_EQ(top_left.data<float>()[0], 0);
  EXPECT_FLOAT_EQ(top_left.data<float>()[8], 10 * (2 * 5 + 2));
  EXPECT_FLOAT_EQ(bottom_right.data<float>()[0], 10 * (2 * 5 + 2));
  EXPECT_FLOAT_EQ(bottom_right.data<float>()[8], 10 * 24);
}

TEST(LoadImage, UndecodableFileNamesTheFile) {
  testing::TempDir tmp;
  fs::path f = tmp / "broken.png";
  std::ofstream(f) << "not an image";
  try {
    LoadImage(f, Preprocess{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("broken.png"), std::string::npos) << e.what();
  }
}

// Uniform grey pixels of value v, w x h.
std::vector<uint8_t> Grey(int w, int h, uint8_t v) {
  return std::vector<uint8_t>(static_cast<size_t>(w * h * 3), v);
}

// Expects fn() to throw porttool::Error of `kind` whose message holds every one of `words`.
template <class Fn>
void ExpectError(Fn fn, ErrorKind kind, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "expected an error naming " << words.front();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& w : words) {
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << ": " << e.what();
    }
  }
}

// One image input "x" of any dtype and shape.
const std::vector<runtime::InputSpec> kImageInput = [] {
  runtime::InputSpec x;
  x.name = "x";
  return std::vector<runtime::InputSpec>{x};
}();

TEST(Samples, KeepRatioResizesToTheHeightAndPadsTheRowWithZeros) {
  testing::TempDir tmp;
  // 20x10: the left half black, the right half white. Into 16x4 keeping the ratio: 4 rows and
  // ceil(4 * 20 / 10) = 8 columns of image (output x 3 samples source x 3.5 * 2.5 - 0.5 = 8.25,
  // black; x 4 samples 10.75, white), then columns 8..15 are 0, not a normalised black (-1).
  std::vector<uint8_t> px;
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 20; ++x) px.insert(px.end(), 3, x < 10 ? 0 : 255);
  }
  fs::path f = WriteBmp(tmp / "line.bmp", 20, 10, px);
  Preprocess p;
  p.width = 16;
  p.height = 4;
  p.keep_ratio = true;
  p.mean = {0.5, 0.5, 0.5};
  p.std = {0.5, 0.5, 0.5};
  runtime::Tensor t = LoadImage(f, p);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{1, 3, 4, 16}));
  const float* v = t.data<float>();
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 16; ++x) {
        const float expected = x < 4 ? -1.0f : x < 8 ? 1.0f : 0.0f;
        EXPECT_FLOAT_EQ(v[(c * 4 + y) * 16 + x], expected) << "c " << c << " y " << y << " x " << x;
      }
    }
  }
  // A line wider than the ratio allows fills the width: no padding.
  fs::path wide = WriteBmp(tmp / "wide.bmp", 100, 10, Grey(100, 10, 255));
  runtime::Tensor full = LoadImage(wide, p);
  ASSERT_EQ(full.shape(), (std::vector<int64_t>{1, 3, 4, 16}));
  for (int64_t i = 0; i < full.size(); ++i) EXPECT_FLOAT_EQ(full.data<float>()[i], 1.0f) << i;
}

TEST(Samples, BoxesGiveOneSamplePerBoxAndRotationInBoxOrder) {
  testing::TempDir tmp;
  fs::create_directory(tmp / "data");
  WriteBmp(tmp / "data" / "a.bmp", 8, 4, Grey(8, 4, 10));
  WriteBmp(tmp / "data" / "b.bmp", 8, 4, Grey(8, 4, 20));
  WriteBmp(tmp / "data" / "c.bmp", 8, 4, Grey(8, 4, 30));  // not in the boxes file: no sample
  // In the sample directory itself: not an image, so not listed. a's box 2 lies outside the
  // image (skipped, numbering kept); b's box is clamped to the image.
  testing::WriteFile(tmp / "data" / "boxes.json",
                     R"({"b": [[-5, -5, 3, 100]],
                         "a": [[0, 0, 4, 4], [2, 1, 8, 3], [10, 10, 20, 20], [1, 0, 2, 4]]})");
  Preprocess p;
  p.boxes = (tmp / "data" / "boxes.json").string();
  SampleSet upright = ListSamples(tmp / "data", kImageInput, p);
  EXPECT_EQ(upright.ids, (std::vector<std::string>{"a#box0", "a#box1", "a#box3", "b#box0"}));
  p.rotations = {0, 180};
  SampleSet set = ListSamples(tmp / "data", kImageInput, p);
  EXPECT_EQ(set.ids, (std::vector<std::string>{"a#box0", "a#box0#r180", "a#box1", "a#box1#r180",
                                               "a#box3", "a#box3#r180", "b#box0", "b#box0#r180"}));
  ASSERT_EQ(set.windows.size(), set.ids.size());
  ASSERT_EQ(set.files.size(), set.ids.size());
  const SampleWindow& b = set.windows[6];
  EXPECT_TRUE(b.box);
  EXPECT_EQ(std::vector<int>({b.x0, b.y0, b.x1, b.y1, b.rotation}),
            std::vector<int>({0, 0, 3, 4, 0}));
  EXPECT_EQ(set.windows[7].rotation, 180);
  EXPECT_EQ(set.files[6].at("x").filename(), "b.bmp");
  // A box sample loads as its window: 3x4 pixels without a resize.
  runtime::Tensor t = LoadSample(set, 6, kImageInput).at("x");
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, 3, 4, 3}));
  // Held-out samples keep their windows.
  SampleSet held = TakeLast(set, 3);
  EXPECT_EQ(held.ids, (std::vector<std::string>{"a#box3#r180", "b#box0", "b#box0#r180"}));
  ASSERT_EQ(held.windows.size(), 3u);
  EXPECT_EQ(held.windows[1].x1, 3);
  EXPECT_EQ(held.windows[0].rotation, 180);
  EXPECT_EQ(set.windows.size(), 5u);
  EXPECT_EQ(set.windows.back().x0, 1);
}

TEST(Samples, RotatedBoxIsTheUprightBoxReversed) {
  testing::TempDir tmp;
  // 5x3 image of distinct values (R = 10 * (y * 5 + x), G = R + 1, B = R + 2); box x 1..4.
  std::vector<uint8_t> px;
  for (int i = 0; i < 15; ++i) {
    for (int c = 0; c < 3; ++c) px.push_back(static_cast<uint8_t>(10 * i + c));
  }
  fs::path f = WriteBmp(tmp / "grid.bmp", 5, 3, px);
  Preprocess p;
  p.scale = 1.0;
  SampleWindow upright{.box = true, .x0 = 1, .y0 = 0, .x1 = 5, .y1 = 3};
  SampleWindow turned = upright;
  turned.rotation = 180;
  runtime::Tensor a = LoadImage(f, p, upright), b = LoadImage(f, p, turned);
  ASSERT_EQ(a.shape(), (std::vector<int64_t>{1, 3, 3, 4}));
  ASSERT_EQ(b.shape(), a.shape());
  EXPECT_FLOAT_EQ(a.data<float>()[0], 10);  // (x 1, y 0) of the image
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 4; ++x) {
        EXPECT_FLOAT_EQ(b.data<float>()[(c * 3 + y) * 4 + x],
                        a.data<float>()[(c * 3 + (2 - y)) * 4 + (3 - x)])
            << "c " << c << " y " << y << " x " << x;
      }
    }
  }
  // With a nearest 2x upscale the rotated crop is still the upright one reversed.
  p.width = 8;
  p.height = 6;
  p.interpolation = "nearest";
  runtime::Tensor a2 = LoadImage(f, p, upright), b2 = LoadImage(f, p, turned);
  for (int64_t i = 0; i < a2.size(); ++i) {
    const int64_t c = i / 48, y = i / 8 % 6, x = i % 8;
    EXPECT_FLOAT_EQ(b2.data<float>()[i], a2.data<float>()[c * 48 + (5 - y) * 8 + (7 - x)]) << i;
  }
}

TEST(Samples, MalformedBoxesFileIsBadInputNamingTheFileAndKey) {
  testing::TempDir tmp;
  fs::create_directory(tmp / "data");
  WriteBmp(tmp / "data" / "a.bmp", 8, 4, Grey(8, 4, 10));
  auto list = [&](const std::string& text) {
    testing::WriteFile(tmp / "boxes.json", text);
    Preprocess p;
    p.boxes = (tmp / "boxes.json").string();
    return [&tmp, p] { ListSamples(tmp / "data", kImageInput, p); };
  };
  ExpectError(list("{\"a\": [[0, 0, 1"), ErrorKind::kBadInput, {"boxes.json", "not valid JSON"});
  ExpectError(list("[[0, 0, 1, 1]]"), ErrorKind::kBadInput, {"boxes.json", "JSON object"});
  ExpectError(list(R"({"a": 5})"), ErrorKind::kBadInput, {"boxes.json", "\"a\""});
  ExpectError(list(R"({"a": [[0, 0, 1]]})"), ErrorKind::kBadInput,
              {"boxes.json", "\"a\" box 0", "4 numbers"});
  ExpectError(list(R"({"a": [[0, 0, 2, 2], [0, 0, 1, "2"]]})"), ErrorKind::kBadInput,
              {"boxes.json", "\"a\" box 1"});
  ExpectError(list(R"({"a": [[4, 0, 2, 2]]})"), ErrorKind::kBadInput,
              {"boxes.json", "\"a\" box 0", "x1 > x0"});
  ExpectError(list(R"({"zzz": [[0, 0, 2, 2]]})"), ErrorKind::kBadInput,
              {"boxes.json", "names no image"});
  ExpectError(list(R"({"a": [[20, 20, 30, 30]]})"), ErrorKind::kBadInput, {"boxes.json", "no box"});
  Preprocess missing;
  missing.boxes = (tmp / "missing.json").string();
  ExpectError([&] { ListSamples(tmp / "data", kImageInput, missing); }, ErrorKind::kBadInput,
              {"missing.json"});
}

TEST(Samples, BadBoxAndKeepRatioSpecsAreUsageErrors) {
  Preprocess p;
  p.crops = 2;
  p.boxes = "boxes.json";
  ExpectError([&] { p.Validate("spec"); }, ErrorKind::kUsage, {"spec", "exclusive"});
  Preprocess rotated;
  rotated.rotations = {0, 180};
  ExpectError([&] { rotated.Validate("spec"); }, ErrorKind::kUsage, {"boxes"});
  rotated.boxes = "boxes.json";
  rotated.rotations = {90};
  ExpectError([&] { rotated.Validate("spec"); }, ErrorKind::kUsage, {"90"});
  rotated.rotations = {180, 180};
  ExpectError([&] { rotated.Validate("spec"); }, ErrorKind::kUsage, {"twice"});
  Preprocess ratio;
  ratio.keep_ratio = true;
  ExpectError([&] { ratio.Validate("spec"); }, ErrorKind::kUsage, {"keep_ratio", "width"});
  ExpectError(
      [] {
        Preprocess::FromJson({{"augmentation", {{"crops", 1}, {"boxes", "b.json"}}}}, "table.json");
      },
      ErrorKind::kUsage, {"table.json", "exclusive"});
  ExpectError(
      [] {
        Preprocess::FromJson({{"resize", {{"keep_ratio", "yes"}}}}, "table.json");
      },
      ErrorKind::kUsage, {"keep_ratio"});
}

TEST(Samples, KeepRatioBoxesAndRotationsRoundTripThroughJson) {
  Preprocess p;
  p.width = 320;
  p.height = 48;
  p.keep_ratio = true;
  p.boxes = "scenes/boxes.json";
  p.rotations = {0, 180};
  nlohmann::json j = p.ToJson();
  EXPECT_EQ(j["resize"]["keep_ratio"], true);
  EXPECT_EQ(j["augmentation"]["boxes"], "scenes/boxes.json");
  EXPECT_EQ(j["augmentation"]["rotations"], nlohmann::json::array({0, 180}));
  Preprocess back = Preprocess::FromJson(j, "table");
  EXPECT_TRUE(back.keep_ratio);
  EXPECT_EQ(back.width, 320);
  EXPECT_EQ(back.boxes, "scenes/boxes.json");
  EXPECT_EQ(back.rotations, (std::vector<int>{0, 180}));
  EXPECT_EQ(back.ToJson(), j);
  // A table written before these fields reads with their defaults.
  Preprocess old = Preprocess::FromJson(
      {{"resize", {{"width", 64}, {"height", 32}, {"interpolation", "bilinear"}}},
       {"augmentation", {{"crops", 2}}}},
      "old table");
  EXPECT_FALSE(old.keep_ratio);
  EXPECT_EQ(old.boxes, "");
  EXPECT_EQ(old.rotations, (std::vector<int>{0}));
  EXPECT_EQ(old.crops, 2);
}

}  // namespace
}  // namespace porttool::quant
