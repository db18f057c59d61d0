#include "lib/runtime/custom_op_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "lib/ir/dtype.h"
#include "lib/runtime/custom_op_abi.h"
#include "lib/util/error.h"

namespace porttool::runtime {
namespace {

namespace fs = std::filesystem;

fs::path FindLibrary(const fs::path& dir, const std::string& symbol) {
  std::string name = CustomOpLibraryName(symbol);
  for (const auto& candidate : {dir / "build" / name, dir / name}) {
    if (fs::is_regular_file(candidate)) return candidate;
  }
  ThrowBadInput(
      "custom op {}: no built kernel library {} in {}/build/ or {}/ (build the package first: "
      "cmake -S {} -B {}/build && cmake --build {}/build)",
      dir.string(), name, dir.string(), dir.string(), dir.string(), dir.string(), dir.string());
}

// Keeps the node's attributes in the ABI's plain form for the duration of one call.
struct AbiAttributes {
  std::vector<std::vector<int64_t>> ints;
  std::vector<std::vector<float>> floats;
  std::vector<pt_attribute> list;

  explicit AbiAttributes(const onnx::NodeProto& node) {
    ints.reserve(node.attribute_size());
    floats.reserve(node.attribute_size());
    for (const auto& a : node.attribute()) {
      pt_attribute p{};
      p.name = a.name().c_str();
      p.type = a.type();
      p.i = a.i();
      p.f = a.f();
      p.s = a.s().c_str();
      ints.emplace_back(a.ints().begin(), a.ints().end());
      floats.emplace_back(a.floats().begin(), a.floats().end());
      p.count = a.type() == onnx::AttributeProto::INTS ? a.ints_size() : a.floats_size();
      p.ints = ints.back().data();
      p.floats = floats.back().data();
      list.push_back(p);
    }
  }
};

std::vector<int64_t> OutputShape(const shape::CustomOpSpec& spec, const KernelContext& ctx, int i) {
  if (spec.shape_rule == "same_as_input") return ctx.input(spec.shape_input).shape();
  return spec.outputs.at(i).shape;
}

KernelFn MakeKernel(const LoadedCustomOp& loaded, const pt_custom_op* op) {
  return [spec = loaded.spec, library = loaded.library.string(), handle = loaded.handle,
          op](KernelContext& ctx) {
    std::vector<pt_tensor> inputs(ctx.input_count(), pt_tensor{});
    for (int i = 0; i < ctx.input_count(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& t = ctx.input(i);
      if (i < static_cast<int>(spec.inputs.size()) && t.dtype() != spec.inputs[i].dtype) {
        ctx.Fail(fmt::format("input {} is {}, op.json of {} declares {}", i, t.DebugString(),
                             library, ir::DtypeName(spec.inputs[i].dtype)));
      }
      inputs[i] = {t.dtype(), t.rank(), t.shape().data(), const_cast<void*>(t.raw())};
    }
    std::vector<pt_tensor> outputs(ctx.output_count());
    for (int i = 0; i < ctx.output_count(); ++i) {
      ctx.output(i) = Tensor(spec.outputs.at(i).dtype, OutputShape(spec, ctx, i));
      Tensor& t = ctx.output(i);
      outputs[i] = {t.dtype(), t.rank(), t.shape().data(), t.mutable_raw()};
    }
    AbiAttributes attrs(ctx.node());
    auto num_attrs = static_cast<int32_t>(attrs.list.size());
    size_t scratch_bytes =
        op->scratch_size(inputs.data(), ctx.input_count(), attrs.list.data(), num_attrs);
    Tensor scratch(onnx::TensorProto::UINT8, {static_cast<int64_t>(scratch_bytes)});
    int32_t status =
        op->compute(inputs.data(), ctx.input_count(), outputs.data(), ctx.output_count(),
                    attrs.list.data(), num_attrs, scratch_bytes ? scratch.mutable_raw() : nullptr);
    if (status != PT_OK) {
      ctx.Fail(fmt::format("custom kernel {} returned status {} ({})", library, status,
                           op->status_string ? op->status_string(status) : "no description"));
    }
  };
}

}  // namespace

std::string CustomOpLibraryName(const std::string& symbol) {
  return "libporttool_" + symbol + ".so";
}

void CustomOpSet::Load(const fs::path& dir) {
  LoadedCustomOp loaded;
  loaded.dir = dir;
  loaded.spec = shape::ReadOpSpec(dir);
  shape::RegisterCustomOpSchema(loaded.spec);
  loaded.library = FindLibrary(dir, loaded.spec.symbol);
  void* handle = dlopen(loaded.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ThrowBadInput("custom op {}: cannot load {}: {}", dir.string(), loaded.library.string(),
                  dlerror());
  }
  loaded.handle = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  auto entry = reinterpret_cast<pt_custom_op_entry_fn>(dlsym(handle, PT_CUSTOM_OP_ENTRY));
  if (entry == nullptr) {
    ThrowBadInput("custom op {}: {} does not export {} (not built by a scaffold-op package?)",
                  dir.string(), loaded.library.string(), PT_CUSTOM_OP_ENTRY);
  }
  const pt_custom_op* op = entry();
  if (op == nullptr || op->abi_version != PT_CUSTOM_OP_ABI_VERSION) {
    ThrowBadInput(
        "custom op {}: {} speaks custom-op ABI version {}, porttool speaks {} (rebuild "
        "the package with this porttool's scaffold-op)",
        dir.string(), loaded.library.string(), op ? op->abi_version : 0, PT_CUSTOM_OP_ABI_VERSION);
  }
  if (op->compute == nullptr || op->scratch_size == nullptr || op->domain == nullptr ||
      op->op_type == nullptr || loaded.spec.domain != op->domain ||
      loaded.spec.op_type != op->op_type) {
    ThrowBadInput("custom op {}: {} implements {}::{}, op.json describes {}::{}", dir.string(),
                  loaded.library.string(), op->domain ? op->domain : "?",
                  op->op_type ? op->op_type : "?", loaded.spec.domain, loaded.spec.op_type);
  }
  loaded.handle = std::shared_ptr<void>(loaded.handle, const_cast<pt_custom_op*>(op));
  ops_.push_back(std::move(loaded));
}

KernelRegistry CustomOpSet::MakeRegistry(bool override_builtin) const {
  KernelRegistry registry = KernelRegistry::Default();
  for (const auto& loaded : ops_) {
    const auto& spec = loaded.spec;
    if (registry.HasOp(spec.domain, spec.op_type)) {
      if (!override_builtin) continue;
      registry.Remove(spec.domain, spec.op_type);
    }
    auto* op = static_cast<const pt_custom_op*>(loaded.handle.get());
    registry.Register(spec.domain, spec.op_type, 1, 1000, MakeKernel(loaded, op));
  }
  return registry;
}

void CustomOpSet::CheckModel(const onnx::ModelProto& model) const {
  for (const auto& loaded : ops_) {
    shape::CheckModelAgainstSpec(model, loaded.spec, (loaded.dir / "op.json").string());
  }
}

}  // namespace porttool::runtime
