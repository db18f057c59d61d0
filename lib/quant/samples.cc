#include "lib/quant/samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "lib/io/input_file.h"
#include "lib/ir/dtype.h"
#include "lib/runtime/execution.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO_WRITE
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace porttool::quant {
namespace fs = std::filesystem;
using runtime::Tensor;
using TP = onnx::TensorProto;

namespace {

bool IsImage(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

bool IsTensorFile(const fs::path& p) { return p.extension() == ".npy" || p.extension() == ".pb"; }

// An image's width and height from its header, refused (exit 3) above `max_pixels` before any
// pixel is decoded: a 0.84 MB PNG claiming 17000 x 17000 cost 1.72 GB and 5 s to decode.
std::pair<int, int> ImageSize(const std::string& bytes, const fs::path& path, int64_t max_pixels) {
  int w = 0, h = 0, channels = 0;
  if (bytes.size() > INT_MAX ||
      !stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                             static_cast<int>(bytes.size()), &w, &h, &channels)) {
    ThrowBadInput("cannot decode image '{}': {}", path.string(),
                  bytes.size() > INT_MAX ? "over 2 GB" : stbi_failure_reason());
  }
  if (int64_t{w} * h > max_pixels) {
    ThrowBadInput(
        "image '{}' claims {}x{} = {} pixels, over the cap of {}; raise it with "
        "--max-image-pixels if the image is genuine",
        path.string(), w, h, int64_t{w} * h, max_pixels);
  }
  return {w, h};
}

template <typename T>
T Field(const nlohmann::json& j, const char* key, T def, const std::string& where) {
  if (!j.contains(key)) return def;
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    ThrowUsage("{}: /{} has the wrong type ({})", where, key, j.at(key).dump());
  }
}

}  // namespace

nlohmann::json Preprocess::ToJson() const {
  return {{"resize",
           {{"width", width},
            {"height", height},
            {"interpolation", interpolation},
            {"keep_ratio", keep_ratio}}},
          {"layout", layout},
          {"channel_order", channel_order},
          {"scale", scale},
          {"mean", mean},
          {"std", std},
          {"dtype", dtype},
          {"augmentation", {{"crops", crops}, {"boxes", boxes}, {"rotations", rotations}}}};
}

Preprocess Preprocess::FromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) ThrowUsage("{}: the preprocessing spec must be a JSON object", where);
  Preprocess p;
  static const std::set<std::string> known = {"resize", "layout", "channel_order", "scale",
                                              "mean",   "std",    "dtype",         "augmentation"};
  for (const auto& [key, _] : j.items()) {
    if (!known.count(key)) ThrowUsage("{}: /{} is not a preprocessing field", where, key);
  }
  if (j.contains("resize")) {
    const auto& r = j.at("resize");
    p.width = Field<int64_t>(r, "width", 0, where + " /resize");
    p.height = Field<int64_t>(r, "height", 0, where + " /resize");
    p.interpolation = Field<std::string>(r, "interpolation", p.interpolation, where + " /resize");
    p.keep_ratio = Field<bool>(r, "keep_ratio", false, where + " /resize");
  }
  p.layout = Field<std::string>(j, "layout", p.layout, where);
  p.channel_order = Field<std::string>(j, "channel_order", p.channel_order, where);
  p.scale = Field<double>(j, "scale", p.scale, where);
  p.mean = Field<std::vector<double>>(j, "mean", p.mean, where);
  p.std = Field<std::vector<double>>(j, "std", p.std, where);
  p.dtype = Field<std::string>(j, "dtype", p.dtype, where);
  if (j.contains("augmentation")) {
    const auto& a = j.at("augmentation");
    p.crops = Field<int>(a, "crops", 0, where + " /augmentation");
    p.boxes = Field<std::string>(a, "boxes", "", where + " /augmentation");
    p.rotations = Field<std::vector<int>>(a, "rotations", p.rotations, where + " /augmentation");
  }
  p.Validate(where);
  return p;
}

void Preprocess::Validate(const std::string& where) const {
  if (width < 0 || height < 0 || (width == 0) != (height == 0)) {
    ThrowUsage("{}: resize needs both width and height > 0 (or neither)", where);
  }
  if (interpolation != "bilinear" && interpolation != "nearest") {
    ThrowUsage("{}: interpolation '{}' is not bilinear or nearest", where, interpolation);
  }
  if (layout != "NCHW" && layout != "NHWC") ThrowUsage("{}: layout must be NCHW or NHWC", where);
  if (channel_order != "RGB" && channel_order != "BGR") {
    ThrowUsage("{}: channel order must be RGB or BGR", where);
  }
  if (mean.size() != 3 || std.size() != 3) ThrowUsage("{}: mean and std need 3 values", where);
  for (double s : std) {
    if (s == 0) ThrowUsage("{}: std must not be 0", where);
  }
  if (dtype != "float32" && dtype != "uint8")
    ThrowUsage("{}: dtype must be float32 or uint8", where);
  if (keep_ratio && (width == 0 || height == 0)) {
    ThrowUsage("{}: keep_ratio needs a resize target (width and height > 0: the tensor's size)",
               where);
  }
  if (crops < 0 || crops > 8) ThrowUsage("{}: crops must be from 0 to 8, got {}", where, crops);
  if (crops > 0 && !boxes.empty()) {
    ThrowUsage("{}: crops and boxes are exclusive (fixed windows or text boxes, not both)", where);
  }
  if (rotations.empty()) ThrowUsage("{}: rotations needs at least one of 0, 180", where);
  for (size_t i = 0; i < rotations.size(); ++i) {
    if (rotations[i] != 0 && rotations[i] != 180) {
      ThrowUsage("{}: rotation {} is not 0 or 180", where, rotations[i]);
    }
    if (std::find(rotations.begin(), rotations.begin() + i, rotations[i]) !=
        rotations.begin() + i) {
      ThrowUsage("{}: rotation {} is given twice", where, rotations[i]);
    }
  }
  if (boxes.empty() && rotations != std::vector<int>{0}) {
    ThrowUsage("{}: rotations apply to boxes; give a boxes file", where);
  }
}

namespace {

// A boxes file: image stem -> its boxes as given (x0, y0, x1, y1), in file order.
using BoxMap = std::map<std::string, std::vector<std::array<double, 4>>>;

BoxMap ReadBoxes(const std::string& file) {
  std::istringstream in(io::ReadInputFile(file, "boxes file"));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) ThrowBadInput("boxes file '{}' is not valid JSON", file);
  if (!j.is_object()) {
    ThrowBadInput(
        "boxes file '{}' is not a JSON object {{\"image stem\": [[x0, y0, x1, y1], ...]}}", file);
  }
  BoxMap boxes;
  for (const auto& [stem, list] : j.items()) {
    if (!list.is_array()) {
      ThrowBadInput("boxes file '{}': \"{}\" is not an array of [x0, y0, x1, y1] boxes: {}", file,
                    stem, list.dump());
    }
    auto& out = boxes[stem];
    for (size_t k = 0; k < list.size(); ++k) {
      const auto& b = list[k];
      bool ok = b.is_array() && b.size() == 4;
      for (size_t i = 0; ok && i < 4; ++i) ok = b[i].is_number();
      if (!ok) {
        ThrowBadInput("boxes file '{}': \"{}\" box {} is not [x0, y0, x1, y1] (4 numbers): {}",
                      file, stem, k, b.dump());
      }
      std::array<double, 4> v = {b[0].get<double>(), b[1].get<double>(), b[2].get<double>(),
                                 b[3].get<double>()};
      if (!(v[2] > v[0]) || !(v[3] > v[1])) {
        ThrowBadInput("boxes file '{}': \"{}\" box {} {} needs x1 > x0 and y1 > y0", file, stem, k,
                      b.dump());
      }
      out.push_back(v);
    }
  }
  return boxes;
}

// A coordinate of a box, rounded (as scripts/make_text_crops.py does) and clamped to [0, size].
int ClampRound(double v, int size) {
  return static_cast<int>(std::lround(std::clamp(v, 0.0, static_cast<double>(size))));
}

// The box samples of `images`: one per box with an area inside its image, and rotation.
void AddBoxSamples(SampleSet& set, const std::vector<fs::path>& images, const std::string& input,
                   const Preprocess& p) {
  const BoxMap boxes = ReadBoxes(p.boxes);
  bool named = false;
  for (const auto& path : images) {
    const std::string stem = path.stem().string();
    auto it = boxes.find(stem);
    if (it == boxes.end()) continue;
    named = true;
    const auto [w, h] = ImageSize(io::ReadInputFile(path, "image"), path, p.max_pixels);
    for (size_t k = 0; k < it->second.size(); ++k) {
      const auto& b = it->second[k];
      SampleWindow win;
      win.box = true;
      win.x0 = ClampRound(b[0], w);
      win.y0 = ClampRound(b[1], h);
      win.x1 = ClampRound(b[2], w);
      win.y1 = ClampRound(b[3], h);
      if (win.x1 <= win.x0 || win.y1 <= win.y0) continue;  // outside the image
      for (int rotation : p.rotations) {
        win.rotation = rotation;
        set.ids.push_back(rotation == 0 ? fmt::format("{}#box{}", stem, k)
                                        : fmt::format("{}#box{}#r{}", stem, k, rotation));
        set.files.push_back({{input, path}});
        set.windows.push_back(win);
      }
    }
  }
  if (!named) {
    ThrowBadInput("boxes file '{}' names no image in '{}' (its keys are image file stems)", p.boxes,
                  set.dir.string());
  }
  if (set.ids.empty()) {
    ThrowBadInput("no box of boxes file '{}' has an area inside its image in '{}'", p.boxes,
                  set.dir.string());
  }
}

}  // namespace

SampleSet ListSamples(const fs::path& dir, const std::vector<runtime::InputSpec>& inputs,
                      const std::optional<Preprocess>& preprocess) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    ThrowBadInput(
        "'{}' is a file, not a sample directory: samples are a directory of "
        "<id>.<input>.npy/.pb files (or of images)",
        dir.string());
  }
  if (!fs::is_directory(dir, ec))
    ThrowBadInput("sample directory '{}' does not exist", dir.string());
  SampleSet set;
  set.dir = dir;
  std::vector<fs::path> tensors, images;
  io::FolderListing listing = io::ListInputFolder(dir, "sample directory");
  for (const auto& file : listing.files) {
    if (IsImage(file)) images.push_back(file);
    if (IsTensorFile(file)) tensors.push_back(file);
  }
  // A name that says sample but is no regular file (a FIFO would block the read, a symlink loop
  // cannot be read) is refused rather than silently left out of the calibration.
  for (const auto& skipped : listing.skipped) {
    if (IsImage(skipped.path) || IsTensorFile(skipped.path)) {
      ThrowBadInput("sample '{}' is not a regular file ({}); remove it from '{}'",
                    skipped.path.string(), skipped.why, dir.string());
    }
  }
  if (tensors.empty() && images.empty()) {
    ThrowBadInput("sample directory '{}' has no samples (<id>.<input>.npy/.pb files or images)",
                  dir.string());
  }
  if (!tensors.empty() && !images.empty()) {
    ThrowBadInput("sample directory '{}' mixes tensor files and images; use one kind",
                  dir.string());
  }
  std::vector<std::string> names;
  for (const auto& spec : inputs) names.push_back(spec.name);
  if (!images.empty()) {
    if (inputs.size() != 1) {
      ThrowBadInput("'{}' holds images but the model has {} inputs ({}); give tensor files",
                    dir.string(), inputs.size(), util::Join(names, ", "));
    }
    if (!preprocess) ThrowUsage("images in '{}' need a preprocessing spec", dir.string());
    set.images = true;
    set.preprocess = *preprocess;
    if (!preprocess->boxes.empty()) {
      AddBoxSamples(set, images, inputs[0].name, *preprocess);
      return set;
    }
    for (const auto& p : images) {
      for (int k = 0; k <= preprocess->crops; ++k) {
        set.ids.push_back(k == 0 ? p.stem().string()
                                 : fmt::format("{}#crop{}", p.stem().string(), k));
        set.files.push_back({{inputs[0].name, p}});
        set.windows.push_back({.crop = k});
      }
    }
    return set;
  }
  std::map<std::string, std::map<std::string, fs::path>> by_id;
  for (const auto& p : tensors) {
    std::string stem = p.stem().string();
    bool matched = false;
    for (const auto& name : names) {
      if (stem.size() > name.size() + 1 && util::EndsWith(stem, "." + name)) {
        by_id[stem.substr(0, stem.size() - name.size() - 1)][name] = p;
        matched = true;
        break;
      }
    }
    if (!matched) {
      ThrowBadInput(
          "'{}' does not name a model input: expected <sample id>.<input>{} with input "
          "one of: {}",
          p.string(), p.extension().string(), util::Join(names, ", "));
    }
  }
  for (auto& [id, files] : by_id) {
    for (const auto& name : names) {
      if (!files.count(name)) {
        ThrowBadInput("sample '{}' in '{}' has no file for input '{}' (expected {}.{}.npy)", id,
                      dir.string(), name, id, name);
      }
    }
    set.ids.push_back(id);
    set.files.push_back(std::move(files));
  }
  return set;
}

namespace {

void CheckAgainstSpec(const Tensor& t, const runtime::InputSpec& spec, const fs::path& file) {
  if (spec.dtype != 0 && t.dtype() != spec.dtype) {
    ThrowBadInput("'{}': input '{}' expects {}, the file holds {}", file.string(), spec.name,
                  ir::DtypeName(spec.dtype), t.DebugString());
  }
  if (spec.has_shape) {
    bool ok = t.rank() == static_cast<int>(spec.dims.size());
    for (size_t i = 0; ok && i < spec.dims.size(); ++i) {
      ok = spec.dims[i] < 0 || spec.dims[i] == t.dim(static_cast<int>(i));
    }
    if (!ok) {
      std::vector<std::string> dims;
      for (int64_t d : spec.dims) dims.push_back(d < 0 ? "?" : std::to_string(d));
      ThrowBadInput("'{}': input '{}' expects shape [{}], the file holds {}", file.string(),
                    spec.name, util::Join(dims, "x"), t.DebugString());
    }
  }
  // An empty sample (a 0 batch) has no values to take a range or an accuracy from: its tensors
  // would calibrate nothing and the table would silently lack them (issue 54).
  if (t.size() == 0) {
    ThrowBadInput("'{}': input '{}' holds no values ({}): a sample needs at least one element",
                  file.string(), spec.name, t.DebugString());
  }
  if (t.dtype() == TP::FLOAT) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.size(); ++i) {
      if (!std::isfinite(p[i])) {
        ThrowBadInput("'{}': input '{}' has a NaN or Inf value at element {}", file.string(),
                      spec.name, i);
      }
    }
  }
}

}  // namespace

runtime::TensorMap LoadSample(const SampleSet& set, size_t index,
                              const std::vector<runtime::InputSpec>& inputs, DecodedImage* cache) {
  runtime::TensorMap map;
  for (const auto& spec : inputs) {
    const fs::path& file = set.files.at(index).at(spec.name);
    Tensor t = set.images ? LoadImage(file, set.preprocess, set.windows.at(index), cache)
                          : runtime::ReadTensorFile(file);
    CheckAgainstSpec(t, spec, file);
    map[spec.name] = std::move(t);
  }
  return map;
}

namespace {

// Crop window k (1-based) of an image: 60% of each side, at a corner, the centre or an edge
// midpoint. Returns x0, y0, width, height.
std::array<int, 4> CropWindow(int k, int w, int h) {
  static const double kPos[8][2] = {{0, 0},   {1, 0},  {0, 1},  {1, 1},
                                    {.5, .5}, {.5, 0}, {0, .5}, {1, .5}};
  int cw = std::max(1, w * 3 / 5), ch = std::max(1, h * 3 / 5);
  return {static_cast<int>(kPos[k - 1][0] * (w - cw)), static_cast<int>(kPos[k - 1][1] * (h - ch)),
          cw, ch};
}

// Source coordinate of output index d along an axis of s source and n output pixels, with the
// two neighbours and the weight of the second (half-pixel centres, like OpenCV's INTER_LINEAR).
struct Tap {
  int i0, i1, nearest;
  float w;
};

std::vector<Tap> Taps(int s, int64_t n) {
  std::vector<Tap> taps(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) {
    double f = std::clamp((static_cast<double>(d) + 0.5) * s / static_cast<double>(n) - 0.5, 0.0,
                          static_cast<double>(s - 1));
    int i0 = static_cast<int>(f);
    taps[static_cast<size_t>(d)] = {i0, std::min(i0 + 1, s - 1),
                                    std::min(static_cast<int>(std::lround(f)), s - 1),
                                    static_cast<float>(f - i0)};
  }
  return taps;
}

// Resizes interleaved 8-bit RGB (row stride `stride` pixels) to w x h, float arithmetic (the
// source has 8 bits; float keeps 24). Calibration decodes every sample, so the per-axis
// coordinates are computed once, not per pixel and channel.
std::vector<float> ResizeRgb(const uint8_t* src, int stride, int sw, int sh, int64_t w, int64_t h,
                             bool nearest) {
  std::vector<float> out(static_cast<size_t>(w * h * 3));
  const std::vector<Tap> xs = Taps(sw, w), ys = Taps(sh, h);
  float* o = out.data();
  for (const Tap& ty : ys) {
    const uint8_t* r0 = src + static_cast<int64_t>(nearest ? ty.nearest : ty.i0) * stride * 3;
    const uint8_t* r1 = src + static_cast<int64_t>(ty.i1) * stride * 3;
    for (const Tap& tx : xs) {
      for (int c = 0; c < 3; ++c, ++o) {
        if (nearest) {
          *o = static_cast<float>(r0[tx.nearest * 3 + c]);
          continue;
        }
        const float a = r0[tx.i0 * 3 + c], b = r0[tx.i1 * 3 + c];
        const float d = r1[tx.i0 * 3 + c], e = r1[tx.i1 * 3 + c];
        const float top = a + (b - a) * tx.w, bottom = d + (e - d) * tx.w;
        *o = top + (bottom - top) * ty.w;
      }
    }
  }
  return out;
}

// Decodes `path` into `image` unless it holds that file already.
void Decode(const fs::path& path, int64_t max_pixels, DecodedImage& image) {
  if (!image.rgb.empty() && image.path == path) return;
  const std::string bytes = io::ReadInputFile(path, "image");
  ImageSize(bytes, path, max_pixels);
  int w = 0, h = 0, channels = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &channels, 3),
      stbi_image_free);
  if (!pixels) {
    ThrowBadInput("cannot decode image '{}': {}", path.string(), stbi_failure_reason());
  }
  image.path = path;
  image.width = w;
  image.height = h;
  image.rgb.assign(pixels.get(), pixels.get() + static_cast<size_t>(w) * h * 3);
}

}  // namespace

Tensor LoadImage(const fs::path& path, const Preprocess& p, const SampleWindow& window,
                 DecodedImage* cache) {
  DecodedImage local;
  DecodedImage& image = cache ? *cache : local;
  Decode(path, p.max_pixels, image);
  const int w = image.width, h = image.height;
  std::array<int, 4> win = {0, 0, w, h};  // x0, y0, width, height
  if (window.box) {
    const int x0 = std::clamp(window.x0, 0, w), x1 = std::clamp(window.x1, 0, w);
    const int y0 = std::clamp(window.y0, 0, h), y1 = std::clamp(window.y1, 0, h);
    if (x1 <= x0 || y1 <= y0) {
      ThrowBadInput("'{}': box [{}, {}, {}, {}] has no pixels inside the {}x{} image",
                    path.string(), window.x0, window.y0, window.x1, window.y1, w, h);
    }
    win = {x0, y0, x1 - x0, y1 - y0};
  } else if (window.crop > 0) {
    win = CropWindow(window.crop, w, h);
  }
  const uint8_t* src = image.rgb.data() + (static_cast<int64_t>(win[1]) * w + win[0]) * 3;
  int stride = w;
  std::vector<uint8_t> turned;
  if (window.rotation == 180) {  // the window's pixels in reverse order: rows and columns
    const int ww = win[2], wh = win[3];
    turned.resize(static_cast<size_t>(ww) * wh * 3);
    for (int y = 0; y < wh; ++y) {
      const uint8_t* row = src + static_cast<int64_t>(y) * stride * 3;
      uint8_t* to = turned.data() + (static_cast<int64_t>(wh - 1 - y) * ww + ww - 1) * 3;
      for (int x = 0; x < ww; ++x, to -= 3) std::copy(row + x * 3, row + x * 3 + 3, to);
    }
    src = turned.data();
    stride = ww;
  }
  int64_t ow = p.width > 0 ? p.width : win[2], oh = p.height > 0 ? p.height : win[3];
  // keep_ratio: rw = ceil(oh * width / height) columns of pixels (integer arithmetic, as
  // make_text_crops.py), at most ow; the tensor's columns from rw on stay 0.
  const int64_t rw =
      p.keep_ratio ? std::clamp<int64_t>((oh * win[2] + win[3] - 1) / win[3], 1, ow) : ow;
  std::vector<float> rgb =
      ResizeRgb(src, stride, win[2], win[3], rw, oh, p.interpolation == "nearest");
  bool nchw = p.layout == "NCHW";
  std::vector<int64_t> shape =
      nchw ? std::vector<int64_t>{1, 3, oh, ow} : std::vector<int64_t>{1, oh, ow, 3};
  bool raw = p.dtype == "uint8";
  Tensor t(raw ? TP::UINT8 : TP::FLOAT, shape);  // zero-initialised: keep_ratio's padding
  const bool bgr = p.channel_order == "BGR";
  // (v * scale - mean) / std as one multiply-add per value.
  float gain[3], offset[3];
  for (int c = 0; c < 3; ++c) {
    gain[c] = static_cast<float>(p.scale / p.std[c]);
    offset[c] = static_cast<float>(-p.mean[c] / p.std[c]);
  }
  uint8_t* out8 = raw ? t.mutable_data<uint8_t>() : nullptr;
  float* out = raw ? nullptr : t.mutable_data<float>();
  for (int c = 0; c < 3; ++c) {
    const int src_c = bgr ? 2 - c : c;
    const float* in = rgb.data() + src_c;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < rw; ++x) {
        const float v = in[(y * rw + x) * 3];
        const int64_t i = y * ow + x;
        const int64_t at = nchw ? c * oh * ow + i : i * 3 + c;
        if (raw) {
          out8[at] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
        } else {
          out[at] = v * gain[c] + offset[c];
        }
      }
    }
  }
  return t;
}

void ForEachSample(size_t count, int threads,
                   const std::function<std::function<void(size_t)>(int)>& start) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  size_t error_index = SIZE_MAX;
  std::exception_ptr error;
  auto fail = [&](size_t index) {
    std::lock_guard<std::mutex> lock(mu);
    failed = true;
    if (!error || index < error_index) {
      error_index = index;
      error = std::current_exception();
    }
  };
  const int n = static_cast<int>(std::max<size_t>(1, std::min<size_t>(count, threads)));
  // Samples in parallel run their kernels single-threaded, so the workers do not fight for the
  // cores; one worker keeps the caller's settings.
  runtime::ExecutionEnv env = runtime::CurrentExecution();
  if (n > 1) env.threads = 1;
  auto worker = [&](int w) {
    runtime::ScopedExecution scope(env);
    std::function<void(size_t)> process;
    try {
      process = start(w);
    } catch (...) {
      fail(SIZE_MAX);
      return;
    }
    for (size_t i; !failed && (i = next++) < count;) {
      try {
        process(i);
      } catch (...) {
        fail(i);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < n; ++w) pool.emplace_back(worker, w);
  worker(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

SampleSet TakeLast(SampleSet& set, size_t count) {
  SampleSet held = set;
  count = std::min(count, set.size());
  size_t keep = set.size() - count;
  held.ids.erase(held.ids.begin(), held.ids.begin() + keep);
  held.files.erase(held.files.begin(), held.files.begin() + keep);
  set.ids.resize(keep);
  set.files.resize(keep);
  if (!set.windows.empty()) {
    held.windows.erase(held.windows.begin(), held.windows.begin() + keep);
    set.windows.resize(keep);
  }
  return held;
}

}  // namespace porttool::quant
