// Calibration and evaluation samples from a directory: either tensors, one file per graph input
// named `<sample id>.<input name>.npy` (or `.pb`), or images (PNG, JPEG, BMP) for a model with one
// image input, turned into a tensor by an explicit preprocessing spec. The spec is data that
// travels with the calibration table, because preprocessing that differs between calibration and
// deployment is the commonest cause of lost accuracy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/runtime/session.h"

namespace porttool::quant {

// 8192 x 8192: a 0.84 MB PNG claiming 17000 x 17000 cost 1.72 GB and 5 s to decode.
inline constexpr int64_t kDefaultMaxImagePixels = int64_t{8192} * 8192;

struct Preprocess {
  int64_t width = 0, height = 0;           // resize target; 0 keeps the image's size
  std::string interpolation = "bilinear";  // bilinear (half-pixel centres) | nearest
  // PP-OCR rec/cls (PaddleOCR's resize_norm_img): the tensor stays height x width, the image is
  // resized to `height` rows and min(width, ceil(height * w / h)) columns (at least 1), placed at
  // the left, and the rest of each row is 0 in the normalised tensor. Needs width and height.
  bool keep_ratio = false;
  std::string layout = "NCHW";        // NCHW | NHWC
  std::string channel_order = "RGB";  // RGB | BGR
  double scale = 1.0 / 255.0;         // pixel * scale, then (v - mean) / std per channel
  std::vector<double> mean = {0, 0, 0};
  std::vector<double> std = {1, 1, 1};
  std::string dtype = "float32";  // float32 | uint8 (raw pixels; scale/mean/std unused)
  // Calibration augmentation, not deployment preprocessing: each image also gives `crops`
  // fixed windows of 60% of its size (corners, centre, edge midpoints), each resized as above.
  int crops = 0;
  // Text-box crops instead of whole images: a JSON file {"image stem": [[x0, y0, x1, y1], ...]}
  // (image pixels, x1/y1 exclusive); each box of an image is one sample, once per rotation
  // (0 and/or 180 degrees, the pixels turned before the resize). Empty: whole images.
  // Exclusive with `crops`.
  std::string boxes;
  std::vector<int> rotations = {0};
  // Not preprocessing but a guard (not in ToJson): an image whose header claims more pixels is
  // refused before it is decoded (--max-image-pixels).
  int64_t max_pixels = kDefaultMaxImagePixels;

  nlohmann::json ToJson() const;
  // Throws Error(kUsage) naming `where` and the JSON path for a bad field.
  static Preprocess FromJson(const nlohmann::json& j, const std::string& where);
  void Validate(const std::string& where) const;
};

// Where an image sample's pixels come from: the whole image, fixed crop window `crop` (1-8), or a
// box [x0, x1) x [y0, y1) clamped to the image; turned by `rotation` degrees (0 | 180).
struct SampleWindow {
  int crop = 0;
  bool box = false;
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int rotation = 0;
};

struct SampleSet {
  std::filesystem::path dir;
  // One per sample. Tensors: sorted. Images: by file name, each image's windows in order
  // ("<stem>", "<stem>#crop<k>", or "<stem>#box<k>" and "<stem>#box<k>#r180").
  std::vector<std::string> ids;
  // Per sample: input name -> file. Images: the one image input -> image file.
  std::vector<std::map<std::string, std::filesystem::path>> files;
  std::vector<SampleWindow> windows;  // images: one per sample
  bool images = false;
  Preprocess preprocess;  // meaningful when images
  size_t size() const { return ids.size(); }
};

// Lists `dir` against the model's inputs. Error(kBadInput) naming the file or sample for: a
// missing or empty directory, a file that names no input, a sample missing an input, images for
// a model with several inputs, tensors and images mixed. Images need `preprocess`
// (Error(kUsage) otherwise). With `preprocess->boxes`, that file is read here, once: only the
// images it names give samples, one per box (clamped; a box with no area left is skipped) and
// rotation; Error(kBadInput) naming the file (and key) for a file that does not read, is not
// {"stem": [[x0, y0, x1, y1], ...]} with x1 > x0 and y1 > y0, or names no image in `dir`.
SampleSet ListSamples(const std::filesystem::path& dir,
                      const std::vector<runtime::InputSpec>& inputs,
                      const std::optional<Preprocess>& preprocess);

// Loads sample `index`, checked against the input specs (dtype, rank, static dims, NaN/Inf):
// Error(kBadInput) naming the file.
// The last image a reader decoded: the crops (or boxes) of an image are consecutive samples, so
// one worker decodes each image once instead of once per crop.
struct DecodedImage {
  std::filesystem::path path;
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // interleaved 8-bit RGB
};

// `cache` (optional, one per thread) keeps the last decoded image.
runtime::TensorMap LoadSample(const SampleSet& set, size_t index,
                              const std::vector<runtime::InputSpec>& inputs,
                              DecodedImage* cache = nullptr);

// Decodes and preprocesses one image (its `window`) into a [1, C, H, W] or [1, H, W, C] tensor.
runtime::Tensor LoadImage(const std::filesystem::path& path, const Preprocess& p,
                          const SampleWindow& window = {}, DecodedImage* cache = nullptr);

// Runs samples 0..count-1 on min(threads, count) threads, whose kernels then run on one thread
// each (an ExecutionEnv scope: lib/runtime/execution.h). Each thread calls start(worker index)
// once for its per-thread state (a session) and gets back the function that processes one sample
// index, then takes indices in turn. On errors, all threads stop taking new samples and the error
// of the lowest sample index (or of start) is rethrown: the same message for any thread count.
void ForEachSample(size_t count, int threads,
                   const std::function<std::function<void(size_t)>(int)>& start);

// Splits off the last `count` samples (evaluation held out from calibration).
SampleSet TakeLast(SampleSet& set, size_t count);

}  // namespace porttool::quant
