// The vendor step of `port`'s emit: what the run did (target profile's vendor_tool, accelerator
// segments, calibration, the nodes kept float or raised to int16, the calibration samples)
// handed to emit::WriteVendorSteps, which writes the tool's folder into the bundle. Internal to
// lib/stages, beside port_steps.h.
#pragma once

#include "lib/emit/vendor_steps.h"
#include "lib/stages/port_steps.h"

namespace porttool::stages {

// Writes rknn/, tensorrt/ or stedgeai/ into the staging directory; `missing` lists the steps to
// the device the bundle does not hold.
emit::VendorStepResult WritePortVendorSteps(const PortState& s);

}  // namespace porttool::stages
