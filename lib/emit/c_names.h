// Turning ONNX tensor names into C identifiers for generated headers. ONNX names are free text
// (`onnx::Conv_123`, `x.1`, `/backbone/conv1/Conv_output_0`, `123`, `int`); C needs
// [A-Za-z_][A-Za-z0-9_]*, no keywords, and (for C++) no double underscores. Different ONNX names
// can sanitise to the same identifier, and generated macros are upper-cased and get field suffixes
// (`X_ALIGNED_BYTES` for `x` equals `X_ALIGNED` + `_BYTES`), so uniqueness is decided on the
// complete set of macro names a tensor would define; losers get `_2`, `_3`, ... in registration
// order, which makes the result deterministic, and every such rename is recorded for the report.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace porttool::emit {

// `text` as a C identifier: runs of other characters become one '_', leading and trailing '_' are
// dropped, a leading digit or a C or C++ keyword gets a `t_` prefix, and an empty result becomes
// `t`.
std::string SanitizeCIdentifier(std::string_view text);

// Upper-cased identifier (for macro names) and lower-cased (for variables).
std::string ToUpper(std::string_view text);
std::string ToLower(std::string_view text);

bool IsCIdentifier(std::string_view text);

struct CNameCollision {
  std::string name;      // ONNX name
  std::string c_name;    // what it got
  std::string conflict;  // ONNX name that had claimed the sanitised identifier first
};

// Assigns each ONNX name one identifier, unique across everything registered in this table.
class CNameTable {
 public:
  // `fields`: every macro suffix any tensor may get (e.g. "BYTES", "ALIGNED_BYTES"); an identifier
  // is taken when any of its upper-cased `STEM_FIELD` names is already taken.
  explicit CNameTable(std::vector<std::string> fields);

  // The identifier for `name`; the same name always gets the same identifier.
  const std::string& Assign(const std::string& name);
  const std::vector<CNameCollision>& collisions() const { return collisions_; }

 private:
  bool Free(const std::string& stem) const;
  void Claim(const std::string& stem, const std::string& name);

  std::vector<std::string> fields_;
  std::map<std::string, std::string> assigned_;     // ONNX name -> identifier
  std::map<std::string, std::string> macro_owner_;  // upper-case STEM_FIELD -> ONNX name
  std::vector<CNameCollision> collisions_;
};

}  // namespace porttool::emit
