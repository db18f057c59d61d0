// `porttool run`: runs a model with the reference executor on given or random inputs, prints each
// output's shape, dtype and value statistics, optionally writes the outputs, times repeated runs
// and profiles per node and per op type.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/process_settings.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/error.h"
#include "tools/porttool/commands.h"
#include "tools/porttool/common_options.h"

namespace porttool::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  bool random_inputs = false;
  uint64_t seed = kDefaultSeed;
  std::vector<std::string> input_shapes;
  std::string output_dir;
  bool pb = false;
  int threads = 0;
  int repeat = 0;
  bool fail_on_nan = false;
  bool profile = false;
  size_t top = 10;
  bool json = false;
  std::vector<std::string> custom_ops;
};

struct Latency {
  double median = 0, min = 0, max = 0;
};

Latency Summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), ms.back()};
}

// Per-node time from the executor's observer: it is called right after each node ran, so the
// time since the previous node finished is this node's time (a node's later outputs add none).
struct Profile {
  struct Row {
    std::string name, op_type;
    double ms = 0;
    int calls = 0;
  };
  std::vector<Row> nodes;  // by node index
  std::map<std::string, int> producer;
  Clock::time_point last;
  int last_node = -1;
  int runs = 0;

  explicit Profile(const io::Model& model) {
    ir::GraphView view(model.proto.graph());
    for (int i = 0; i < view.node_count(); ++i) {
      const auto& n = view.node(i);
      nodes.push_back({n.name().empty() ? fmt::format("#{}", i) : n.name(), n.op_type()});
      for (const auto& out : n.output()) producer[out] = i;
    }
  }
  void Start() {
    last = Clock::now();
    last_node = -1;
    ++runs;
  }
  void Observe(const std::string& tensor) {
    auto it = producer.find(tensor);
    if (it == producer.end() || it->second == last_node) return;
    auto now = Clock::now();
    nodes[it->second].ms += std::chrono::duration<double, std::milli>(now - last).count();
    nodes[it->second].calls++;
    last = now;
    last_node = it->second;
  }
};

nlohmann::json ProfileJson(const Profile& p) {
  nlohmann::json nodes = nlohmann::json::array(), ops = nlohmann::json::object();
  for (const auto& r : p.nodes) {
    double ms = r.ms / std::max(p.runs, 1);
    nodes.push_back({{"node", r.name}, {"op_type", r.op_type}, {"ms", ms}});
    ops[r.op_type] = ops.value(r.op_type, 0.0) + ms;
  }
  return {{"runs", p.runs}, {"nodes", nodes}, {"op_types", ops}};
}

void PrintProfile(const Profile& p, size_t top) {
  std::vector<Profile::Row> rows = p.nodes;
  std::map<std::string, std::pair<double, int>> ops;
  double total = 0;
  for (auto& r : rows) {
    r.ms /= std::max(p.runs, 1);
    total += r.ms;
    ops[r.op_type].first += r.ms;
    ops[r.op_type].second++;
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  fmt::print("profile: {:.2f} ms per run in {} nodes (mean of {} run(s)); top {} nodes:\n", total,
             rows.size(), p.runs, std::min(top, rows.size()));
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    fmt::print("  {:>8.3f} ms {:>5.1f}%  {:<20} {}\n", rows[i].ms,
               total > 0 ? 100 * rows[i].ms / total : 0.0, rows[i].op_type, rows[i].name);
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> by_op(ops.begin(), ops.end());
  std::sort(by_op.begin(), by_op.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  fmt::print("by op type:\n");
  for (size_t i = 0; i < by_op.size() && i < top; ++i) {
    const auto& [op, v] = by_op[i];
    fmt::print("  {:>8.3f} ms {:>5.1f}%  {:<20} x{}\n", v.first,
               total > 0 ? 100 * v.first / total : 0.0, op, v.second);
  }
}

// All files or none: a folder that cannot take them is bad input, not a half-written result.
std::vector<std::string> WriteOutputs(const std::vector<runtime::NamedTensor>& outputs,
                                      const RunOptions& o) {
  if (o.output_dir.empty()) return {};
  std::vector<std::string> names, files;
  std::vector<const runtime::Tensor*> values;
  for (const auto& out : outputs) {
    names.push_back(out.name);
    values.push_back(&out.value);
  }
  for (const auto& path : runtime::WriteTensorFiles(o.output_dir, names, values, o.pb)) {
    files.push_back(path.string());
  }
  return files;
}

nlohmann::json OutputJson(const runtime::NamedTensor& out, const std::string& file) {
  const auto& t = out.value;
  runtime::ValueStats s = runtime::SummarizeValues(t);
  return {{"name", out.name},
          {"file", file.empty() ? nlohmann::json() : nlohmann::json(file)},
          {"dtype", ir::DtypeName(t.dtype())},
          {"shape", t.shape()},
          {"min", s.min},
          {"max", s.max},
          {"mean", s.mean},
          {"nan_count", s.nan_count},
          {"inf_count", s.inf_count}};
}

void PrintOutput(const runtime::NamedTensor& out, const std::string& file) {
  runtime::ValueStats s = runtime::SummarizeValues(out.value);
  fmt::print("{}  {}  min {:.6g}  max {:.6g}  mean {:.6g}  nan {}{}{}\n", out.name,
             out.value.DebugString(), s.min, s.max, s.mean, s.nan_count,
             s.inf_count ? fmt::format("  inf {}", s.inf_count) : "",
             file.empty() ? "" : "  -> " + file);
}

int RunRun(const RunOptions& o) {
  runtime::ApplyProcessSettings({o.threads});
  io::Model model = LoadModel(o.model);
  if (!o.input_shapes.empty()) shape::ApplyInputShapes(model, ParseShapeFlags(o.input_shapes));
  auto custom = LoadCustomOps(o.custom_ops, &model, /*with_kernels=*/true);
  runtime::Session session(model, {o.fail_on_nan, custom->Kernels()});
  runtime::TensorMap inputs = ReadInputFlags(o.inputs);
  if (o.random_inputs) inputs = runtime::CompleteWithRandom(session, std::move(inputs), o.seed);

  std::vector<double> times_ms;
  std::vector<runtime::NamedTensor> outputs;
  int timed_runs = std::max(o.repeat, 1);
  if (o.repeat > 0) outputs = session.Run(inputs);  // warm-up
  Profile profile(model);
  runtime::Observer observer;
  if (o.profile)
    observer = [&](const std::string& name, const runtime::Tensor&) { profile.Observe(name); };
  for (int i = 0; i < timed_runs; ++i) {
    auto start = Clock::now();
    if (o.profile) profile.Start();
    outputs = session.Run(inputs, observer);
    std::chrono::duration<double, std::milli> elapsed = Clock::now() - start;
    times_ms.push_back(elapsed.count());
  }
  for (const auto& w : session.warnings()) spdlog::warn("{}", w);
  std::vector<std::string> files = WriteOutputs(outputs, o);
  files.resize(outputs.size());
  Latency lat = Summarize(times_ms);
  if (o.json) {
    nlohmann::json doc = {{"outputs", nlohmann::json::array()}};
    for (size_t i = 0; i < outputs.size(); ++i)
      doc["outputs"].push_back(OutputJson(outputs[i], files[i]));
    doc["latency_ms"] = {{"median", lat.median}, {"min", lat.min}, {"max", lat.max}};
    if (o.profile) doc["profile"] = ProfileJson(profile);
    PrintJson(doc);
    return kExitOk;
  }
  for (size_t i = 0; i < outputs.size(); ++i) PrintOutput(outputs[i], files[i]);
  fmt::print("latency: median {:.2f} ms, min {:.2f} ms, max {:.2f} ms over {} run(s){}\n",
             lat.median, lat.min, lat.max, timed_runs, o.repeat > 0 ? " after 1 warm-up" : "");
  if (o.profile) PrintProfile(profile, o.top);
  return kExitOk;
}

}  // namespace

void RegisterRun(CLI::App& app, RunFn& run) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a model with the reference executor");
  cmd->footer(
      "Examples:\n"
      "  porttool run testdata/demo_detector.onnx --random-inputs --input-shape images:1x3x64x64\n"
      "  porttool run model.onnx --input x=x.npy --output-dir out/ --repeat 10 --profile");
  AddModelArg(*cmd, opts->model);
  AddInputOption(*cmd, opts->inputs);
  cmd->add_flag("--random-inputs", opts->random_inputs,
                "Fill inputs not given with --input with random values (floats in [0,1))");
  AddSeedOption(*cmd, opts->seed, "--random-inputs");
  AddInputShapeOption(*cmd, opts->input_shapes);
  cmd->add_option("--output-dir", opts->output_dir,
                  "Write each output to DIR/<output name>.npy (unsafe characters become '_')");
  cmd->add_flag("--pb", opts->pb, "With --output-dir: write ONNX TensorProto .pb files instead");
  AddThreadsOption(*cmd, opts->threads);
  cmd->add_option("--repeat", opts->repeat, "Time N runs after one warm-up run")
      ->check(InRange(1, 1000000));
  cmd->add_flag("--profile", opts->profile,
                "Time every node (mean over the timed runs): the slowest nodes and op types");
  cmd->add_option("--top", opts->top, "With --profile: rows to print")->capture_default_str();
  cmd->add_flag("--fail-on-nan", opts->fail_on_nan,
                "Fail (exit 3) when an input holds NaN or Inf instead of warning");
  AddCustomOpOption(*cmd, opts->custom_ops);
  AddJsonFlag(*cmd, opts->json);
  cmd->callback([opts, &run] { run = [opts] { return RunRun(*opts); }; });
}

}  // namespace porttool::cli
