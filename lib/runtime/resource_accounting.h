// Internal to lib/runtime: the live-bytes ledger behind ResourceLimits::total_bytes, used by the
// Tensor allocation path.
#pragma once

#include <cstdint>

namespace porttool::runtime {

// Adds `bytes` to the live total unless that would pass the total limit (then returns false).
bool ReserveTensorBytes(uint64_t bytes);
void ReleaseTensorBytes(uint64_t bytes);

}  // namespace porttool::runtime
