// Node attributes checked against what shape inference and the kernels assume, before any of
// them sees the node. libonnx 1.12's inference divides by strides and blocksize, indexes by perm
// and axes and multiplies kernel sizes without checking them: a Conv with strides 0 or a
// DepthToSpace with blocksize 2^32 killed seven subcommands with SIGFPE before porttool's own
// code ran. Load calls ValidateNodeAttributes, and so does every entry point that takes an
// in-memory model (shape inference, the executor's session), so no path reaches libonnx or a
// kernel with such a node.
//
// The rules (each names the node, the attribute and the rule when it fails):
//   strides, dilations, kernel_shape   every value >= 1, one per spatial axis (rank of
//                                      kernel_shape, or of the input minus 2 when known)
//   pads (not the Pad op's)            every value >= 0, twice the spatial rank
//   output_padding, output_shape       >= 0, one per spatial axis
//   group                              >= 1, divides the weight's output channels (Conv)
//   blocksize                          between 1 and 4096 (its square divides the channels)
//   axis / axes                        inside the input's rank (ops listed in AxisRangeFor),
//                                      axes without repeats; any value within int32 otherwise
//   perm                               a permutation of 0..n-1, n = the input's rank when known
//   k (TopK-1), size (LRN)             k >= 0, size >= 1
//   num_scan_inputs (Scan)             between 1 and the node's input count
//   input ranks (Conv/pool family, RNN/GRU/LSTM, STFT) and arity, where the file declares them
//   split (Split < 13)                 every value >= 0, summing to the axis' length when known
//   scales (Upsample-7; Resize/Upsample scales, sizes constants)  finite and > 0
//   spatial_scale, sampling_ratio, output_height/width (RoiAlign, MaxRoiPool)  > 0 / >= 0 / >= 1
// They apply to the ONNX domain and to com.microsoft, whose ops share these attributes' meaning;
// other domains are custom ops that porttool does not interpret.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace porttool::io {

// Largest blocksize accepted: its square must not overflow the channel arithmetic, and no
// network uses more than a few.
inline constexpr int64_t kMaxBlocksize = 4096;

// Largest rank a shape input may ask for (NumPy stops at 32 or 64; no network comes close).
inline constexpr int64_t kMaxRank = 64;

// The input ranks an op's libonnx inference (and kernel) indexes without checking: the Conv and
// pool family needs a rank of at least 3 and a weight of the input's rank, RNN/GRU/LSTM inputs
// 0-2 and STFT's signal rank 3; the 1-D shape input of ConstantOfShape, Expand and Reshape (one
// output axis per element) at most kMaxRank elements. `rank(i)` gives input i's rank, -1 when
// unknown; `length(i)` the length of a 1-D input i, -1 when unknown. Applied here
// where the file declares ranks, and by shape inference (lib/shape) on the ranks it infers, before
// libonnx's function for the node runs.
struct InputRankProblem {
  int input = 0;
  std::string rule;  // "has rank 1: the op reads rank 3"
};
std::optional<InputRankProblem> FindInputRankProblem(const std::string& op,
                                                     const std::function<int(int)>& rank,
                                                     const std::function<int64_t(int)>& length);
const std::vector<std::string>& OpsWithInputRankRules();

// Throws Error(kBadInput) naming the first node that breaks a rule (recursively in subgraphs).
void ValidateNodeAttributes(const onnx::ModelProto& model);

}  // namespace porttool::io
