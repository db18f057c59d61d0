// porttool::Error is the one exception type the library throws. It carries a category that the CLI
// maps to an exit code (see DESIGN.md: 1 check failed, 2 usage, 3 bad input, 4 internal) and,
// optionally, the node or tensor the message is about, so callers can point at the culprit.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace porttool {

enum class ErrorKind {
  kCheckFailed,  // the model failed a check or a verification exceeded tolerance (exit 1)
  kUsage,        // the user asked for something inconsistent (exit 2)
  kBadInput,     // unreadable, malformed, unsafe or unsupported input (exit 3)
  kInternal,     // a porttool bug (exit 4)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string node = {}, std::string tensor = {})
      : std::runtime_error(std::move(message)),
        kind_(kind),
        node_(std::move(node)),
        tensor_(std::move(tensor)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& node() const { return node_; }
  const std::string& tensor() const { return tensor_; }

 private:
  ErrorKind kind_;
  std::string node_;
  std::string tensor_;
};

// Exit code for an error category, as documented in README.md and docs/exit-codes.md.
int ExitCodeFor(ErrorKind kind);

// Shorthands that keep throw sites to one line.
template <typename... Args>
[[noreturn]] void ThrowBadInput(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorKind::kBadInput, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void ThrowUsage(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorKind::kUsage, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void ThrowCheckFailed(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorKind::kCheckFailed, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void ThrowInternal(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(ErrorKind::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace porttool
