#include "lib/runtime/tensor_io.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "lib/io/atomic_file.h"
#include "lib/io/input_file.h"
#include "lib/ir/dtype.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {
namespace {

using TP = onnx::TensorProto;

std::vector<int64_t> DimsOf(const onnx::TensorProto& proto) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims) {
    if (d < 0) ThrowBadInput("tensor '{}': negative dim {}", proto.name(), d);
  }
  return dims;
}

// float16 or bfloat16 data as float32.
Tensor Widen16(const std::vector<int64_t>& dims, const uint8_t* bytes, float (*widen)(uint16_t)) {
  Tensor out(TP::FLOAT, dims);
  float* dst = out.mutable_data<float>();
  for (int64_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = widen(h);
  }
  return out;
}

Tensor FromBytes(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                 std::span<const uint8_t> bytes, std::shared_ptr<const void> keepalive) {
  size_t elem = ir::DtypeSize(dtype);
  if (elem == 0) {
    ThrowBadInput("tensor '{}': type {} is not supported by the executor", name,
                  ir::DtypeName(dtype));
  }
  const std::string what = fmt::format("tensor '{}'", name);
  int64_t count = util::ElementCountOf(dims, what);
  int64_t expected = util::ByteSizeOf(dims, elem, what);
  if (bytes.size() != static_cast<uint64_t>(expected)) {
    ThrowBadInput("tensor '{}': {} bytes of data for {} elements of {} (expected {})", name,
                  bytes.size(), count, ir::DtypeName(dtype), expected);
  }
  if (dtype == TP::FLOAT16) return Widen16(dims, bytes.data(), HalfToFloat);
  if (dtype == TP::BFLOAT16) return Widen16(dims, bytes.data(), BFloat16ToFloat);
  // Mapped external data stays in place when its alignment allows typed access.
  if (keepalive && dtype != TP::BOOL && reinterpret_cast<uintptr_t>(bytes.data()) % elem == 0) {
    return Tensor::View(dtype, dims, bytes.data(), std::move(keepalive));
  }
  Tensor out(dtype, dims);
  if (dtype == TP::BOOL) {
    // Any byte other than 0 and 1 would be an invalid bool for the kernels that read it.
    auto* dst = static_cast<uint8_t*>(out.mutable_raw());
    for (size_t i = 0; i < bytes.size(); ++i) dst[i] = bytes[i] != 0;
  } else if (!bytes.empty()) {
    std::memcpy(out.mutable_raw(), bytes.data(), bytes.size());
  }
  return out;
}

bool IsExternal(const onnx::TensorProto& proto) { return proto.data_location() == TP::EXTERNAL; }

}  // namespace

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float TruncateToBFloat16(float f) {
  if (std::isnan(f)) return std::numeric_limits<float>::quiet_NaN();
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return BFloat16ToFloat(static_cast<uint16_t>(bits >> 16));
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000u) {  // inf or nan
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                       // below the smallest normal half
    // Scale into the subnormal range with float arithmetic, which rounds to nearest even.
    float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mant_odd = (abs >> 13) & 1;
  abs += 0xfff + mant_odd;  // round half to even at bit 13
  return sign | static_cast<uint16_t>(((abs >> 13) - ((127 - 15) << 10)) & 0xffff);
}

Tensor TensorFromProto(const io::Model& model, const onnx::TensorProto& proto) {
  if (proto.data_type() == TP::STRING) {
    ThrowBadInput("tensor '{}': string tensors are not supported by the executor", proto.name());
  }
  auto dims = DimsOf(proto);
  io::TensorBytes bytes = io::ReadTensorBytes(model, proto);
  // raw_data lives in the proto, which may not outlive the tensor: copy it (keepalive null).
  std::shared_ptr<const void> keepalive = IsExternal(proto) ? bytes.keepalive : nullptr;
  return FromBytes(proto.name(), proto.data_type(), dims, bytes.bytes, keepalive);
}

Tensor TensorFromProto(const onnx::TensorProto& proto) {
  if (IsExternal(proto)) {
    ThrowBadInput("tensor '{}': external data is not allowed in a standalone tensor file",
                  proto.name());
  }
  static const io::Model kNoModel;
  return TensorFromProto(kNoModel, proto);
}

onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(tensor.dtype());
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(tensor.raw(), tensor.bytes());
  return proto;
}

// ---- .npy ----
namespace {

const std::map<std::string, int32_t>& NpyTypes() {
  static const std::map<std::string, int32_t> types = {
      {"f2", TP::FLOAT16}, {"f4", TP::FLOAT}, {"f8", TP::DOUBLE}, {"i1", TP::INT8},
      {"u1", TP::UINT8},   {"i2", TP::INT16}, {"u2", TP::UINT16}, {"i4", TP::INT32},
      {"u4", TP::UINT32},  {"i8", TP::INT64}, {"u8", TP::UINT64}, {"b1", TP::BOOL}};
  return types;
}

std::string NpyDescr(int32_t dtype) {
  for (const auto& [code, type] : NpyTypes()) {
    if (type == dtype && dtype != TP::FLOAT16) {
      return (ir::DtypeSize(dtype) == 1 ? "|" : "<") + code;
    }
  }
  ThrowBadInput("cannot write a {} tensor as .npy", ir::DtypeName(dtype));
}

// Value of `key` in the header dict (a Python literal), as raw text. Every position is checked:
// the header is whatever the file says.
std::string HeaderField(const std::string& header, const std::string& key,
                        const std::string& file) {
  auto pos = header.find("'" + key + "'");
  if (pos == std::string::npos) ThrowBadInput("{}: .npy header has no '{}'", file, key);
  pos = header.find(':', pos);
  size_t start = pos == std::string::npos ? pos : header.find_first_not_of(' ', pos + 1);
  if (start == std::string::npos) ThrowBadInput("{}: malformed .npy header at '{}'", file, key);
  const char open = header[start];
  size_t end = open == '\''  ? header.find('\'', start + 1)
               : open == '(' ? header.find(')', start)
                             : header.find_first_of(",}", start);
  if (end == std::string::npos) ThrowBadInput("{}: malformed .npy header at '{}'", file, key);
  if (open == '\'' || open == '(') ++end;  // keep the closing quote or parenthesis
  return header.substr(start, end - start);
}

std::vector<int64_t> ParseNpyShape(const std::string& text, const std::string& file) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    ThrowBadInput("{}: bad .npy shape {}", file, text);
  }
  std::vector<int64_t> dims;
  for (const auto& item : util::Split(text.substr(1, text.size() - 2), ',')) {
    auto b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    auto e = item.find_last_not_of(' ') + 1;
    int64_t d = -1;
    auto [end, ec] = std::from_chars(item.data() + b, item.data() + e, d);
    if (ec != std::errc() || end != item.data() + e || d < 0) {
      ThrowBadInput("{}: bad .npy shape {}", file, text);
    }
    dims.push_back(d);
  }
  return dims;
}

}  // namespace

Tensor ReadNpy(const std::filesystem::path& path) {
  std::istringstream in(io::ReadInputFile(path, "tensor file"));
  std::string file = path.string();
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    ThrowBadInput("{}: not a .npy file (bad magic)", file);
  }
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint8_t b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | b[1] << 8;
  } else {
    uint8_t b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | b[1] << 8 | b[2] << 16 | static_cast<uint32_t>(b[3]) << 24;
  }
  if (!in || header_len > (1u << 20)) ThrowBadInput("{}: truncated .npy header", file);
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) ThrowBadInput("{}: truncated .npy header", file);

  std::string descr = HeaderField(header, "descr", file);
  if (HeaderField(header, "fortran_order", file) != "False") {
    ThrowBadInput(
        "{}: Fortran-order arrays are not supported; save with "
        "numpy.ascontiguousarray(a) first",
        file);
  }
  // A quoted dtype string such as '<f4' (fuzz_tensor_readers found "'descr':," with no value,
  // which used to throw std::out_of_range from substr).
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'') {
    ThrowBadInput("{}: .npy header's 'descr' is {}, not a quoted dtype such as '<f4'", file,
                  descr.empty() ? "empty" : descr);
  }
  descr = descr.substr(1, descr.size() - 2);
  if (descr.size() < 3) {
    ThrowBadInput("{}: .npy dtype '{}' is not a dtype such as '<f4'", file, descr);
  }
  if (descr[0] == '>' || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')) {
    ThrowBadInput("{}: .npy dtype '{}' is not little-endian; convert with a.astype('<{}')", file,
                  descr, descr.substr(1));
  }
  auto it = NpyTypes().find(descr.substr(1));
  if (it == NpyTypes().end()) {
    ThrowBadInput(
        "{}: .npy dtype '{}' is not supported (use float32, float16, float64, "
        "int8/16/32/64, uint8/16/32/64 or bool)",
        file, descr);
  }
  auto dims = ParseNpyShape(HeaderField(header, "shape", file), file);
  const int32_t dtype = it->second;
  const auto bytes = static_cast<uint64_t>(
      util::ByteSizeOf(dims, ir::DtypeSize(dtype), fmt::format("{}: .npy shape", file)));
  // The header's claim is checked against the file before anything of that size is allocated.
  const auto data_start = static_cast<uint64_t>(in.tellg());
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec || file_size < data_start || file_size - data_start != bytes) {
    ThrowBadInput("{}: .npy header claims {} bytes of data, the file holds {}", file, bytes,
                  ec || file_size < data_start ? 0 : file_size - data_start);
  }
  if (dtype == TP::FLOAT16 || dtype == TP::BOOL) {  // converted on the way in
    std::string data(bytes, '\0');
    in.read(data.data(), static_cast<std::streamsize>(bytes));
    std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    return FromBytes(file, dtype, dims, span, nullptr);
  }
  Tensor out(dtype, dims);
  if (!in.read(static_cast<char*>(out.mutable_raw()), static_cast<std::streamsize>(bytes))) {
    ThrowBadInput("{}: truncated .npy data (expected {} bytes)", file, bytes);
  }
  return out;
}

std::string NpyHeader(const Tensor& tensor) {
  std::string shape = "(";
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  if (tensor.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   NpyDescr(tensor.dtype()), shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  return out;
}

// The data goes straight from the tensor: no second copy of a large tensor in memory.
void WriteNpyTo(io::AtomicFile& file, const Tensor& tensor) {
  file.Write(NpyHeader(tensor));
  file.Write(std::string_view(static_cast<const char*>(tensor.raw()), tensor.bytes()));
}

void WriteNpy(const std::filesystem::path& path, const Tensor& tensor) {
  io::AtomicFile file(path);
  WriteNpyTo(file, tensor);
  file.Commit();
}

std::vector<std::filesystem::path> WriteTensorFiles(const std::filesystem::path& dir,
                                                    const std::vector<std::string>& names,
                                                    const std::vector<const Tensor*>& tensors,
                                                    bool pb) {
  io::CreateOutputDir(dir);
  std::vector<std::filesystem::path> paths;
  std::vector<std::unique_ptr<io::AtomicFile>> files;
  auto file_names = TensorFileNames(names, pb ? ".pb" : ".npy");
  for (size_t i = 0; i < names.size(); ++i) {
    paths.push_back(dir / file_names[i]);
    files.push_back(std::make_unique<io::AtomicFile>(paths.back()));
    if (pb) {
      files.back()->Write(TensorToProto(*tensors[i], names[i]).SerializeAsString());
    } else {
      WriteNpyTo(*files.back(), *tensors[i]);
    }
  }
  std::vector<io::AtomicFile*> all;
  for (auto& f : files) all.push_back(f.get());
  io::CommitAll(all);
  return paths;
}

Tensor ReadPb(const std::filesystem::path& path, std::string* name) {
  std::string bytes = io::ReadInputFile(path, "tensor file");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    ThrowBadInput("{}: not a serialized onnx.TensorProto", path.string());
  }
  if (name) *name = proto.name();
  if (proto.name().empty()) proto.set_name(path.string());
  return TensorFromProto(proto);
}

void WritePb(const std::filesystem::path& path, const Tensor& tensor, const std::string& name) {
  io::WriteFileAtomic(path, TensorToProto(tensor, name).SerializeAsString());
}

Tensor ReadTensorFile(const std::filesystem::path& path) {
  auto ext = path.extension().string();
  if (ext == ".npy") return ReadNpy(path);
  if (ext == ".pb") return ReadPb(path);
  ThrowUsage("{}: unknown tensor file type '{}' (use .npy or .pb)", path.string(), ext);
}

std::vector<std::string> TensorFileNames(const std::vector<std::string>& tensor_names,
                                         const std::string& extension) {
  std::vector<std::string> files;
  std::set<std::string> used;
  for (const auto& name : tensor_names) {
    std::string base = name.empty() ? "_" : name;
    for (char& c : base) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    }
    if (base[0] == '.') base[0] = '_';
    std::string file = base + extension;
    for (int k = 2; used.count(file); ++k) file = base + "_" + std::to_string(k) + extension;
    used.insert(file);
    files.push_back(file);
  }
  return files;
}

}  // namespace porttool::runtime
