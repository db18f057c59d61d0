// JSON text for documents that carry strings porttool does not control: names and dim labels
// read from a model (ONNX is proto2, so its `string` fields may hold any bytes) and file paths
// (bytes on Linux). nlohmann's plain dump() throws type_error.316 on the first invalid UTF-8 byte,
// which would turn a report on a hostile model into an internal error; every writer of such a
// document goes through DumpJson instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace porttool::util {

// doc.dump(indent) with each invalid UTF-8 byte sequence written as U+FFFD, so the text is
// always valid JSON and the writer never throws on bytes from the input.
std::string DumpJson(const nlohmann::json& doc, int indent = -1);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool IsValidUtf8(std::string_view text);

}  // namespace porttool::util
