#include "lib/io/model.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/parser.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include "lib/io/atomic_file.h"
#include "lib/io/dtype.h"
#include "lib/io/foreign_format.h"
#include "lib/io/functions.h"
#include "lib/io/graph_form.h"
#include "lib/io/node_attributes.h"
#include "lib/io/run_inputs.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::io {
namespace fs = std::filesystem;

namespace {

// Closes a file descriptor on scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

void ValidateExternalRefs(const Model& model) {
  ForEachTensor(model.proto.graph(), [&](const onnx::TensorProto& t) {
    if (IsExternal(t)) ResolveExternalRef(t, model.base_dir);
  });
}

template <typename Field, typename Out>
std::shared_ptr<std::string> PackField(const Field& field) {
  auto out = std::make_shared<std::string>(field.size() * sizeof(Out), '\0');
  auto* dst = reinterpret_cast<Out*>(out->data());
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<Out>(field.Get(i));
  return out;
}

// Converts the typed repeated fields of a tensor to the raw little-endian layout.
std::shared_ptr<std::string> PackTypedFields(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT:
      return PackField<decltype(t.float_data()), float>(t.float_data());
    case T::DOUBLE:
      return PackField<decltype(t.double_data()), double>(t.double_data());
    case T::INT64:
      return PackField<decltype(t.int64_data()), int64_t>(t.int64_data());
    case T::UINT64:
      return PackField<decltype(t.uint64_data()), uint64_t>(t.uint64_data());
    case T::UINT32:
      return PackField<decltype(t.uint64_data()), uint32_t>(t.uint64_data());
    case T::INT32:
      return PackField<decltype(t.int32_data()), int32_t>(t.int32_data());
    case T::INT16:
      return PackField<decltype(t.int32_data()), int16_t>(t.int32_data());
    case T::UINT16:
    case T::FLOAT16:
    case T::BFLOAT16:
      return PackField<decltype(t.int32_data()), uint16_t>(t.int32_data());
    case T::INT8:
      return PackField<decltype(t.int32_data()), int8_t>(t.int32_data());
    case T::UINT8:
    case T::BOOL:
      return PackField<decltype(t.int32_data()), uint8_t>(t.int32_data());
    default:
      ThrowBadInput("tensor '{}': data type {} has no raw byte layout", t.name(),
                    DtypeName(t.data_type()));
  }
}

std::shared_ptr<const MappedFile> MapCached(const Model& model, const fs::path& resolved) {
  std::lock_guard<std::mutex> lock(model.maps->mu);
  auto& slot = model.maps->files[resolved.string()];
  if (!slot) slot = MappedFile::Open(resolved);
  return slot;
}

// A file that is not an ONNX model: named as the other framework's model when it is one (with
// the exporter to use), else `reason`.
[[noreturn]] void ThrowNotOnnx(const fs::path& path, const std::string& reason) {
  if (auto foreign = DetectForeignFormat(path)) {
    ThrowBadInput("{}: {}, not an ONNX model; {}", path.string(), foreign->what, foreign->convert);
  }
  ThrowBadInput("{}: {}", path.string(), reason);
}

void CheckParsedModel(const Model& model, const fs::path& path) {
  if (!model.proto.has_graph()) {
    ThrowNotOnnx(path, "the file parses but holds no graph (not an ONNX model?)");
  }
  if (model.proto.ir_version() <= 0) {
    ThrowNotOnnx(path, "the model has no ir_version (not an ONNX model?)");
  }
}

void CheckClaimedShape(const std::vector<int64_t>& dims, int32_t dtype, const std::string& where,
                       const std::string& tensor) {
  const std::string what = fmt::format("{}: tensor '{}'", where, tensor);
  size_t element = std::max<size_t>(DtypeSize(dtype), 1);
  auto count = util::CheckedElementCount(dims);
  auto bytes = count ? util::CheckedMul(*count, static_cast<int64_t>(element)) : std::nullopt;
  if (!bytes || static_cast<uint64_t>(*bytes) >= kMaxClaimedTensorBytes) {
    throw ResourceClaimError(
        ErrorKind::kBadInput,
        fmt::format("{} claims shape {} ({}); no target holds a tensor of 1 TiB or more", what,
                    util::DimsToString(dims),
                    bytes ? util::FormatBytes(*bytes) : "a negative dim or more than 2^63 bytes"),
        "", tensor);
  }
}

void CheckValueInfo(const onnx::ValueInfoProto& vi, const std::string& where) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  std::vector<int64_t> dims;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    if (d.has_dim_value()) dims.push_back(d.dim_value());
  }
  CheckClaimedShape(dims, vi.type().tensor_type().elem_type(), where, vi.name());
}

void CheckGraphSizes(const onnx::GraphProto& graph, const std::string& where, int depth) {
  if (depth > kMaxSubgraphDepth) {
    throw ResourceClaimError(ErrorKind::kBadInput,
                             fmt::format("{}: subgraphs nest deeper than {} levels (at graph '{}')",
                                         where, kMaxSubgraphDepth, graph.name()));
  }
  for (const auto& vi : graph.input()) CheckValueInfo(vi, where);
  for (const auto& vi : graph.output()) CheckValueInfo(vi, where);
  for (const auto& vi : graph.value_info()) CheckValueInfo(vi, where);
  for (const auto& t : graph.initializer()) {
    CheckClaimedShape({t.dims().begin(), t.dims().end()}, t.data_type(), where, t.name());
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_t()) {
        const auto& t = attr.t();
        CheckClaimedShape({t.dims().begin(), t.dims().end()}, t.data_type(), where,
                          t.name().empty() ? node.name() + "." + attr.name() : t.name());
      }
      if (attr.has_g()) CheckGraphSizes(attr.g(), where, depth + 1);
      for (const auto& g : attr.graphs()) CheckGraphSizes(g, where, depth + 1);
    }
  }
}

}  // namespace

void CheckClaimedSizes(const onnx::GraphProto& graph, const std::string& where) {
  CheckGraphSizes(graph, where, 0);
}

void ForEachTensor(onnx::GraphProto& graph, const std::function<void(onnx::TensorProto&)>& fn) {
  for (auto& t : *graph.mutable_initializer()) fn(t);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_t()) fn(*attr.mutable_t());
      for (auto& t : *attr.mutable_tensors()) fn(t);
      if (attr.has_g()) ForEachTensor(*attr.mutable_g(), fn);
      for (auto& g : *attr.mutable_graphs()) ForEachTensor(g, fn);
    }
  }
}

void ForEachTensor(const onnx::GraphProto& graph,
                   const std::function<void(const onnx::TensorProto&)>& fn) {
  ForEachTensor(const_cast<onnx::GraphProto&>(graph),
                [&](onnx::TensorProto& t) { fn(static_cast<const onnx::TensorProto&>(t)); });
}

Model Load(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    ThrowBadInput("{}: cannot open: {}", path.string(), std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) ThrowNotOnnx(path, "is a directory, not a model file");
  if (!S_ISREG(st.st_mode)) ThrowBadInput("{}: not a regular file", path.string());
  if (st.st_size == 0) ThrowBadInput("{}: empty file", path.string());
  if (static_cast<uint64_t>(st.st_size) > kProtobufLimit) {
    ThrowBadInput(
        "{}: {} is over protobuf's 2 GB message limit; a model this large must keep its "
        "weights in external data",
        path.string(), util::FormatBytes(st.st_size));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) ThrowBadInput("{}: cannot open: {}", path.string(), std::strerror(errno));
  FdGuard guard{fd};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ThrowBadInput("{}: not a regular file", path.string());  // swapped since the stat above
  }
  NoteInput(path, st.st_dev, st.st_ino);

  Model model;
  model.path = path;
  model.base_dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  {
    google::protobuf::io::FileInputStream raw(fd, 1 << 20);
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!model.proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      ThrowNotOnnx(path, "not a valid ONNX protobuf (truncated or corrupt file)");
    }
  }
  CheckParsedModel(model, path);
  CheckClaimedSizes(model.proto.graph(), path.string());
  ValidateFunctions(model.proto, path.string());
  ValidateGraphForm(model.proto.graph(), path.string());
  ValidateNodeAttributes(model.proto);
  ValidateExternalRefs(model);
  for (const auto& f : ReferencedFiles(model)) NoteInput(f);
  return model;
}

Model ParseText(const std::string& text) {
  Model model;
  auto status = onnx::OnnxParser::Parse(model.proto, text.c_str());
  if (!status.IsOK()) ThrowBadInput("cannot parse ONNX text: {}", status.ErrorMessage());
  return model;
}

uint64_t TensorPayloadBytes(const onnx::TensorProto& t) {
  if (IsExternal(t)) {
    ExternalRef ref = ParseExternalRef(t);
    if (ref.has_length) return ref.length;
  }
  if (t.has_raw_data()) return t.raw_data().size();
  auto n = util::CheckedElementCount(std::span<const int64_t>(t.dims().data(), t.dims().size()));
  auto bytes = util::CheckedMul(n.value_or(0), static_cast<int64_t>(DtypeSize(t.data_type())));
  return static_cast<uint64_t>(bytes.value_or(0));
}

TensorBytes ReadTensorBytes(const Model& model, const onnx::TensorProto& t) {
  if (t.data_type() == onnx::TensorProto::STRING) {
    ThrowBadInput("tensor '{}': string tensors have no byte layout", t.name());
  }
  if (IsExternal(t)) {
    ExternalRef ref = ResolveExternalRef(t, model.base_dir);
    auto file = MapCached(model, ref.resolved);
    return {file->bytes().subspan(ref.offset, ref.length), file};
  }
  if (t.has_raw_data()) {
    const auto& raw = t.raw_data();
    return {{reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, nullptr};
  }
  auto packed = PackTypedFields(t);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(packed->data()), packed->size());
  return {bytes, packed};
}

bool LinkOrCopyDataFile(const fs::path& from_dir, const std::string& location,
                        const fs::path& to_dir, OutputSet& outputs) {
  fs::path src = from_dir / location;
  fs::path dst = to_dir / location;
  std::error_code ec;
  if (fs::exists(dst, ec)) {
    if (fs::equivalent(src, dst, ec)) return false;
    ThrowBadInput("'{}' already exists and is not the model's data file; refusing to overwrite",
                  dst.string());
  }
  fs::create_directories(dst.parent_path(), ec);
  return outputs.Add(dst).LinkOrCopyFrom(src);
}

namespace {

// Moves large tensors into one external data file while saving, and restores them afterwards.
class ExternalizeScope {
 public:
  ExternalizeScope(Model& model, AtomicFile& data, const std::string& location, uint64_t threshold)
      : model_(model) {
    uint64_t offset = 0;
    ForEachTensor(*model.proto.mutable_graph(), [&](onnx::TensorProto& t) {
      if (!IsExternal(t) && TensorPayloadBytes(t) < threshold) return;
      if (t.data_type() == onnx::TensorProto::STRING) return;
      TensorBytes bytes = ReadTensorBytes(model_, t);
      uint64_t aligned = (offset + 63) & ~uint64_t{63};
      data.Write(std::string(aligned - offset, '\0'));
      data.Write({reinterpret_cast<const char*>(bytes.bytes.data()), bytes.bytes.size()});
      auto replacement = std::make_unique<onnx::TensorProto>();
      replacement->set_name(t.name());
      replacement->set_data_type(t.data_type());
      *replacement->mutable_dims() = t.dims();
      if (t.has_doc_string()) replacement->set_doc_string(t.doc_string());
      SetExternalRef(*replacement, location, aligned, bytes.bytes.size());
      offset = aligned + bytes.bytes.size();
      t.Swap(replacement.get());
      swapped_.emplace_back(&t, std::move(replacement));
    });
  }
  ~ExternalizeScope() {
    for (auto& [slot, original] : swapped_) slot->Swap(original.get());
  }

 private:
  Model& model_;
  std::vector<std::pair<onnx::TensorProto*, std::unique_ptr<onnx::TensorProto>>> swapped_;
};

void SerializeAtomically(const onnx::ModelProto& proto, const fs::path& out, OutputSet& outputs) {
  uint64_t size = proto.ByteSizeLong();
  if (size > kProtobufLimit) {
    throw Error(ErrorKind::kUsage,
                fmt::format("cannot save '{}' inline: the model is {} and protobuf cannot write "
                            "a message over 2 GB; save the weights as external data (tensors over "
                            "the external-data threshold go to a separate file)",
                            out.string(), util::FormatBytes(size)));
  }
  AtomicFile& file = outputs.Add(out);
  google::protobuf::io::FileOutputStream stream(file.fd(), 1 << 20);
  if (!proto.SerializeToZeroCopyStream(&stream) || !stream.Flush()) {
    ThrowOutputError("writing '{}' failed", out.string());
  }
}

}  // namespace

std::vector<fs::path> ReferencedFiles(const Model& model) {
  std::vector<fs::path> files;
  if (model.path.empty()) return files;
  files.push_back(model.path);
  std::set<std::string> seen;
  ForEachTensor(model.proto.graph(), [&](const onnx::TensorProto& t) {
    if (!IsExternal(t)) return;
    std::string location = ParseExternalRef(t).location;
    if (seen.insert(location).second) files.push_back(model.base_dir / location);
  });
  return files;
}

std::optional<fs::path> InputFileAt(const Model& model, const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return std::nullopt;
  for (const auto& f : ReferencedFiles(model)) {
    if (fs::equivalent(out, f, ec)) return f;
  }
  return std::nullopt;
}

namespace {

// Writing over a file the model was read from (while its weights may still be mapped from it)
// needs the caller's explicit consent.
void RefuseOverwrite(const Model& model, const fs::path& target, bool in_place) {
  if (in_place) return;
  if (auto input = InputFileAt(model, target)) {
    throw Error(
        ErrorKind::kUsage,
        fmt::format("refusing to overwrite '{}': the input model {} it; choose another "
                    "output or allow writing in place",
                    target.string(), *input == model.path ? "is" : "reads its external data from"));
  }
}

}  // namespace

SaveResult Save(Model& model, const fs::path& out, const SaveOptions& options) {
  OutputSet outputs;
  SaveResult result = Save(model, out, options, outputs);
  outputs.Commit();
  return result;
}

SaveResult Save(Model& model, const fs::path& out, const SaveOptions& options, OutputSet& outputs) {
  SaveResult result;
  std::error_code ec;
  RefuseOverwrite(model, out, options.in_place);
  if (options.in_place) {
    for (const auto& f : ReferencedFiles(model)) AllowReplacingInput(f);
  }
  fs::path out_dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (options.external_data) {
    std::string location =
        options.external_file.empty() ? out.filename().string() + ".data" : options.external_file;
    if (auto reason = UnsafeLocationReason(location)) {
      ThrowUsage("external data file '{}' is unsafe: {}", location, *reason);
    }
    RefuseOverwrite(model, out_dir / location, options.in_place);
    ExternalizeScope scope(model, outputs.Add(out_dir / location), location,
                           options.external_threshold);
    SerializeAtomically(model.proto, out, outputs);
    result.files = {out, out_dir / location};
    return result;
  }
  // Tensors that stay external must be reachable from the output's directory.
  fs::path src_dir = fs::weakly_canonical(model.base_dir, ec);
  bool same_dir = fs::weakly_canonical(out_dir, ec) == src_dir;
  std::map<std::string, bool> linked;
  ForEachTensor(model.proto.graph(), [&](const onnx::TensorProto& t) {
    if (!IsExternal(t) || same_dir) return;
    std::string location = ParseExternalRef(t).location;
    if (linked.count(location)) return;
    bool copied = LinkOrCopyDataFile(model.base_dir, location, out_dir, outputs);
    linked[location] = copied;
    if (copied) {
      result.notes.push_back(fmt::format(
          "'{}' is on another file system: copied instead of hard-linked (use an output "
          "directory on the model's file system to avoid the copy)",
          location));
    }
    result.files.push_back(out_dir / location);
  });
  SerializeAtomically(model.proto, out, outputs);
  result.files.insert(result.files.begin(), out);
  return result;
}

}  // namespace porttool::io
