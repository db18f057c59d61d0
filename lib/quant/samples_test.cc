// Image preprocessing by hand: resize (bilinear with half-pixel centres, nearest), channel order,
// layout, scale/mean/std and crops on tiny images whose expected tensors are worked out below.
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
  runtime::Tensor top_left = LoadImage(f, p, 1), bottom_right = LoadImage(f, p, 4);
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

}  // namespace
}  // namespace porttool::quant
