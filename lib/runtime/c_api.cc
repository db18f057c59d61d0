// The C API of include/porttool/runtime.h over runtime::Session. Exceptions never cross the C
// boundary: every entry point catches, records the message and category per thread, and returns
// the category as a pt_status.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "include/porttool/runtime.h"
#include "lib/io/model.h"
#include "lib/ir/dtype.h"
#include "lib/runtime/execution.h"
#include "lib/runtime/session.h"
#include "lib/util/error.h"

struct pt_session {
  std::unique_ptr<porttool::io::Model> model;
  std::unique_ptr<porttool::runtime::Session> session;
  std::vector<pt_tensor_info> inputs;
  std::vector<pt_tensor_info> outputs;
  std::vector<std::string> names;  // storage for the info structs' name pointers
  int threads = 0;                 // as asked for (0: the default)
};

namespace {

using porttool::Error;
using porttool::ErrorKind;

thread_local std::string last_error;
thread_local pt_status last_code = PT_OK;

pt_status Fail(pt_status code, std::string message) {
  last_error = std::move(message);
  last_code = code;
  return code;
}

pt_status StatusFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return PT_ERR_USAGE;
    case ErrorKind::kInternal:
      return PT_ERR_INTERNAL;
    default:
      return PT_ERR_BAD_INPUT;
  }
}

// Runs `body`, turning any exception into a status and the thread's last error.
template <typename Body>
pt_status Guard(Body&& body) {
  try {
    body();
    return PT_OK;
  } catch (const Error& e) {
    return Fail(StatusFor(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return Fail(PT_ERR_BAD_INPUT, "out of memory");
  } catch (const std::exception& e) {
    return Fail(PT_ERR_INTERNAL, std::string("internal error: ") + e.what());
  }
}

pt_tensor_info MakeInfo(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                        bool has_shape) {
  pt_tensor_info info{};
  info.name = name.c_str();
  const bool computed_as_float =  // see tensor_io.h
      dtype == onnx::TensorProto::FLOAT16 || dtype == onnx::TensorProto::BFLOAT16;
  info.dtype = computed_as_float ? PT_FLOAT : dtype;
  if (!has_shape) return info;  // rank 0 with no shape: unknown
  if (dims.size() > PT_MAX_RANK) {
    porttool::ThrowBadInput("tensor '{}' has rank {}; the C API handles up to {}", name,
                            dims.size(), PT_MAX_RANK);
  }
  info.rank = dims.size();
  for (size_t i = 0; i < dims.size(); ++i) info.dims[i] = dims[i];
  return info;
}

std::vector<int64_t> DeclaredDims(const onnx::TypeProto& type, bool* has_shape) {
  std::vector<int64_t> dims;
  *has_shape = type.tensor_type().has_shape();
  for (const auto& d : type.tensor_type().shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return dims;
}

void Describe(pt_session& s) {
  const auto& graph = s.model->proto.graph();
  const auto& specs = s.session->inputs();
  s.names.reserve(specs.size() + graph.output_size());
  for (const auto& spec : specs) s.names.push_back(spec.name);
  for (const auto& out : graph.output()) s.names.push_back(out.name());
  for (size_t i = 0; i < specs.size(); ++i) {
    s.inputs.push_back(MakeInfo(s.names[i], specs[i].dtype, specs[i].dims, specs[i].has_shape));
  }
  for (int i = 0; i < graph.output_size(); ++i) {
    bool has_shape = false;
    auto dims = DeclaredDims(graph.output(i).type(), &has_shape);
    s.outputs.push_back(MakeInfo(s.names[specs.size() + i],
                                 graph.output(i).type().tensor_type().elem_type(), dims,
                                 has_shape));
  }
}

const pt_tensor_info* InfoAt(const std::vector<pt_tensor_info>& infos, size_t index,
                             const char* what) {
  if (index >= infos.size()) {
    porttool::ThrowUsage("{} index {} out of range: the model has {}", what, index, infos.size());
  }
  return &infos[index];
}

// Resolves a caller tensor to a model tensor name: by name, or by position when name is NULL.
std::string NameOf(const pt_tensor& t, size_t position, const std::vector<pt_tensor_info>& infos,
                   const char* what) {
  if (t.name != nullptr) {
    for (const auto& info : infos) {
      if (std::strcmp(info.name, t.name) == 0) return t.name;
    }
    porttool::ThrowUsage("the model has no {} named '{}'", what, t.name);
  }
  return InfoAt(infos, position, what)->name;
}

porttool::runtime::TensorMap WrapInputs(const pt_session& s, const pt_tensor* inputs, size_t n) {
  porttool::runtime::TensorMap map;
  for (size_t i = 0; i < n; ++i) {
    const pt_tensor& t = inputs[i];
    std::string name = NameOf(t, i, s.inputs, "input");
    if (t.rank > PT_MAX_RANK) porttool::ThrowUsage("input '{}': rank {} > {}", name, t.rank, 8);
    if (t.data == nullptr) porttool::ThrowUsage("input '{}': data is NULL", name);
    if (pt_dtype_size(t.dtype) == 0) {
      porttool::ThrowUsage("input '{}': unsupported dtype {}", name, t.dtype);
    }
    std::vector<int64_t> dims(t.dims, t.dims + t.rank);
    auto view = porttool::runtime::Tensor::View(t.dtype, dims, t.data, nullptr);
    if (t.bytes != 0 && t.bytes < view.bytes()) {
      porttool::ThrowUsage("input '{}': {} bytes given, its dims need {}", name, t.bytes,
                           view.bytes());
    }
    if (!map.emplace(name, std::move(view)).second) {
      porttool::ThrowUsage("input '{}' given twice", name);
    }
  }
  return map;
}

void CopyOut(const porttool::runtime::Tensor& value, const std::string& name, pt_tensor& out) {
  if (value.rank() > PT_MAX_RANK) {
    porttool::ThrowBadInput("output '{}' has rank {}; the C API handles up to {}", name,
                            value.rank(), PT_MAX_RANK);
  }
  if (out.data == nullptr || out.bytes < value.bytes()) {
    porttool::ThrowUsage("output '{}' ({}) needs {} bytes; the buffer holds {}", name,
                         value.DebugString(), value.bytes(), out.data ? out.bytes : 0);
  }
  // The executor produced it in the caller's buffer already (Session::RunInto) or it copies.
  if (value.raw() != out.data) std::memcpy(out.data, value.raw(), value.bytes());
  out.dtype = value.dtype();
  out.rank = static_cast<size_t>(value.rank());
  for (int i = 0; i < value.rank(); ++i) out.dims[i] = value.dim(i);
}

}  // namespace

extern "C" {

void pt_session_options_init(pt_session_options* options) {
  if (options != nullptr) *options = pt_session_options{};
}

pt_status pt_session_create(const char* model_path, const pt_session_options* options,
                            pt_session** session) {
  if (session == nullptr) return Fail(PT_ERR_USAGE, "pt_session_create: session is NULL");
  *session = nullptr;
  if (model_path == nullptr) return Fail(PT_ERR_USAGE, "pt_session_create: model_path is NULL");
  auto s = std::make_unique<pt_session>();
  pt_status status = Guard([&] {
    s->model = std::make_unique<porttool::io::Model>(porttool::io::Load(model_path));
    porttool::runtime::SessionOptions session_options;
    // Per session: another session in the same program keeps its own count, and the host
    // program's process settings (its allocator) are left alone.
    if (options != nullptr) session_options.threads = std::max(0, options->threads);
    s->threads = session_options.threads;
    s->session = std::make_unique<porttool::runtime::Session>(*s->model, session_options);
    Describe(*s);
  });
  if (status == PT_OK) *session = s.release();
  return status;
}

void pt_session_free(pt_session* session) { delete session; }

size_t pt_session_input_count(const pt_session* session) {
  return session ? session->inputs.size() : 0;
}

int pt_session_threads(const pt_session* session) {
  if (session == nullptr) return 0;
  int own = session->threads;
  return own > 0 ? own : porttool::runtime::DefaultExecution().threads;
}

size_t pt_session_output_count(const pt_session* session) {
  return session ? session->outputs.size() : 0;
}

pt_status pt_session_input_info(const pt_session* session, size_t index, pt_tensor_info* info) {
  if (session == nullptr || info == nullptr) return Fail(PT_ERR_USAGE, "input_info: NULL");
  return Guard([&] { *info = *InfoAt(session->inputs, index, "input"); });
}

pt_status pt_session_output_info(const pt_session* session, size_t index, pt_tensor_info* info) {
  if (session == nullptr || info == nullptr) return Fail(PT_ERR_USAGE, "output_info: NULL");
  return Guard([&] { *info = *InfoAt(session->outputs, index, "output"); });
}

pt_status pt_session_run(pt_session* session, const pt_tensor* inputs, size_t n_inputs,
                         pt_tensor* outputs, size_t n_outputs) {
  if (session == nullptr) return Fail(PT_ERR_USAGE, "pt_session_run: session is NULL");
  if ((n_inputs && !inputs) || (n_outputs && !outputs)) {
    return Fail(PT_ERR_USAGE, "pt_session_run: inputs or outputs array is NULL");
  }
  return Guard([&] {
    std::map<std::string, porttool::runtime::OutputBuffer> buffers;
    for (size_t i = 0; i < n_outputs; ++i) {
      buffers[NameOf(outputs[i], i, session->outputs, "output")] = {outputs[i].data,
                                                                    outputs[i].bytes};
    }
    auto results = session->session->RunInto(WrapInputs(*session, inputs, n_inputs), buffers);
    for (size_t i = 0; i < n_outputs; ++i) {
      std::string name = NameOf(outputs[i], i, session->outputs, "output");
      for (const auto& r : results) {
        if (r.name == name) CopyOut(r.value, name, outputs[i]);
      }
    }
  });
}

size_t pt_dtype_size(int32_t dtype) {
  try {
    return porttool::ir::DtypeSize(dtype);
  } catch (...) {
    return 0;
  }
}

const char* pt_last_error(void) { return last_error.c_str(); }

pt_status pt_last_error_code(void) { return last_code; }

const char* pt_version(void) { return PORTTOOL_VERSION; }

}  // extern "C"
