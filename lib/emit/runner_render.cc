#include "lib/emit/runner_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lib/emit/c_names.h"
#include "lib/emit/code_text.h"
#include "lib/emit/embedded_files.h"
#include "lib/io/input_file.h"
#include "lib/io/model.h"
#include "lib/ir/dtype.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace porttool::emit {
namespace {

namespace fs = std::filesystem;

uint64_t DeviceBytes(const PipelineTensor& t, const std::optional<FakeNpu>& npu) {
  uint64_t elems = static_cast<uint64_t>(ir::ElementCount(t.dims));
  if (!npu || npu->block == 0 || t.dims.size() != 4) return elems;
  int64_t c1 = (t.dims[1] + npu->block - 1) / npu->block;
  int64_t w = t.dims[3];
  if (npu->width_align > 1) w = (w + npu->width_align - 1) / npu->width_align * npu->width_align;
  return static_cast<uint64_t>(t.dims[0] * c1 * t.dims[2] * w * npu->block);
}

std::string ReadText(const fs::path& path) { return io::ReadInputFile(path, "custom-op file"); }

CustomOpKernel LoadCustomOp(const fs::path& dir) {
  fs::path manifest = dir / "porttool_kernel.json";
  auto doc = nlohmann::json::parse(ReadText(manifest), nullptr, false);
  CustomOpKernel k;
  k.dir = dir;
  for (const char* key : {"op_type", "function", "header"}) {
    if (doc.is_discarded() || !doc.is_object() || !doc.contains(key) || !doc[key].is_string()) {
      ThrowBadInput("{}: /{}: missing or not a string", manifest.string(), key);
    }
  }
  k.op_type = doc["op_type"];
  k.function = doc["function"];
  k.header = doc["header"];
  if (!IsCIdentifier(k.function))
    ThrowBadInput("{}: /function is not a C identifier", manifest.string());
  for (const auto& file : io::ListInputFolder(dir, "custom-op package").files) {
    auto ext = file.extension();
    if (ext == ".c" || ext == ".h") k.files.push_back(file);
  }
  std::sort(k.files.begin(), k.files.end());
  if (!fs::exists(dir / k.header))
    ThrowBadInput("{}: header {} not found", manifest.string(), k.header);
  return k;
}

// A host segment of exactly one node of the kernel's op type runs the kernel.
bool RunsKernel(const Pipeline& p, const PipelineSegment& seg, const CustomOpKernel& k) {
  if (seg.accelerator) return false;
  io::Model model = io::Load(p.dir / seg.file);
  const auto& g = model.proto.graph();
  return g.node_size() == 1 && g.node(0).op_type() == k.op_type;
}

// Index of every tensor in the generated table: graph inputs, graph outputs, bridges.
struct TensorTable {
  std::vector<const PipelineTensor*> tensors;
  std::map<std::string, int> index;
  std::set<std::string> bridges;
  void Add(const PipelineTensor& t) {
    if (index.emplace(t.name, static_cast<int>(tensors.size())).second) tensors.push_back(&t);
  }
};

TensorTable BuildTable(const Pipeline& p) {
  TensorTable table;
  for (const auto& b : p.bridges) table.bridges.insert(b.tensor);
  for (const auto& t : p.graph_input_list) table.Add(t);
  for (const auto& t : p.graph_output_list) {
    if (!table.bridges.count(t.name)) table.Add(t);
  }
  for (const auto& b : p.bridges) table.Add(FindTensor(p.segments[b.producer], b.tensor));
  return table;
}

// A float as a C literal that keeps every bit ("1.0f", "0.0235294122f", "1e-05f").
std::string CFloat(float v) {
  std::string text = fmt::format("{:.9g}", v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

std::string Dims(const std::vector<int64_t>& dims) {
  return dims.empty() ? "{0}" : fmt::format("{{{}}}", fmt::join(dims, ", "));
}

const analysis::PlannedTensor& Planned(const analysis::MemoryPlan& plan, const std::string& name) {
  for (const auto& t : plan.tensors) {
    if (t.name == name) return t;
  }
  ThrowInternal("'{}' is not in the runner's arena plan", name);
}

std::string TableRow(const Pipeline& p, const TensorTable& table, const PipelineTensor& t,
                     const RunnerResult& r, const RunnerLayout& layout) {
  auto index_of = [](const std::vector<PipelineTensor>& list, const std::string& name) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  int in = index_of(p.graph_input_list, t.name), out = index_of(p.graph_output_list, t.name);
  std::string where = "PL_ARENA", slot;
  std::string output_index = out >= 0 ? std::to_string(out) : "PL_NONE";
  if (table.bridges.count(t.name)) {
    slot = std::to_string(Planned(r.arena, t.name).offset);
  } else if (in >= 0) {
    where = "PL_GRAPH_INPUT";
    slot = std::to_string(in);
  } else {
    where = "PL_GRAPH_OUTPUT";
    slot = std::to_string(out);
    output_index = "PL_NONE";
  }
  auto q = r.quant.find(t.name);
  std::string staging = "PL_NONE";
  for (const auto& s : layout.scratch) {
    if (s.tensor == t.name && s.name == t.name + "#device") {
      staging = std::to_string(Planned(r.arena, s.name).offset);
    }
  }
  return fmt::format("  {{{}, {}, {}, {}, {}u, {}, {}u, {}, {}, {}, {}, {}}},\n",
                     CStringLiteral(t.name), t.dtype, t.dims.size(), Dims(t.dims), t.bytes, where,
                     slot, output_index, q != r.quant.end() ? 1 : 0,
                     CFloat(q != r.quant.end() ? q->second.scale : 1.0f),
                     q != r.quant.end() ? q->second.zero_point : 0, staging);
}

std::string IndexList(const TensorTable& table, const std::vector<PipelineTensor>& list) {
  std::vector<std::string> ids;
  for (const auto& t : list) ids.push_back(std::to_string(table.index.at(t.name)));
  return ids.empty() ? "-1" : fmt::format("{}", fmt::join(ids, ", "));
}

std::string RenderTables(const Pipeline& p, const RunnerLayout& layout, const RunnerResult& r) {
  TensorTable table = BuildTable(p);
  std::string out =
      "/* Generated by porttool emit-runner: the pipeline's tensors and segments. */\n"
      "#include \"pipeline.h\"\n";
  if (layout.custom_op) {
    out += fmt::format("#include {}\n", CIncludeName("custom_op/" + layout.custom_op->header,
                                                     "the custom-op package's header"));
  }
  out +=
      "\n#if defined(__GNUC__)\nstatic unsigned char pl_arena_storage[PIPELINE_ARENA_SIZE + 1]\n"
      "    __attribute__((aligned(PIPELINE_ALIGNMENT)));\n#else\n"
      "static unsigned char pl_arena_storage[PIPELINE_ARENA_SIZE + 1];\n#endif\n"
      "unsigned char* const pl_arena = pl_arena_storage;\n\nconst pl_tensor pl_tensors[] = {\n";
  for (const auto* t : table.tensors) out += TableRow(p, table, *t, r, layout);
  out += fmt::format("}};\nconst size_t pl_num_tensors = {};\n\n", table.tensors.size());
  for (size_t s = 0; s < p.segments.size(); ++s) {
    const auto& seg = p.segments[s];
    std::vector<std::string> scratch;
    for (const auto& t : seg.inputs) {
      std::string name = fmt::format("{}#in{}", t.name, s), off = "PL_NONE";
      for (const auto& b : layout.scratch) {
        if (b.name == name) off = std::to_string(Planned(r.arena, name).offset);
      }
      scratch.push_back(off);
    }
    out +=
        fmt::format("static const int pl_seg{}_in[] = {{{}}};\n", s, IndexList(table, seg.inputs));
    out += fmt::format("static const int pl_seg{}_out[] = {{{}}};\n", s,
                       IndexList(table, seg.outputs));
    out += fmt::format("static const size_t pl_seg{}_scratch[] = {{{}}};\n", s,
                       scratch.empty() ? "0" : fmt::format("{}", fmt::join(scratch, ", ")));
  }
  out += "\nconst pl_segment pl_segments[PIPELINE_NUM_SEGMENTS] = {\n";
  for (size_t s = 0; s < p.segments.size(); ++s) {
    const auto& rs = layout.segments[s];
    bool kernel = !rs.custom_op.empty();
    out += fmt::format(
        "  {{{}, {}, {}, {}, {}, pl_seg{}_in, {}, pl_seg{}_out, pl_seg{}_scratch}},\n",
        CStringLiteral(rs.file), p.segments[s].accelerator ? "PL_ACCELERATOR" : "PL_HOST",
        kernel ? CStringLiteral(rs.custom_op) : "NULL",
        kernel ? layout.custom_op->function : "NULL", rs.inputs.size(), s, rs.outputs.size(), s, s);
  }
  out += fmt::format("}};\n\nconst int pl_graph_inputs[] = {{{}}};\n",
                     IndexList(table, p.graph_input_list));
  out += fmt::format("const int pl_graph_outputs[] = {{{}}};\n",
                     IndexList(table, p.graph_output_list));
  std::vector<std::string> bridges;
  for (const auto& b : p.bridges) bridges.push_back(std::to_string(table.index.at(b.tensor)));
  out += fmt::format("const int pl_bridges[] = {{{}}};\nconst size_t pl_num_bridges = {};\n",
                     bridges.empty() ? "-1" : fmt::format("{}", fmt::join(bridges, ", ")),
                     bridges.size());
  return out;
}

std::string PipelineLabel(const RunnerRequest& req) {
  return req.pipeline_label.empty() ? req.pipeline_json.string() : req.pipeline_label;
}

std::string RenderHeader(const Pipeline& p, const RunnerRequest& req, const RunnerResult& r) {
  CNameTable names({"BYTES", "OFFSET", "SCALE", "ZERO_POINT"});
  const auto& npu = req.fake_npu;
  std::string out = fmt::format(
      "/* Generated by porttool emit-runner from {} ({} segments). Bridges live in one static\n"
      " * arena: sizes and offsets below. Int8 bridges: {}. */\n"
      "#ifndef PIPELINE_H_\n#define PIPELINE_H_\n\n"
      "#define PIPELINE_NUM_SEGMENTS {}\n#define PIPELINE_NUM_INPUTS {}\n"
      "#define PIPELINE_NUM_OUTPUTS {}\n#define PIPELINE_ALIGNMENT {}u\n"
      "#define PIPELINE_ARENA_SIZE {}u /* naive {}u, lower bound {}u */\n"
      "#define PIPELINE_BACKEND_RKNN {}\n#define PIPELINE_RKNN_ZERO_COPY {}\n"
      "#define PIPELINE_FAKE_NPU {}\n#define PIPELINE_NC1HWC2_BLOCK {}\n"
      "#define PIPELINE_W_STRIDE_ALIGN {}\n#ifndef PIPELINE_THREADS\n#define PIPELINE_THREADS {}\n"
      "#endif\n#ifndef PIPELINE_SEGMENT_DIR\n#define PIPELINE_SEGMENT_DIR {}\n#endif\n\n",
      CommentText(PipelineLabel(req)), p.segments.size(),
      CommentText(r.quant.empty() ? "none" : r.quant_source), p.segments.size(),
      p.graph_input_list.size(), p.graph_output_list.size(), r.arena.alignment, r.arena.arena_bytes,
      r.arena.naive_bytes, r.arena.lower_bound_bytes, req.backend == RunnerBackend::kRknn ? 1 : 0,
      req.rknn_zero_copy ? 1 : 0, npu && npu->int8 ? 1 : 0, npu ? npu->block : 0,
      npu ? npu->width_align : 0, req.threads,
      CStringLiteral(req.segment_dir.empty() ? p.dir.string() : req.segment_dir));
  for (size_t i = 0; i < p.graph_input_list.size(); ++i) {
    const auto& t = p.graph_input_list[i];
    std::string id = "PIPELINE_INPUT_" + ToUpper(names.Assign(t.name));
    out += fmt::format("#define {} {}\n#define {}_BYTES {}u\n", id, i, id, t.bytes);
  }
  for (size_t i = 0; i < p.graph_output_list.size(); ++i) {
    const auto& t = p.graph_output_list[i];
    std::string id = "PIPELINE_OUTPUT_" + ToUpper(names.Assign(t.name));
    out += fmt::format("#define {} {}\n#define {}_BYTES {}u\n", id, i, id, t.bytes);
  }
  for (const auto& b : p.bridges) {
    const auto& planned = Planned(r.arena, b.tensor);
    std::string id = "PIPELINE_BRIDGE_" + ToUpper(names.Assign(b.tensor));
    out += fmt::format("#define {}_OFFSET {}u\n#define {}_BYTES {}u\n", id, planned.offset, id,
                       planned.bytes);
    if (auto q = r.quant.find(b.tensor); q != r.quant.end()) {
      out += fmt::format("#define {}_SCALE {}\n#define {}_ZERO_POINT {}\n", id,
                         CFloat(q->second.scale), id, q->second.zero_point);
    }
  }
  return out + "\n#include \"pl_api.h\"\n\n#endif /* PIPELINE_H_ */\n";
}

std::string RenderCMake(const RunnerRequest& req, const RunnerLayout& layout) {
  std::string sources = "pipeline.c pipeline_tables.c pl_layout.c pl_backend_pt.c";
  if (req.backend == RunnerBackend::kRknn) sources += " pl_backend_rknn.c";
  if (layout.custom_op) {
    for (const auto& f : layout.custom_op->files) {
      // The package's own file names: quoted, so a ';', '$' or space in one stays a name.
      if (f.extension() == ".c") sources += " " + CMakeQuoted("custom_op/" + f.filename().string());
    }
  }
  std::string out = fmt::format(
      "# Generated by porttool emit-runner. Build: cmake -S . -B build && cmake --build build\n"
      "# porttool's C API is found with pkg-config (porttool-runtime); set PKG_CONFIG_PATH to\n"
      "# PREFIX/lib/pkgconfig when porttool is installed elsewhere.\n"
      "cmake_minimum_required(VERSION 3.16)\nproject(pipeline_runner C)\n"
      "set(CMAKE_C_STANDARD 99)\nset(CMAKE_C_STANDARD_REQUIRED ON)\n"
      "find_package(PkgConfig REQUIRED)\n"
      "pkg_check_modules(PORTTOOL REQUIRED IMPORTED_TARGET porttool-runtime)\n"
      "add_library(pipeline STATIC {})\n"
      "target_include_directories(pipeline PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}})\n"
      "target_link_libraries(pipeline PUBLIC PkgConfig::PORTTOOL m)\n",
      sources);
  if (req.backend == RunnerBackend::kRknn) {
    out +=
        "set(RKNN_SDK_ROOT \"\" CACHE PATH \"RKNN runtime root: include/rknn_api.h and "
        "lib/librknnrt.so\")\n"
        "if(NOT RKNN_SDK_ROOT)\n  message(FATAL_ERROR \"the accelerator segments run on "
        "librknnrt: configure with -DRKNN_SDK_ROOT=<rknpu2>/runtime/Linux/librknn_api\")\n"
        "endif()\n"
        "find_library(RKNNRT rknnrt PATHS ${RKNN_SDK_ROOT}/lib ${RKNN_SDK_ROOT}/aarch64 "
        "REQUIRED)\n"
        "target_include_directories(pipeline PRIVATE ${RKNN_SDK_ROOT}/include)\n"
        "target_link_libraries(pipeline PUBLIC ${RKNNRT})\n";
  }
  return out +
         "add_executable(runner main.c pl_npy.c)\n"
         "target_link_libraries(runner PRIVATE pipeline)\n";
}

std::string RenderReadme(const Pipeline& p, const RunnerRequest& req, const RunnerResult& r,
                         const RunnerLayout& layout) {
  std::string segs;
  for (size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    std::string how =
        !seg.custom_op.empty() ? "custom op kernel " + layout.custom_op->function
        : seg.role == "host"   ? "porttool C API"
        : req.backend == RunnerBackend::kRknn
            ? "RKNN runtime (" +
                  MarkdownText(fs::path(seg.file).replace_extension(".rknn").string()) + ")"
            : "porttool C API (reference)";
    // File names come from pipeline.json: one table cell each, whatever they hold.
    segs += fmt::format("| {} | {} | {} | {} |\n", s,
                        util::ReplaceAll(MarkdownText(seg.file), "|", "\\|"),
                        MarkdownText(seg.role), how);
  }
  std::string rknn;
  if (req.backend == RunnerBackend::kRknn) {
    rknn =
        "\n## RKNN\n\nEach accelerator segment runs from a `.rknn` file of the same stem beside "
        "it (`NN_accelerator.onnx` -> `NN_accelerator.rknn`), made on the PC with RKNN-Toolkit2: "
        "in a `porttool port` bundle by `rknn/convert.py`, with the input normalisation left "
        "to the application (rknn/README.md: by default a segment fed from image pixels gets "
        "the preprocessing's mean/std built in and takes raw pixels, not the normalised tensor "
        "this runner feeds), "
        "otherwise with `rknn.config(target_platform=...)`, `rknn.load_onnx(...)`, "
        "`rknn.build(...)` and `rknn.export_rknn(...)` yourself. Configure with "
        "`-DRKNN_SDK_ROOT=...`. At init the runner checks every attribute the runtime reports "
        "against the pipeline (element count, rank, and an int8 bridge's scale and zero point) "
        "and stops on a mismatch.\n";
  }
  return fmt::format(
      "# Pipeline runner (generated by porttool emit-runner)\n\n"
      "Runs the split in `{}`: {} segments, {} bridges in one static arena of {} bytes "
      "(alignment {}).\n\n| # | file | role | runs on |\n|---|---|---|---|\n{}\n"
      "Int8 bridges: {}.\n\n```\ncmake -S . -B build && cmake --build build\n"
      "build/runner --input NAME=FILE.npy --output-dir out --profile\n```\n\n"
      "`--segments DIR` loads the segment files from another directory; `--repeat N` runs N "
      "times and prints median total and segment times; `--dump-bridges DIR` writes each "
      "bridge as the consumers saw it. API: `pipeline.h` (`pipeline_init`, `pipeline_run`, "
      "`pipeline_free`).\n{}",
      req.pipeline_label.empty() ? p.dir.string() : req.pipeline_label, p.segments.size(),
      p.bridges.size(), r.arena.arena_bytes, r.arena.alignment, segs,
      r.quant.empty() ? "none (float bridges)" : r.quant_source, rknn);
}

}  // namespace

RunnerLayout LayoutRunner(const Pipeline& p, const RunnerRequest& request,
                          const std::map<std::string, QuantParam>& quant) {
  RunnerLayout layout;
  if (!request.custom_op_dir.empty()) layout.custom_op = LoadCustomOp(request.custom_op_dir);
  bool fake = request.fake_npu.has_value() && request.backend == RunnerBackend::kReference;
  for (size_t s = 0; s < p.segments.size(); ++s) {
    const auto& seg = p.segments[s];
    RunnerSegment rs{seg.file, seg.accelerator ? "accelerator" : "host", {}, {}, {}};
    for (const auto& t : seg.inputs) rs.inputs.push_back(t.name);
    for (const auto& t : seg.outputs) rs.outputs.push_back(t.name);
    if (layout.custom_op && RunsKernel(p, seg, *layout.custom_op)) {
      rs.custom_op = layout.custom_op->op_type;
    }
    layout.segments.push_back(rs);
    if (!fake || !seg.accelerator) continue;
    for (const auto& t : seg.outputs) {
      if (quant.count(t.name)) {
        layout.scratch.push_back(
            {t.name + "#device", t.name, DeviceBytes(t, request.fake_npu), static_cast<int>(s)});
      }
    }
    for (const auto& t : seg.inputs) {
      bool bridge = false;
      for (const auto& b : p.bridges) bridge |= b.tensor == t.name;
      if (bridge && quant.count(t.name)) {
        layout.scratch.push_back(
            {fmt::format("{}#in{}", t.name, s), t.name, t.bytes, static_cast<int>(s)});
      }
    }
  }
  if (layout.custom_op) {
    bool used = false;
    for (const auto& s : layout.segments) used |= !s.custom_op.empty();
    if (!used) {
      ThrowUsage("no host segment is a single '{}' node: the custom op kernel in {} would not run",
                 layout.custom_op->op_type, request.custom_op_dir.string());
    }
  }
  return layout;
}

std::vector<RenderedFile> RenderRunner(const Pipeline& p, const RunnerRequest& request,
                                       const RunnerLayout& layout, const RunnerResult& result) {
  std::vector<RenderedFile> files;
  files.push_back({"pipeline.h", RenderHeader(p, request, result)});
  files.push_back({"pipeline_tables.c", RenderTables(p, layout, result)});
  files.push_back({"CMakeLists.txt", RenderCMake(request, layout)});
  files.push_back({"README.md", RenderReadme(p, request, result, layout)});
  for (const auto& src : RunnerSources()) {
    if (src.path == "pl_backend_rknn.c" && request.backend != RunnerBackend::kRknn) continue;
    files.push_back({std::string(src.path), std::string(src.text)});
  }
  if (layout.custom_op) {
    for (const auto& f : layout.custom_op->files) {
      files.push_back({"custom_op/" + f.filename().string(), ReadText(f)});
    }
  }
  return files;
}

}  // namespace porttool::emit
