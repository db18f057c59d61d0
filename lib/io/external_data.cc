#include "lib/io/external_data.h"

#include <sys/stat.h>

#include <charconv>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::io {
namespace fs = std::filesystem;

bool IsExternal(const onnx::TensorProto& tensor) {
  return tensor.has_data_location() && tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

namespace {

uint64_t ParseUnsigned(const onnx::TensorProto& tensor, const std::string& key,
                       const std::string& value) {
  uint64_t out = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
    ThrowBadInput("tensor '{}': external data {} '{}' is not a non-negative integer", tensor.name(),
                  key, value);
  }
  return out;
}

bool IsWithin(const fs::path& child, const fs::path& parent) {
  auto c = child.begin();
  for (auto p = parent.begin(); p != parent.end(); ++p, ++c) {
    if (p->empty()) continue;  // trailing separator
    if (c == child.end() || *c != *p) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> UnsafeLocationReason(const std::string& location) {
  if (location.empty()) return "the location is empty";
  if (location.find('\0') != std::string::npos) return "the location contains a NUL byte";
  if (location.find('\\') != std::string::npos) {
    return "the location contains a backslash (only '/'-separated relative paths are allowed)";
  }
  if (location.front() == '/') return "the location is an absolute path";
  if (location.size() > 1 && location[1] == ':') return "the location is a drive-absolute path";
  for (const auto& part : util::Split(location, '/')) {
    if (part == "..") return "the location has a '..' component (path traversal)";
  }
  return std::nullopt;
}

ExternalRef ParseExternalRef(const onnx::TensorProto& tensor) {
  ExternalRef ref;
  bool has_location = false;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      ref.offset = ParseUnsigned(tensor, "offset", entry.value());
    } else if (entry.key() == "length") {
      ref.length = ParseUnsigned(tensor, "length", entry.value());
      ref.has_length = true;
    }
  }
  if (!has_location) {
    ThrowBadInput("tensor '{}': external data has no 'location' entry", tensor.name());
  }
  return ref;
}

ExternalRef ResolveExternalRef(const onnx::TensorProto& tensor, const fs::path& base_dir) {
  ExternalRef ref = ParseExternalRef(tensor);
  if (auto reason = UnsafeLocationReason(ref.location)) {
    ThrowBadInput("tensor '{}': unsafe external data location '{}': {}", tensor.name(),
                  ref.location, *reason);
  }
  std::error_code ec;
  fs::path base = fs::canonical(base_dir.empty() ? fs::path(".") : base_dir, ec);
  if (ec) ThrowBadInput("model directory '{}' cannot be resolved", base_dir.string());
  fs::path resolved = fs::canonical(base / ref.location, ec);
  if (ec) {
    ThrowBadInput("tensor '{}': external data file '{}' not found next to the model ({})",
                  tensor.name(), ref.location, ec.message());
  }
  if (!IsWithin(resolved, base)) {
    ThrowBadInput(
        "tensor '{}': external data location '{}' resolves to '{}', outside the model's "
        "directory '{}' (symlink escape)",
        tensor.name(), ref.location, resolved.string(), base.string());
  }
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    ThrowBadInput("tensor '{}': external data location '{}' is not a regular file", tensor.name(),
                  ref.location);
  }
  uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (ref.offset > file_size) {
    ThrowBadInput("tensor '{}': external data offset {} is past the end of '{}' ({} bytes)",
                  tensor.name(), ref.offset, ref.location, file_size);
  }
  if (!ref.has_length) ref.length = file_size - ref.offset;
  if (ref.length > file_size - ref.offset) {
    ThrowBadInput(
        "tensor '{}': external data offset {} + length {} is past the end of '{}' ({} bytes)",
        tensor.name(), ref.offset, ref.length, ref.location, file_size);
  }
  ref.resolved = resolved;
  return ref;
}

void SetExternalRef(onnx::TensorProto& tensor, const std::string& location, uint64_t offset,
                    uint64_t length) {
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* e = tensor.add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

}  // namespace porttool::io
