#include "lib/stages/reduce_checks.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "lib/io/atomic_file.h"
#include "lib/ir/extract.h"
#include "lib/runtime/compare.h"
#include "lib/runtime/tensor_io.h"
#include "lib/shape/infer.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

extern char** environ;

namespace porttool::stages {

// ---- BoundaryValues ----

namespace {
// What BoundaryValues keeps between candidates before it starts over: a few windows' worth of
// det's intermediates (one sample's are about 400 MB), not the whole run's.
constexpr size_t kKeptBytesBudget = size_t{256} << 20;

std::vector<std::string> GraphInputNames(const io::Model& model) {
  std::vector<std::string> names;
  std::set<std::string> initializers;
  for (const auto& init : model.proto.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : model.proto.graph().input()) {
    if (!initializers.count(input.name())) names.push_back(input.name());
  }
  return names;
}

std::vector<std::string> GraphOutputNames(const io::Model& model) {
  std::vector<std::string> names;
  for (const auto& output : model.proto.graph().output()) names.push_back(output.name());
  return names;
}
}  // namespace

BoundaryValues::BoundaryValues(const io::Model& reference, std::vector<std::string> sample_ids,
                               std::vector<runtime::TensorMap> samples)
    : reference_(reference),
      ids_(std::move(sample_ids)),
      samples_(std::move(samples)),
      kept_(samples_.size()) {}

BoundaryValues::~BoundaryValues() = default;

std::vector<runtime::TensorMap> BoundaryValues::Get(const std::vector<std::string>& names,
                                                    std::vector<std::string>* missing) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::string> wanted;
  for (const auto& name : names) {
    bool have = samples_.empty() || samples_[0].count(name) || kept_[0].count(name);
    if (!have && !absent_.count(name)) wanted.insert(name);
  }
  if (!wanted.empty()) {
    if (kept_bytes_ > kKeptBytesBudget) {
      for (auto& map : kept_) map.clear();
      kept_bytes_ = 0;
    }
    if (!session_) {
      runtime::SessionOptions options;
      options.threads = 1;
      session_ = std::make_unique<runtime::Session>(reference_, options);
    }
    std::set<std::string> seen;
    for (size_t s = 0; s < samples_.size(); ++s) {
      auto& kept = kept_[s];
      session_->Run(samples_[s], [&](const std::string& name, const runtime::Tensor& value) {
        if (!wanted.count(name)) return;
        seen.insert(name);
        kept[name] = value.Clone();
        kept_bytes_ += value.bytes();
      });
    }
    for (const auto& name : wanted) {
      if (!seen.count(name)) absent_.insert(name);
    }
  }
  std::vector<runtime::TensorMap> out(samples_.size());
  for (size_t s = 0; s < samples_.size(); ++s) {
    for (const auto& name : names) {
      if (auto it = samples_[s].find(name); it != samples_[s].end()) {
        out[s][name] = it->second;
      } else if (auto k = kept_[s].find(name); k != kept_[s].end()) {
        out[s][name] = k->second;
      }
    }
  }
  if (missing) {
    for (const auto& name : names) {
      if (absent_.count(name)) missing->push_back(name);
    }
  }
  return out;
}

// ---- CommandCheck ----

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

namespace {

std::string ReadLog(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last non-empty line of the output, for the step log.
std::string LastLine(const std::string& output) {
  auto lines = util::Split(output, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string line = *it;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) return line.size() > 160 ? line.substr(0, 157) + "..." : line;
  }
  return "";
}

struct Finished {
  int status = 0;  // exit status, or -signal
  bool timed_out = false;
  bool cancelled = false;
};

// The command in a process group of its own, so a timeout or Ctrl-C kills everything it
// started, not only the shell.
Finished RunShell(const std::string& command, const std::filesystem::path& log, double timeout,
                  const std::atomic<bool>* cancel) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) ThrowBadInput("cannot start /bin/sh for the check: {}", std::strerror(rc));
  auto start = std::chrono::steady_clock::now();
  Finished done;
  int wstatus = 0;
  for (int sleep_us = 200;; sleep_us = std::min(sleep_us * 2, 20000)) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool stop_for_time = timeout > 0 && elapsed > timeout;
    bool stop_for_cancel = cancel && cancel->load();
    if (stop_for_time || stop_for_cancel) {
      kill(-pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      done.timed_out = stop_for_time;
      done.cancelled = stop_for_cancel;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
  }
  done.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -WTERMSIG(wstatus);
  return done;
}

}  // namespace

CommandCheck::CommandCheck(CommandCheckOptions options) : options_(std::move(options)) {
  if (options_.command.find("{model}") == std::string::npos) {
    ThrowUsage(
        "the check command has no {{model}}: write where the candidate's path goes, e.g. "
        "'my-converter {{model}}'");
  }
  if (options_.command.find("{data}") != std::string::npos && !options_.values) {
    ThrowUsage("the check command uses {{data}} but no sample data was given");
  }
  if (!options_.fail_output_regex.empty()) {
    try {
      std::regex check(options_.fail_output_regex);
    } catch (const std::regex_error& e) {
      ThrowUsage("the output pattern '{}' is not a regular expression: {}",
                 options_.fail_output_regex, e.what());
    }
  }
}

std::string CommandCheck::signature() const {
  std::string codes;
  for (int c : options_.fail_codes) codes += std::to_string(c) + ",";
  return fmt::format("command={}\nfail-codes={}\nfail-output={}\ntimeout={}:{}", options_.command,
                     codes, options_.fail_output_regex, options_.timeout_seconds,
                     options_.timeout_fails ? "fail" : "pass");
}

namespace {
// The candidate's inputs for every sample, as <data>/<id>.<input>.npy (port's sample layout).
void WriteCandidateData(BoundaryValues& values, const io::Model& candidate,
                        const std::filesystem::path& dir) {
  auto names = GraphInputNames(candidate);
  auto samples = values.Get(names);
  std::filesystem::create_directories(dir);
  for (size_t s = 0; s < samples.size(); ++s) {
    for (const auto& name : names) {
      auto it = samples[s].find(name);
      if (it == samples[s].end()) continue;
      auto file = runtime::TensorFileNames({values.sample_ids()[s] + "." + name}, ".npy")[0];
      runtime::WriteNpy(dir / file, it->second);
    }
  }
}
}  // namespace

CheckVerdict CommandCheck::Check(const io::Model& candidate, const std::filesystem::path& file,
                                 const std::vector<int>&) {
  std::string command = util::ReplaceAll(options_.command, "{model}", ShellQuote(file.string()));
  if (options_.values && options_.command.find("{data}") != std::string::npos) {
    auto data = std::filesystem::path(file.string() + ".data");
    if (!candidate.proto.graph().node().empty())
      WriteCandidateData(*options_.values, candidate, data);
    command = util::ReplaceAll(command, "{data}", ShellQuote(data.string()));
  }
  auto log = std::filesystem::path(file.string() + ".log");
  Finished done = RunShell(command, log, options_.timeout_seconds, options_.cancel);
  std::string output = ReadLog(log);
  CheckVerdict v;
  v.exit_code = done.status;
  v.timed_out = done.timed_out;
  if (done.cancelled) {
    v.detail = "interrupted";
    return v;
  }
  if (done.status == 127 || done.status == 126) {
    ThrowUsage("the check command could not run (exit {}, the shell said: {})", done.status,
               LastLine(output).empty() ? "nothing" : LastLine(output));
  }
  if (done.timed_out) {
    v.failing = options_.timeout_fails;
    v.detail = fmt::format("timed out after {} s (counted as {})", options_.timeout_seconds,
                           v.failing ? "failing" : "passing");
    return v;
  }
  bool code_fails = options_.fail_codes.empty()
                        ? done.status != 0 || !options_.fail_output_regex.empty()
                        : options_.fail_codes.count(done.status) > 0;
  bool output_fails = options_.fail_output_regex.empty() ||
                      std::regex_search(output, std::regex(options_.fail_output_regex));
  v.failing = code_fails && output_fails;
  std::string status = done.status >= 0 ? fmt::format("exit {}", done.status)
                                        : fmt::format("killed by signal {}", -done.status);
  std::string last = LastLine(output);
  v.detail = last.empty() ? status : status + ": " + last;
  return v;
}

// ---- NumericCheck ----

NumericCheck::NumericCheck(NumericCheckOptions options, BoundaryValues& values)
    : options_(options), values_(values) {}

// Verdicts depend on the reference model's bytes and on porttool's kernels: not kept across runs
// (a numeric check costs milliseconds to repeat).
std::string NumericCheck::signature() const { return ""; }

namespace {
// The reference's tensors of one run, kept in an unlinked file until the candidate's run reaches
// them: holding every intermediate of PP-OCRv4 det in memory took a numeric reduction to 2 GB.
class SpilledTensors {
 public:
  explicit SpilledTensors(const std::filesystem::path& dir) {
    std::string pattern =
        ((dir.empty() ? std::filesystem::temp_directory_path() : dir) / ".reduce-values-XXXXXX")
            .string();
    fd_ = mkstemp(pattern.data());
    if (fd_ < 0) ThrowBadInput("cannot create a scratch file in {}", pattern);
    unlink(pattern.c_str());
  }
  ~SpilledTensors() { close(fd_); }
  SpilledTensors(const SpilledTensors&) = delete;
  SpilledTensors& operator=(const SpilledTensors&) = delete;

  void Add(const std::string& name, const runtime::Tensor& value) {
    if (value.empty() || entries_.count(name)) return;
    const char* p = static_cast<const char*>(value.raw());
    for (size_t done = 0; done < value.bytes();) {
      ssize_t n = pwrite(fd_, p + done, value.bytes() - done, static_cast<off_t>(end_ + done));
      if (n <= 0) ThrowBadInput("cannot write the reference values to a scratch file (disk full?)");
      done += static_cast<size_t>(n);
    }
    entries_[name] = {end_, value.dtype(), value.shape()};
    end_ += value.bytes();
  }

  // The tensor read back, once; nullopt for a name the reference did not produce.
  std::optional<runtime::Tensor> Take(const std::string& name) {
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    runtime::Tensor t(it->second.dtype, it->second.shape);
    char* p = static_cast<char*>(t.mutable_raw());
    for (size_t done = 0; done < t.bytes();) {
      ssize_t n =
          pread(fd_, p + done, t.bytes() - done, static_cast<off_t>(it->second.offset + done));
      if (n <= 0) ThrowBadInput("cannot read the reference values back from the scratch file");
      done += static_cast<size_t>(n);
    }
    entries_.erase(it);
    return t;
  }

 private:
  struct Entry {
    size_t offset = 0;
    int32_t dtype = 0;
    std::vector<int64_t> shape;
  };
  int fd_ = -1;
  size_t end_ = 0;
  std::map<std::string, Entry> entries_;
};

// The worst tensor of one sample: every tensor the candidate computes that the reference computes
// too is compared, not only the outputs, so a node whose error a saturating tail (det's Sigmoid)
// hides at the outputs still fails.
struct Divergence {
  bool failing = false;
  double worst = -1;
  std::string tensor;
  void Add(const std::string& name, const runtime::TensorStats& stats) {
    double d = stats.comparable ? stats.max_abs : INFINITY;
    if (!stats.comparable || !stats.within_tolerance) failing = true;
    if (d > worst || std::isnan(d)) {
      worst = d;
      tensor = name;
    }
  }
  CheckVerdict Verdict(const std::string& sample) const {
    if (tensor.empty()) return {false, false, 0, "nothing comparable"};
    return {failing, false, 0,
            fmt::format("{} max |diff| {:.3g} on {} (sample {})",
                        failing ? "diverges:" : "within tolerance:", worst, tensor, sample)};
  }
};
}  // namespace

CheckVerdict NumericCheck::Check(const io::Model& candidate, const std::filesystem::path&,
                                 const std::vector<int>&) {
  auto inputs = GraphInputNames(candidate);
  auto outputs = GraphOutputNames(candidate);
  std::vector<std::string> missing;
  auto samples = values_.Get(inputs, &missing);
  if (!missing.empty()) {
    return {false, false, 0, "not comparable: the reference does not compute " + missing[0]};
  }
  io::Model reference;
  if (options_.against) {
    try {
      reference = ir::ExtractSubgraph(*options_.against, inputs, outputs);
    } catch (const Error& e) {
      return {false, false, 0, std::string("not comparable: ") + e.what()};
    }
  }
  runtime::SessionOptions candidate_options;
  candidate_options.threads = 1;
  candidate_options.float16 = options_.float16;
  runtime::SessionOptions reference_options;
  reference_options.threads = 1;
  runtime::Session run(candidate, candidate_options);
  runtime::Session ref(options_.against ? reference : candidate, reference_options);
  CheckVerdict first;
  for (size_t s = 0; s < samples.size(); ++s) {
    SpilledTensors want(options_.spill_dir);
    ref.Run(samples[s], [&want](const std::string& name, const runtime::Tensor& value) {
      want.Add(name, value);
    });
    Divergence d;
    run.Run(samples[s], [&](const std::string& name, const runtime::Tensor& value) {
      if (auto reference = want.Take(name)) {
        d.Add(name, runtime::CompareTensors(*reference, value, options_.rtol, options_.atol));
      }
    });
    CheckVerdict v = d.Verdict(values_.sample_ids()[s]);
    if (v.failing) return v;
    if (s == 0) first = v;
  }
  return first;
}

}  // namespace porttool::stages
