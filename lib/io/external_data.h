// External-data references and the path-safety rules porttool enforces itself before it opens
// any weight file. Debian's libonnx 1.12 predates the fixes for CVE-2022-25882 and
// CVE-2024-27318 (path traversal through `location`), so every location is checked here:
// no absolute paths, no `..` component, nothing that resolves (through symlinks) outside the
// model's directory, only regular files, and offset/length inside the file.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace porttool::io {

struct ExternalRef {
  std::string location;  // as written in the model (relative)
  uint64_t offset = 0;
  uint64_t length = 0;             // resolved: the key's value, or file size - offset
  bool has_length = false;         // whether the model gave `length` explicitly
  std::filesystem::path resolved;  // canonical path of the data file
};

bool IsExternal(const onnx::TensorProto& tensor);

// Parses the tensor's external_data entries without touching the file system.
// Throws Error(kBadInput) naming the tensor when a key is missing or malformed.
ExternalRef ParseExternalRef(const onnx::TensorProto& tensor);

// ParseExternalRef + every safety rule above, resolved against `base_dir` (the directory of the
// model file). Throws Error(kBadInput) naming the tensor and the location.
ExternalRef ResolveExternalRef(const onnx::TensorProto& tensor,
                               const std::filesystem::path& base_dir);

// The location-string rules alone (no file system access): empty, absolute, `..`, NUL, backslash.
// Returns a reason when the location is unsafe.
std::optional<std::string> UnsafeLocationReason(const std::string& location);

// Rewrites the tensor's external_data entries to the given reference.
void SetExternalRef(onnx::TensorProto& tensor, const std::string& location, uint64_t offset,
                    uint64_t length);

}  // namespace porttool::io
