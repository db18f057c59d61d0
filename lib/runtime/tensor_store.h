// A directory of named tensors: one .npy file per tensor plus DIR/tensors.json, which lists, in
// the order they were produced, each tensor's name, role (input, output, intermediate), file,
// dtype and shape. `compare` streams the reference run's outputs into one (a temporary directory
// without --per-tensor; a kept one, intermediates too, for --save-outputs), and reads one back for
// --load-outputs, so that a run elsewhere (a board, another runtime) can be compared by writing
// the same layout.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/runtime/tensor.h"

namespace porttool::runtime {

struct StoredTensor {
  std::string name;
  std::string role;  // "input", "output" or "intermediate"
  std::string file;  // relative to the directory
  std::string dtype;
  std::vector<int64_t> shape;
};

class TensorStore {
 public:
  // A new store in `dir`, which must not exist or be empty (never mixes two runs).
  static TensorStore Create(const std::filesystem::path& dir);
  // An existing store; Error(kBadInput) naming DIR/tensors.json (or the .npy) when it is missing
  // or malformed.
  static TensorStore Open(const std::filesystem::path& dir);

  // Writes the tensor's file now (the caller's memory is released as the run goes on).
  void Put(const std::string& name, const std::string& role, const Tensor& value);
  // Writes tensors.json atomically; a store without it is incomplete.
  void Finish() const;

  const StoredTensor* Find(const std::string& name) const;
  Tensor Read(const StoredTensor& entry) const;
  const std::vector<StoredTensor>& entries() const { return entries_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::vector<StoredTensor> entries_;
  std::map<std::string, size_t> by_name_;
};

}  // namespace porttool::runtime
