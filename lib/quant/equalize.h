// Channel equalization across a linear conv pair (after Nagel et al. 2019, section 4.1, with
// ranges measured on the calibration data): where a Conv's output y is read only by Convs, with
// nothing between them (BatchNormalization folded first), y's channels can be rescaled exactly,
//
//   Before: y = Conv(x, Wa, ba)            z = Conv(y, Wb)
//   After:  y' = Conv(x, Wa/s, ba/s) = y/s  z = Conv(y', Wb*s)       (s per channel of y)
//
// so that one per-tensor activation scale serves every channel of y'. PP-OCRv4 rec's stem is the
// case: its BatchNormalization output (read by a depthwise conv) has channels from |x| <= 1.0 to
// 18.8, and the small ones lost 4 bits to the per-tensor scale. With per-channel weights both
// rescalings are free for Wa (each output channel has its own scale) and for a depthwise Wb; a
// conv that mixes channels gets half the equalization (s = sqrt(r/R)) so its weights stay fine.
#pragma once

#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/bias_correction.h"

namespace porttool::quant {

struct EqualizedTensor {
  std::string tensor, producer;
  double spread_before = 0;  // largest / smallest channel |x| max (smallest >= 1e-6 of largest)
  double spread_after = 0;
};

struct EqualizeResult {
  std::vector<EqualizedTensor> tensors;
  std::string Note() const;  // one line for the report; empty when nothing changed
};

// Rescales the main graph's weights in place; `stats` are CollectConvInputMeans of this model
// (their absmax). Weights another node also reads are left alone, as are float16 ones.
EqualizeResult EqualizeChannels(io::Model& model, const ConvInputMeansMap& stats);

}  // namespace porttool::quant
