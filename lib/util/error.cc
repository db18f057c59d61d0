#include "lib/util/error.h"

namespace porttool {

int ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCheckFailed:
      return 1;
    case ErrorKind::kUsage:
      return 2;
    case ErrorKind::kBadInput:
      return 3;
    case ErrorKind::kInternal:
      return 4;
  }
  return 4;
}

}  // namespace porttool
