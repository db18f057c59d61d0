// Bias correction (Nagel et al., "Data-Free Quantization Through Weight Equalization and Bias
// Correction", ICCV 2019, section 4.2): rounding a conv's weights to int8 shifts the mean of
// every output channel by E[y~] - E[y] = (W~ - W) E[x], and a shifted mean is an error the next
// layers cannot average away (it adds up through ReLUs and is what a detector's thresholds see).
// The correction subtracts that shift from the channel's bias.
//
// E[x] here is empirical, from the calibration samples run in float, and exact for the conv's
// geometry: for each input channel and kernel tap, the mean over output positions of the input
// value the tap reads (zero where it reads padding), so border taps of a padded 3x3 conv are
// weighted by how often they land inside the image. Each conv is corrected for the error its own
// weights introduce, all convs from one float pass ("layer by layer" in the sense of the paper:
// no conv's correction depends on another's).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/io/model.h"
#include "lib/quant/samples.h"
#include "lib/runtime/tensor.h"

namespace porttool::quant {

// A Conv's group attribute (1 when absent or not positive).
int64_t ConvGroup(const onnx::NodeProto& conv);

// Mean input seen by each kernel tap of one Conv: [in channels][kernel taps], taps in row-major
// kernel order (1-D and 2-D convs).
struct ConvInputMeans {
  int64_t channels = 0, taps = 0;
  std::vector<double> mean;    // channels * taps
  std::vector<double> absmax;  // per input channel: the largest |x| seen (channel equalization)
};
// By Conv node name (main graph, constant weights).
using ConvInputMeansMap = std::map<std::string, ConvInputMeans>;

// Runs every sample of `set` in float and averages, per Conv, the input under each kernel tap over
// output positions, batch and samples. Samples are reduced in index order, so the result is the
// same for any thread count. Convs whose geometry it does not model (3-D, non-constant weights)
// are left out and named in `skipped` when given.
ConvInputMeansMap CollectConvInputMeans(const io::Model& model, const SampleSet& set, int threads,
                                        std::vector<std::string>* skipped = nullptr);

// The mean output shift per output channel, (W~ - W) E[x], of a Conv with float weights `w`
// ([O, C/group, k...]) and their dequantized int8 values `w_dequantized`.
std::vector<double> MeanOutputShift(const runtime::Tensor& w, const runtime::Tensor& w_dequantized,
                                    int64_t group, const ConvInputMeans& means);

}  // namespace porttool::quant
