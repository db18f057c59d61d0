#include "lib/runtime/tensor_store.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lib/io/atomic_file.h"
#include "lib/io/input_file.h"
#include "lib/io/run_inputs.h"
#include "lib/ir/dtype.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "lib/util/json_text.h"

namespace porttool::runtime {
namespace {

namespace fs = std::filesystem;
constexpr const char* kIndex = "tensors.json";
constexpr const char* kFormat = "porttool-tensors/1";

}  // namespace

TensorStore TensorStore::Create(const fs::path& dir) {
  io::GuardOutput(dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    ThrowUsage("'{}' already exists and is not empty: give a new directory for the tensors",
               dir.string());
  }
  fs::create_directories(dir, ec);
  if (ec) ThrowBadInput("cannot create '{}': {}", dir.string(), ec.message());
  TensorStore store;
  store.dir_ = dir;
  return store;
}

TensorStore TensorStore::Open(const fs::path& dir) {
  fs::path index = dir / kIndex;
  std::error_code ec;
  if (!std::filesystem::exists(index, ec)) {
    ThrowBadInput("cannot read '{}': '{}' is not a tensor directory (as compare saves outputs)",
                  index.string(), dir.string());
  }
  std::string text = io::ReadInputFile(index, "tensor index");
  TensorStore store;
  store.dir_ = dir;
  try {
    auto doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != kFormat) {
      ThrowBadInput("{}: expected \"format\": \"{}\"", index.string(), kFormat);
    }
    for (const auto& t : doc.at("tensors")) {
      StoredTensor e{t.at("name"), t.at("role"), t.at("file"), t.value("dtype", ""),
                     t.value("shape", std::vector<int64_t>{})};
      if (e.file.find('/') != std::string::npos || e.file.find("..") != std::string::npos) {
        ThrowBadInput("{}: tensor '{}' has file '{}' outside the directory", index.string(), e.name,
                      e.file);
      }
      store.by_name_[e.name] = store.entries_.size();
      store.entries_.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    ThrowBadInput("{}: malformed tensor index: {}", index.string(), e.what());
  }
  return store;
}

void TensorStore::Put(const std::string& name, const std::string& role, const Tensor& value) {
  if (by_name_.count(name)) return;  // a tensor is produced once; keep the first
  // The index keeps file names unique whatever the tensor names sanitize to.
  std::string file = fmt::format("{:05d}_{}", entries_.size(), TensorFileNames({name}, ".npy")[0]);
  WriteNpy(dir_ / file, value);
  by_name_[name] = entries_.size();
  entries_.push_back({name, role, file, ir::DtypeName(value.dtype()), value.shape()});
}

void TensorStore::Finish() const {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& e : entries_) {
    tensors.push_back({{"name", e.name},
                       {"role", e.role},
                       {"file", e.file},
                       {"dtype", e.dtype},
                       {"shape", e.shape}});
  }
  nlohmann::json doc = {{"format", kFormat}, {"tensors", tensors}};
  io::WriteFileAtomic(dir_ / kIndex, util::DumpJson(doc, 1) + "\n");
}

const StoredTensor* TensorStore::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

Tensor TensorStore::Read(const StoredTensor& entry) const { return ReadNpy(dir_ / entry.file); }

}  // namespace porttool::runtime
