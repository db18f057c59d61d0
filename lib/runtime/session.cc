#include "lib/runtime/session.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "lib/analysis/liveness.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/execution.h"
#include "lib/runtime/float16.h"
#include "lib/runtime/fusion.h"
#include "lib/runtime/pad_fusion.h"
#include "lib/runtime/parallel.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/infer.h"
#include "lib/util/checked_math.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::runtime {

using TP = onnx::TensorProto;

struct Session::Plan {
  const onnx::GraphProto* graph = nullptr;
  std::vector<int> order;                      // node indices
  std::vector<const KernelFn*> kernels;        // per step
  std::vector<int> opsets;                     // per step
  std::vector<const onnx::OpSchema*> schemas;  // per step; nullptr for unknown ops
  // Per step: the input dtypes that last passed CheckInputTypes. The check goes through ONNX's
  // type strings (about 1 us per node); the dtypes rarely change between runs.
  mutable std::vector<std::vector<int32_t>> checked_dtypes;
  std::vector<std::shared_ptr<const void>> prepared;  // per step: the kernel's prepare result
  std::vector<bool> precomputed;    // per step: a Constant node whose value is in `constants`
  std::vector<bool> has_subgraphs;  // per step: the node carries If/Loop/Scan bodies
  std::vector<std::vector<std::string>> frees;        // per step: local values dead after it
  std::unordered_map<std::string, Tensor> constants;  // initializers
  // Per step: the elementwise tail fused into its kernel (fusion.h), or null. Unobserved runs
  // only; a step another's tail absorbed is skipped when that kernel applied the tail.
  std::vector<std::unique_ptr<FusedTail>> fusions;
  // Per step: the Pad folded into the Conv that reads it (pad_fusion.h), or null; unobserved runs
  // only, when the fold applies to the run's tensor. With folds, such runs free values after
  // `fused_frees` (each fold's input lives until its Conv), else after `frees`.
  std::vector<std::unique_ptr<FoldedPad>> pad_folds;
  std::vector<std::vector<std::string>> fused_frees;
  bool has_fusions = false;  // a tail or a fold
};

// Values visible while running one graph: its own, then the enclosing graph's. Keyed by views of
// names that outlive the run (the model's node outputs, the plan's fused names, the caller's
// input map): no key string is copied per node.
struct Session::Scope {
  std::unordered_map<std::string_view, Tensor> values;
  const Plan* plan = nullptr;
  const Scope* parent = nullptr;

  const Tensor* Find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
      if (auto it = s->plan->constants.find(name); it != s->plan->constants.end()) {
        return &it->second;
      }
    }
    return nullptr;
  }
};

namespace {

// Whether `kernel` is the default registry's kernel for the node's op (also when the session's
// registry is a copy of it): pad folds rely on what the built-in Pad and Conv kernels compute.
bool IsBuiltInKernel(const KernelFn& kernel, const onnx::NodeProto& node, int opset) {
  const KernelFn* builtin =
      KernelRegistry::Default().Find(CanonicalDomain(node.domain()), node.op_type(), opset);
  if (builtin == nullptr || builtin == &kernel) return builtin != nullptr;
  using Fn = void (*)(KernelContext&);
  const Fn* a = builtin->target<Fn>();
  const Fn* b = kernel.target<Fn>();
  return a != nullptr && b != nullptr && *a == *b;
}

// The node an initializer's overflow is reported against: its first reader, or none.
std::string FirstReader(const ir::GraphView& view, const std::string& tensor) {
  const std::vector<int>& readers = view.Consumers(tensor);
  if (readers.empty()) return "";
  return view.graph().node(*std::min_element(readers.begin(), readers.end())).name();
}

}  // namespace

namespace {

std::string OpLabel(const onnx::NodeProto& node, int opset) {
  std::string domain = CanonicalDomain(node.domain());
  return fmt::format("op '{}' (domain '{}', opset {}) of node '{}'", node.op_type(),
                     domain.empty() ? "ai.onnx" : domain, opset, node.name());
}

// The op schema's type constraints over the actual inputs: each input's dtype is one its formal
// parameter allows, and inputs sharing a type parameter (Clip's T for input, min and max) share
// the dtype. Kernels read inputs at the dtype the constraints promise; a model that breaks them
// (Clip of a float by an int64 bound) is malformed, and is refused here as bad input naming the
// input rather than failing inside the kernel as a porttool bug.
void CheckInputTypes(const onnx::OpSchema& schema, const onnx::NodeProto& node, int opset,
                     const std::vector<const Tensor*>& args) {
  const auto& formals = schema.inputs();
  std::map<std::string, size_t> first_of;  // type parameter -> first input bound to it
  for (size_t i = 0; i < args.size() && !formals.empty(); ++i) {
    const auto& formal = formals[std::min(i, formals.size() - 1)];
    const bool variadic = formal.GetOption() == onnx::OpSchema::Variadic;
    if (i >= formals.size() && !variadic) break;  // extra inputs: not for this check
    if (args[i] == nullptr) continue;
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(args[i]->dtype());
    onnx::DataType actual = nullptr;
    try {
      actual = onnx::Utils::DataTypeUtils::ToType(type);
    } catch (const std::exception&) {
      continue;  // a dtype ONNX has no name for: the kernel's own dispatch refuses it
    }
    const auto& allowed = formal.GetTypes();
    auto input_name = [&](size_t k) { return node.input(static_cast<int>(k)); };
    if (!allowed.empty() && !allowed.count(actual)) {
      // Opset 21 added int16/uint16 to QuantizeLinear/DequantizeLinear; the onnx library's
      // schemas may predate it.
      const bool wide =
          (node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear") &&
          (args[i]->dtype() == TP::INT16 || args[i]->dtype() == TP::UINT16);
      if (wide && opset >= 21) continue;
      throw Error(ErrorKind::kBadInput,
                  fmt::format("{}: input {} ('{}') is {}, which the op does not accept there{}",
                              OpLabel(node, opset), i, input_name(i), *actual,
                              wide ? " (16-bit quantization needs opset 21, or com.microsoft's "
                                     "QuantizeLinear/DequantizeLinear below it)"
                                   : ""),
                  node.name(), input_name(i));
    }
    if (variadic && !formal.GetIsHomogeneous()) continue;
    auto [it, first] = first_of.emplace(formal.GetTypeStr(), i);
    if (!first && args[it->second]->dtype() != args[i]->dtype()) {
      throw Error(ErrorKind::kBadInput,
                  fmt::format("{}: input {} ('{}') is {} but input {} ('{}') is {}; the op "
                              "needs both of type {}",
                              OpLabel(node, opset), i, input_name(i),
                              ir::DtypeName(args[i]->dtype()), it->second, input_name(it->second),
                              ir::DtypeName(args[it->second]->dtype()), formal.GetTypeStr()),
                  node.name(), input_name(i));
    }
  }
}

// Whether `dtypes` holds the dtype of every argument (-1 for an absent one).
bool SameDtypes(const std::vector<int32_t>& dtypes, const std::vector<const Tensor*>& args) {
  if (dtypes.size() != args.size()) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (dtypes[i] != (args[i] ? args[i]->dtype() : -1)) return false;
  }
  return true;
}

std::vector<int32_t> DtypesOf(const std::vector<const Tensor*>& args) {
  std::vector<int32_t> dtypes;
  for (const Tensor* t : args) dtypes.push_back(t ? t->dtype() : -1);
  return dtypes;
}

InputSpec SpecOf(const onnx::ValueInfoProto& vi) {
  InputSpec spec;
  spec.name = vi.name();
  const auto& tt = vi.type().tensor_type();
  spec.dtype = tt.elem_type();
  // The executor computes float16 and bfloat16 as float32 (see tensor_io.h).
  if (spec.dtype == TP::FLOAT16 || spec.dtype == TP::BFLOAT16) spec.dtype = TP::FLOAT;
  spec.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim())
    spec.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return spec;
}

// Sequence, optional and map inputs, and element types without a kernel path, are rejected
// before anything runs.
void CheckRunnableInput(const onnx::ValueInfoProto& vi) {
  if (vi.has_type() && !vi.type().has_tensor_type()) {
    ThrowBadInput(
        "input '{}' is not a tensor (sequence, optional or map); the executor runs "
        "tensor graphs only",
        vi.name());
  }
  int32_t dtype = vi.type().tensor_type().elem_type();
  if (dtype != 0 && ir::DtypeSize(dtype) == 0) {
    ThrowBadInput("input '{}' has element type {}, which the executor does not support", vi.name(),
                  ir::DtypeName(dtype));
  }
}

// Whether no element of a float or double tensor has an all-ones exponent (Inf or NaN). Counted
// over fixed blocks of the bit patterns, which the compiler vectorises (an early-exit isfinite
// loop ran at 12 GB/s and took 60% of a one-op model's run), with a stop after each block.
template <typename T>
bool AllFinite(const Tensor& t) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000 : 0x7ff0000000000000);
  constexpr int64_t kBlock = 1024;
  const auto* p = static_cast<const Bits*>(t.raw());
  const int64_t n = t.size();
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Bits bad = 0;
    for (int64_t j = 0; j < kBlock; ++j) bad += (p[i + j] & kExponent) == kExponent;
    if (bad != 0) return false;
  }
  for (; i < n; ++i) {
    if ((p[i] & kExponent) == kExponent) return false;
  }
  return true;
}

}  // namespace

namespace {

// Errors raised below a kernel (a tensor over the memory limit, an overflowing shape) do not know
// the node; they get it here. Allocation failures and index errors inside a kernel come from
// what the model asked for, so they are bad input naming the node, not porttool bugs.
void RunKernel(const KernelFn& kernel, KernelContext& ctx, const onnx::NodeProto& node) {
  auto where = [&] {
    return fmt::format("node '{}' ({}{}{})", node.name(), node.op_type(),
                       node.output_size() > 0 ? ", producing " : "",
                       node.output_size() > 0 ? "'" + node.output(0) + "'" : "");
  };
  try {
    kernel(ctx);
  } catch (const Error& e) {
    if (!e.node().empty()) throw;
    throw Error(e.kind(), fmt::format("{}: {}", where(), e.what()), node.name(), e.tensor());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::kBadInput, where() + ": out of memory", node.name());
  } catch (const std::length_error& e) {
    throw Error(ErrorKind::kBadInput, fmt::format("{}: size too large ({})", where(), e.what()),
                node.name());
  } catch (const std::out_of_range& e) {
    throw Error(ErrorKind::kBadInput, fmt::format("{}: index out of range ({})", where(), e.what()),
                node.name());
  } catch (const std::exception& e) {
    ThrowInternal("{}: {}", where(), e.what());
  }
}

// An op with no ONNX schema (a contrib op such as com.microsoft::QuantizeLinear) has no known
// output count to check the node against when the plan is built: an output its kernel leaves
// empty is then most likely one the model declared too many (found by fuzz_executor).
[[noreturn]] void ThrowNoValue(const onnx::NodeProto& node, int output, bool has_schema) {
  if (!has_schema) {
    throw Error(ErrorKind::kBadInput,
                fmt::format("node '{}' ({}) declares an output #{} that its op does not produce",
                            node.name(), node.op_type(), output),
                node.name());
  }
  ThrowInternal("node '{}' ({}): kernel produced no value for output {}", node.name(),
                node.op_type(), output);
}

}  // namespace

Session::Session(const io::Model& model, SessionOptions options)
    : model_(model), options_(options) {
  ScopedExecution planning(
      {.threads = options_.threads,
       .ort_compatible_resize =
           options_.ort_compatible_resize});  // prepare steps run kernels' code
  // The contrib ops' schemas (Gelu, FastGelu, ...) give their arity and input types to the
  // checks below; without them a session's checks depended on whether inference ran first.
  shape::RegisterContribSchemas();
  for (const auto& op : model.proto.opset_import()) {
    opsets_[CanonicalDomain(op.domain())] = static_cast<int>(op.version());
  }
  BuildPlan(model.proto.graph());
  std::vector<std::string> unknown;
  for (const auto& name : options_.float32_nodes) {
    if (!node_names_.count(name)) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    // Suggestions only for a single slip: a list of near misses for each would bury the point.
    std::vector<std::string> pool(node_names_.begin(), node_names_.end());
    std::sort(pool.begin(), pool.end());
    auto close =
        unknown.size() == 1 ? util::ClosestNames(unknown[0], pool) : std::vector<std::string>{};
    ThrowUsage("{} to compute in float32 {} not in the model: '{}'{}",
               unknown.size() == 1 ? "the node" : "the nodes", unknown.size() == 1 ? "is" : "are",
               util::Printable(util::Join(unknown, "', '")),
               close.empty()
                   ? ""
                   : fmt::format(" (close: '{}')", util::Printable(util::Join(close, "', '"))));
  }
  inputs_ = InputSpecsOf(model);
}

Session::~Session() = default;

int Session::fused_nodes() const {
  int count = 0;
  const Plan& plan = *plans_.at(&model_.proto.graph());
  for (const auto& tail : plan.fusions) {
    if (tail) count += static_cast<int>(tail->absorbed.size());
  }
  for (const auto& fold : plan.pad_folds) count += fold != nullptr;
  return count;
}

std::vector<std::string> Session::output_names() const {
  std::vector<std::string> names;
  for (const auto& o : model_.proto.graph().output()) names.push_back(o.name());
  return names;
}

void Session::BuildPlan(const onnx::GraphProto& graph) {
  auto plan = std::make_unique<Plan>();
  plan->graph = &graph;
  ir::GraphView view(graph);
  plan->order = view.TopoOrder();
  for (const auto& node : graph.node()) node_names_.insert(node.name());
  if (options_.float16) MarkUnroundedTensors(view);
  // Initializers first: prepare steps read constant inputs.
  for (const auto& init : graph.initializer()) {
    plan->constants[init.name()] = AtSessionPrecision(TensorFromProto(model_, init), init.name(),
                                                      FirstReader(view, init.name()));
    if (!overflows_.empty() && overflows_.back().tensor == init.name()) {
      overflows_.back().weight = true;
    }
  }
  const auto& registry = options_.registry ? *options_.registry : KernelRegistry::Default();
  std::unordered_set<std::string> produced;
  std::vector<bool> accepts_epilogue;
  for (size_t step = 0; step < plan->order.size(); ++step) {
    const auto& node = graph.node(plan->order[step]);
    std::string domain = CanonicalDomain(node.domain());
    auto it = opsets_.find(domain);
    int opset = it != opsets_.end() ? it->second : (domain.empty() ? 1 : 1);
    const KernelFn* fn = registry.Find(domain, node.op_type(), opset);
    if (fn == nullptr) {
      throw Error(ErrorKind::kBadInput,
                  fmt::format("{} is not supported by the executor{}", OpLabel(node, opset),
                              registry.HasOp(domain, node.op_type())
                                  ? " at this opset (convert the model's opset)"
                                  : " (no kernel for this op)"),
                  node.name());
    }
    // A node declaring more outputs than its op has (Relu with two) is a malformed model; left
    // to run, the kernel would leave the extra output empty, which looks like a kernel bug.
    // When the model's opset predates the op (Atanh at opset 7) its kernel still runs, so the
    // arity comes from the op's latest schema (found by fuzz_executor).
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, domain);
    const auto* arity =
        schema ? schema : onnx::OpSchemaRegistry::Schema(node.op_type(), INT_MAX, domain);
    if (arity && node.output_size() > arity->max_output()) {
      throw Error(ErrorKind::kBadInput,
                  fmt::format("{} declares {} outputs; the op has at most {}", OpLabel(node, opset),
                              node.output_size(), arity->max_output()),
                  node.name());
    }
    plan->kernels.push_back(fn);
    accepts_epilogue.push_back(registry.AcceptsEpilogue(domain, node.op_type(), opset));
    plan->opsets.push_back(opset);
    plan->schemas.push_back(schema);
    plan->checked_dtypes.emplace_back();
    const PrepareFn* prepare = registry.FindPrepare(domain, node.op_type(), opset);
    plan->prepared.push_back(prepare ? Prepare(*prepare, node, opset, *plan) : nullptr);
    // A Constant node's value is as constant as an initializer: later prepare steps see it
    // (exporters such as Paddle2ONNX give every conv weight as a Constant node), and a run
    // without an observer skips the node (PP-OCR cls: 250 of its 471 nodes).
    const bool precomputed = node.op_type() == "Constant" &&
                             CanonicalDomain(node.domain()).empty() && plan->prepared.back() &&
                             node.output_size() == 1 && !view.IsGraphOutput(node.output(0));
    if (precomputed) {
      plan->constants.emplace(
          node.output(0),
          AtSessionPrecision(*static_cast<const Tensor*>(plan->prepared.back().get()),
                             node.output(0), FirstReader(view, node.output(0))));
      // A weight as much as an initializer (exporters leave these nodes unnamed): named by its
      // reader.
      if (!overflows_.empty() && overflows_.back().tensor == node.output(0)) {
        overflows_.back().weight = true;
      }
    }
    plan->precomputed.push_back(precomputed);
    bool has_subgraphs = false;
    for (const auto& attr : node.attribute())
      has_subgraphs |= attr.has_g() || attr.graphs_size() > 0;
    plan->has_subgraphs.push_back(has_subgraphs);
    for (const auto& out : node.output()) {
      if (!out.empty()) produced.insert(out);
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) BuildPlan(attr.g());
      for (const auto& g : attr.graphs()) BuildPlan(g);
    }
  }
  // Every value produced here dies after its last local reader (or right away when nothing
  // reads it), unless the graph returns it: the same lifetimes the memory plan sizes.
  const auto last_use = analysis::LastReadSteps(view, plan->order);
  plan->frees.resize(plan->order.size());
  for (size_t step = 0; step < plan->order.size(); ++step) {
    for (const auto& out : graph.node(plan->order[step]).output()) {
      if (out.empty() || view.IsGraphOutput(out)) continue;
      auto lu = last_use.find(out);
      size_t last = lu != last_use.end() ? static_cast<size_t>(lu->second) : step;
      plan->frees[std::max(last, step)].push_back(out);
    }
  }
  for (const auto& [name, step] : last_use) {
    if (produced.count(name) || view.IsGraphOutput(name)) continue;
    if (view.GraphInput(name) && !view.Initializer(name)) plan->frees[step].push_back(name);
  }
  if (!options_.no_fusion) {
    plan->fusions = FindEpilogueFusions(view, plan->order, plan->constants,
                                        [&](size_t step) { return accepts_epilogue[step]; });
    plan->pad_folds =
        FindPadFolds(view, plan->order, plan->opsets, plan->constants, &model_, [&](size_t step) {
          return IsBuiltInKernel(*plan->kernels[step], graph.node(plan->order[step]),
                                 plan->opsets[step]);
        });
  } else {
    plan->fusions.resize(plan->order.size());
    plan->pad_folds.resize(plan->order.size());
  }
  for (const auto& f : plan->fusions) plan->has_fusions |= f != nullptr;
  if (std::any_of(plan->pad_folds.begin(), plan->pad_folds.end(),
                  [](const auto& f) { return f != nullptr; })) {
    plan->has_fusions = true;
    plan->fused_frees = FreesWithFolds(plan->frees, plan->pad_folds);
  }
  plans_[&graph] = std::move(plan);
}

void Session::MarkUnroundedTensors(const ir::GraphView& view) {
  const auto& graph = view.graph();
  if (options_.float32_nodes.empty()) return;
  auto kept = [&](int i) { return options_.float32_nodes.count(graph.node(i).name()) > 0; };
  // A weight or an input that only float32 nodes read is never on the accelerator: the host keeps
  // it as the file has it.
  auto only_kept_read = [&](const std::string& name) {
    const std::vector<int>& readers = view.Consumers(name);
    return !readers.empty() && std::all_of(readers.begin(), readers.end(), kept);
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    const bool constant = node.op_type() == "Constant" && CanonicalDomain(node.domain()).empty();
    for (const auto& out : node.output()) {
      if (!out.empty() && (kept(i) || (constant && only_kept_read(out)))) {
        unrounded_.insert(out);
      }
    }
  }
  for (const auto& init : graph.initializer()) {
    if (only_kept_read(init.name())) unrounded_.insert(init.name());
  }
  for (const auto& input : graph.input()) {
    if (only_kept_read(input.name())) unrounded_.insert(input.name());
  }
}

Tensor Session::AtSessionPrecision(const Tensor& t, const std::string& name,
                                   const std::string& node) {
  if (!options_.float16) return t;
  if (t.dtype() == TP::DOUBLE) {
    // No accelerator computes float64, and rounding it to binary16 would invent an error the
    // model's float64 parts do not have on any device: it stays float64, and the caller says so.
    if (kept_float64_names_.insert(name).second) kept_float64_.push_back(name);
    return t;
  }
  if (unrounded_.count(name)) return t;
  float max_abs = 0;
  Tensor rounded = RoundedToFloat16(t, &max_abs);
  if (max_abs > kFloat16Max) {
    auto seen = std::find_if(overflows_.begin(), overflows_.end(),
                             [&](const Float16Overflow& o) { return o.tensor == name; });
    if (seen == overflows_.end()) {
      overflows_.push_back({name, node, max_abs});
    } else {
      seen->max_abs = std::max(seen->max_abs, max_abs);
    }
  }
  return rounded;
}

std::shared_ptr<const void> Session::Prepare(const PrepareFn& prepare, const onnx::NodeProto& node,
                                             int opset, const Plan& plan) {
  std::vector<const Tensor*> constants;
  for (const auto& in : node.input()) {
    auto it = plan.constants.find(in);
    constants.push_back(in.empty() || it == plan.constants.end() ? nullptr : &it->second);
  }
  KernelContext ctx(node, opset, std::move(constants));
  ctx.set_model(&model_);
  try {
    return prepare(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowInternal("node '{}' ({}) prepare: {}", node.name(), node.op_type(), e.what());
  }
}

const Session::Plan& Session::PlanFor(const onnx::GraphProto& graph) {
  auto it = plans_.find(&graph);
  if (it == plans_.end()) ThrowInternal("subgraph '{}' was not planned", graph.name());
  return *it->second;
}

void Session::ValidateInputs(const TensorMap& inputs) {
  warnings_.clear();
  std::unordered_set<std::string_view> known;  // a set: a model may have 10^5 inputs
  for (const auto& spec : inputs_) known.insert(spec.name);
  for (const auto& [name, _] : inputs) {
    if (known.count(name)) continue;
    std::vector<std::string> names;
    for (const auto& spec : inputs_) names.push_back(spec.name);
    std::string listed = names.size() <= 20
                             ? "inputs: " + util::Join(names, ", ")
                             : "closest of its " + util::GroupDigits(names.size()) +
                                   " inputs: " + util::Join(util::ClosestNames(name, names), ", ");
    ThrowUsage("'{}' is not an input of the model ({})", name, listed);
  }
  for (const auto& spec : inputs_) {
    auto it = inputs.find(spec.name);
    if (it == inputs.end()) {
      ThrowUsage("input '{}' is missing: give its value, or generate random inputs", spec.name);
    }
    const Tensor& t = it->second;
    if (spec.dtype != 0 && t.dtype() != spec.dtype) {
      ThrowBadInput("input '{}': the model expects {}, got {}", spec.name,
                    ir::DtypeName(spec.dtype), t.DebugString());
    }
    if (!spec.has_shape) continue;
    if (t.rank() != static_cast<int>(spec.dims.size())) {
      ThrowBadInput("input '{}': the model expects rank {}, got {}", spec.name, spec.dims.size(),
                    t.DebugString());
    }
    for (size_t i = 0; i < spec.dims.size(); ++i) {
      if (spec.dims[i] >= 0 && spec.dims[i] != t.dim(static_cast<int>(i))) {
        ThrowBadInput("input '{}': dim {} must be {}, got {}", spec.name, i, spec.dims[i],
                      t.DebugString());
      }
    }
    bool finite = t.dtype() == TP::FLOAT    ? AllFinite<float>(t)
                  : t.dtype() == TP::DOUBLE ? AllFinite<double>(t)
                                            : true;
    if (!finite) {
      std::string msg = fmt::format("input '{}' contains NaN or Inf values", spec.name);
      if (options_.fail_on_nan) ThrowBadInput("{}", msg);
      warnings_.push_back(msg);
    }
  }
}

std::vector<NamedTensor> Session::Run(const TensorMap& inputs, const Observer& observer) {
  if (!observer) return RunObserved(inputs, nullptr);
  return RunObserved(inputs, [&observer](const ProducedTensor& p) {
    if (!p.in_subgraph) observer(p.name, p.value);
  });
}

std::vector<NamedTensor> Session::RunObserved(const TensorMap& inputs,
                                              const NodeObserver& observer) {
  ScopedExecution run(
      {.threads = options_.threads, .ort_compatible_resize = options_.ort_compatible_resize});
  ValidateInputs(inputs);
  const Plan& plan = PlanFor(model_.proto.graph());
  Scope scope;
  scope.plan = &plan;
  for (const auto& [name, t] : inputs) scope.values[name] = AtSessionPrecision(t, name, "");
  std::vector<Tensor> outputs = Execute(plan, scope, observer ? &observer : nullptr, false);
  std::vector<NamedTensor> named;
  auto names = output_names();
  for (size_t i = 0; i < names.size(); ++i) named.push_back({names[i], std::move(outputs[i])});
  return named;
}

// A graph output of `node` the caller gave a buffer for, with its declared dtype and (when the
// declared shape is static) byte size, which narrow which allocation may use the buffer.
struct Session::BoundOutput {
  int index = 0;
  int32_t dtype = 0;
  size_t bytes = 0;
  OutputBuffer buffer;
};

std::optional<Session::BoundOutput> Session::FindBoundOutput(const onnx::NodeProto& node) const {
  if (output_buffers_ == nullptr) return std::nullopt;
  for (int i = 0; i < node.output_size(); ++i) {
    auto it = output_buffers_->find(node.output(i));
    if (it == output_buffers_->end()) continue;
    BoundOutput b{i, 0, 0, it->second};
    for (const auto& out : model_.proto.graph().output()) {
      if (out.name() != node.output(i) || !out.type().has_tensor_type()) continue;
      const auto& tt = out.type().tensor_type();
      b.dtype = tt.elem_type();
      std::vector<int64_t> dims;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() >= 0) dims.push_back(d.dim_value());
      }
      auto count = util::CheckedElementCount(dims);
      if (tt.has_shape() && dims.size() == static_cast<size_t>(tt.shape().dim_size()) && count &&
          *count < (int64_t{1} << 48)) {
        b.bytes = static_cast<size_t>(*count) * ir::DtypeSize(b.dtype);
      }
    }
    return b;
  }
  return std::nullopt;
}

namespace {

// Only output `bound` may live in the caller's buffer: another output of the same node that took
// it (same size and type) gets its own copy, since the buffer receives `bound`'s values.
void UnaliasCallerBuffer(KernelContext& ctx, int bound, const void* buffer) {
  for (int i = 0; i < ctx.output_count(); ++i) {
    if (i != bound && !ctx.output(i).empty() && ctx.output(i).raw() == buffer) {
      ctx.output(i) = ctx.output(i).Clone();
    }
  }
}

}  // namespace

std::vector<NamedTensor> Session::RunInto(const TensorMap& inputs,
                                          const std::map<std::string, OutputBuffer>& buffers) {
  output_buffers_ = &buffers;
  struct Reset {
    const std::map<std::string, OutputBuffer>*& p;
    ~Reset() { p = nullptr; }
  } reset{output_buffers_};
  return RunObserved(inputs, nullptr);
}

std::vector<NamedTensor> Session::RunTimed(
    const TensorMap& inputs, const std::function<void(const onnx::NodeProto&)>& after_node) {
  after_node_ = &after_node;
  struct Reset {
    const std::function<void(const onnx::NodeProto&)>*& p;
    ~Reset() { p = nullptr; }
  } reset{after_node_};
  return RunObserved(inputs, nullptr);
}

std::vector<Tensor> Session::Execute(const Plan& plan, Scope& scope, const NodeObserver* observer,
                                     bool nested) {
  const auto& graph = *plan.graph;
  const bool fused = plan.has_fusions && observer == nullptr;
  const auto& frees = fused && !plan.fused_frees.empty() ? plan.fused_frees : plan.frees;
  std::vector<char> absorbed(fused ? plan.order.size() : 0);  // this run: tail steps applied
  // This run: per Conv step, the Pad folded into it.
  std::vector<const FoldedPad*> folded(fused ? plan.order.size() : 0);
  for (size_t step = 0; step < plan.order.size(); ++step) {
    const FoldedPad* fold = fused ? plan.pad_folds[step].get() : nullptr;
    if (fold && FoldApplies(*fold, scope.Find(fold->input))) {
      folded[fold->conv_step] = fold;
      absorbed[step] = 1;
    }
    if (fused && absorbed[step]) {
      for (const auto& dead : frees[step]) scope.values.erase(dead);
      continue;
    }
    // Observers see every node's outputs, so only unobserved runs skip precomputed constants.
    if (plan.precomputed[step] && observer == nullptr) continue;
    const auto& model_node = graph.node(plan.order[step]);
    const auto& node = fused && folded[step] ? folded[step]->conv : model_node;
    std::vector<const Tensor*> args;
    for (const auto& in : node.input()) {
      if (in.empty()) {
        args.push_back(nullptr);
        continue;
      }
      const Tensor* t = scope.Find(in);
      if (t == nullptr) {
        throw Error(ErrorKind::kBadInput,
                    fmt::format("node '{}' ({}): input '{}' is not defined by any node, "
                                "initializer or graph input",
                                node.name(), node.op_type(), in),
                    node.name(), in);
      }
      args.push_back(t);
    }
    if (plan.schemas[step] && !SameDtypes(plan.checked_dtypes[step], args)) {
      CheckInputTypes(*plan.schemas[step], node, plan.opsets[step], args);
      plan.checked_dtypes[step] = DtypesOf(args);
    }
    KernelContext ctx(node, plan.opsets[step], std::move(args));
    ctx.set_model(&model_);
    ctx.set_prepared(plan.prepared[step]);
    const FusedTail* tail = fused ? plan.fusions[step].get() : nullptr;
    Epilogue epilogue;
    if (tail) {
      epilogue.spec = &tail->spec;
      if (!tail->spec.residual.empty()) epilogue.residual = scope.Find(tail->spec.residual);
      ctx.set_epilogue(&epilogue);
    }
    if (plan.has_subgraphs[step]) {  // a std::function per node costs an allocation
      ctx.set_subgraph_runner(
          [this, &scope, observer](const onnx::GraphProto& g, std::vector<Tensor> in) {
            Scope child;
            child.plan = &PlanFor(g);
            child.parent = &scope;
            for (size_t i = 0; i < in.size(); ++i)
              child.values[g.input(static_cast<int>(i)).name()] = std::move(in[i]);
            return Execute(*child.plan, child, observer, true);
          });
    }
    auto bound = nested ? std::nullopt : FindBoundOutput(node);
    {
      std::optional<ScopedOutputBuffer> in_caller_memory;
      if (bound) in_caller_memory.emplace(bound->dtype, bound->bytes, bound->buffer);
      RunKernel(*plan.kernels[step], ctx, node);
    }
    if (bound) UnaliasCallerBuffer(ctx, bound->index, bound->buffer.data);
    const bool tail_applied = tail && ctx.epilogue_applied();
    if (tail_applied) {
      for (size_t s : tail->absorbed) absorbed[s] = 1;
    }
    for (int i = 0; i < ctx.output_count(); ++i) {
      if (!ctx.wants_output(i)) continue;
      if (ctx.output(i).empty()) ThrowNoValue(node, i, plan.schemas[step] != nullptr);
      const std::string& name = tail_applied && i == 0 ? tail->output : node.output(i);
      if (options_.float16) ctx.output(i) = AtSessionPrecision(ctx.output(i), name, node.name());
      if (observer) (*observer)(ProducedTensor{name, ctx.output(i), node, nested});
      scope.values[name] = std::move(ctx.output(i));
    }
    for (const auto& dead : frees[step]) scope.values.erase(dead);
    if (after_node_ && !nested) (*after_node_)(model_node);
  }
  std::vector<Tensor> outputs;
  for (const auto& out : graph.output()) {
    const Tensor* t = scope.Find(out.name());
    if (t == nullptr) {
      ThrowBadInput("graph output '{}' is not produced by any node or initializer", out.name());
    }
    outputs.push_back(*t);
  }
  return outputs;
}

namespace {

// Integers uniform in [lo, hi], both included; the bounds must be whole numbers the type holds.
template <class T>
void FillIntegers(Tensor& t, const InputSpec& spec, const shape::ValueRange& r,
                  std::mt19937_64& rng) {
  constexpr double kMin = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double kMax = static_cast<double>(std::numeric_limits<T>::max());
  if (r.lo != std::floor(r.lo) || r.hi != std::floor(r.hi) || r.lo < kMin || r.hi > kMax ||
      r.hi - r.lo >= 9.007199254740992e15) {
    ThrowUsage("input range: '{}' is {}: expected whole numbers from {:g} to {:g}, got {:g}:{:g}",
               spec.name, ir::DtypeName(spec.dtype), kMin, kMax, r.lo, r.hi);
  }
  auto lo = static_cast<int64_t>(r.lo);
  auto span = static_cast<uint64_t>(static_cast<int64_t>(r.hi) - lo) + 1;
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = static_cast<T>(lo + int64_t(rng() % span));
}

void FillInRange(Tensor& t, const InputSpec& spec, const shape::ValueRange& r,
                 std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (spec.dtype) {
    case TP::FLOAT: {
      float* p = t.mutable_data<float>();
      for (int64_t i = 0; i < t.size(); ++i) p[i] = float(r.lo + (r.hi - r.lo) * unit(rng));
      return;
    }
    case TP::DOUBLE: {
      double* p = t.mutable_data<double>();
      for (int64_t i = 0; i < t.size(); ++i) p[i] = r.lo + (r.hi - r.lo) * unit(rng);
      return;
    }
    case TP::INT8:
      return FillIntegers<int8_t>(t, spec, r, rng);
    case TP::UINT8:
      return FillIntegers<uint8_t>(t, spec, r, rng);
    case TP::INT32:
      return FillIntegers<int32_t>(t, spec, r, rng);
    case TP::INT64:
      return FillIntegers<int64_t>(t, spec, r, rng);
    default:
      ThrowUsage("input range: '{}' is {}, which takes no range; give its value", spec.name,
                 ir::DtypeName(spec.dtype));
  }
}

}  // namespace

Tensor RandomTensor(const InputSpec& spec, std::mt19937_64& rng,
                    const std::optional<shape::ValueRange>& range) {
  for (int64_t d : spec.dims) {
    if (d < 0) {
      ThrowUsage("input '{}' has a dynamic dim; pin its input shape ({}:DIMS)", spec.name,
                 spec.name);
    }
  }
  Tensor t(spec.dtype, spec.dims);
  if (range) {
    FillInRange(t, spec, *range, rng);
    return t;
  }
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto fill = [&](auto* p, auto gen) {
    for (int64_t i = 0; i < t.size(); ++i) p[i] = gen();
  };
  switch (spec.dtype) {
    case TP::FLOAT:
      fill(t.mutable_data<float>(), [&] { return float(unit(rng)); });
      break;
    case TP::DOUBLE:
      fill(t.mutable_data<double>(), [&] { return unit(rng); });
      break;
    case TP::BOOL:
      fill(t.mutable_data<bool>(), [&] { return unit(rng) < 0.5; });
      break;
    case TP::INT8:
      fill(t.mutable_data<int8_t>(), [&] { return int8_t(rng() % 10); });
      break;
    case TP::UINT8:
      fill(t.mutable_data<uint8_t>(), [&] { return uint8_t(rng() % 10); });
      break;
    case TP::INT32:
      fill(t.mutable_data<int32_t>(), [&] { return int32_t(rng() % 10); });
      break;
    case TP::INT64:
      fill(t.mutable_data<int64_t>(), [&] { return int64_t(rng() % 10); });
      break;
    default:
      ThrowUsage("input '{}': cannot generate random {} values; give its value", spec.name,
                 ir::DtypeName(spec.dtype));
  }
  return t;
}

std::vector<InputSpec> InputSpecsOf(const io::Model& model) {
  std::vector<InputSpec> specs;
  ir::GraphView view(model.proto.graph());
  for (const auto* vi : view.RealInputs()) {
    CheckRunnableInput(*vi);
    specs.push_back(SpecOf(*vi));
  }
  return specs;
}

TensorMap RandomInputs(const Session& session, uint64_t seed, const shape::InputRanges& ranges) {
  return CompleteWithRandom(session.inputs(), {}, seed, ranges);
}

TensorMap RandomInputs(const std::vector<InputSpec>& inputs, uint64_t seed,
                       const shape::InputRanges& ranges) {
  return CompleteWithRandom(inputs, {}, seed, ranges);
}

TensorMap CompleteWithRandom(const Session& session, TensorMap given, uint64_t seed,
                             const shape::InputRanges& ranges) {
  return CompleteWithRandom(session.inputs(), std::move(given), seed, ranges);
}

TensorMap CompleteWithRandom(const std::vector<InputSpec>& inputs, TensorMap given, uint64_t seed,
                             const shape::InputRanges& ranges) {
  std::mt19937_64 rng(seed);
  for (const auto& spec : inputs) {
    // Every input draws from its own stream so giving one input does not change the others.
    std::mt19937_64 input_rng(rng());
    if (given.count(spec.name)) continue;
    auto range = ranges.find(spec.name);
    given[spec.name] = RandomTensor(
        spec, input_rng,
        range == ranges.end() ? std::nullopt : std::optional<shape::ValueRange>(range->second));
  }
  return given;
}

}  // namespace porttool::runtime
