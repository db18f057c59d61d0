#include "passes/pipeline.h"

#include <fmt/format.h>

#include <charconv>

#include "lib/util/error.h"

namespace porttool::passes {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  std::vector<PipelineStep> Parse() {
    std::vector<PipelineStep> steps;
    SkipSpaces();
    if (AtEnd()) Fail("the pipeline is empty; expected e.g. 'infer-shapes,check'");
    while (true) {
      steps.push_back(ParseStep());
      SkipSpaces();
      if (AtEnd()) break;
      Expect(',');
    }
    return steps;
  }

 private:
  PipelineStep ParseStep() {
    SkipSpaces();
    PipelineStep step;
    step.id = ParseWord("a pass id");
    SkipSpaces();
    if (!AtEnd() && text_[pos_] == '{') {
      ++pos_;
      std::map<std::string, std::string> values;
      while (true) {
        SkipSpaces();
        // Options are separated by spaces, or by ';' (`convert-fp16{keep=a,b; io=fp16}`).
        if (!values.empty() && !AtEnd() && text_[pos_] == ';') {
          ++pos_;
          SkipSpaces();
        }
        if (AtEnd()) Fail("missing '}'");
        if (text_[pos_] == '}') {
          ++pos_;
          break;
        }
        std::string key = ParseWord("an option name");
        SkipSpaces();
        Expect('=');
        SkipSpaces();
        std::string value = ParseValue();
        if (!values.emplace(key, value).second) Fail("option '" + key + "' given twice");
      }
      step.options = PassOptions(std::move(values));
    }
    return step;
  }

  std::string ParseWord(const char* what) {
    size_t start = pos_;
    while (!AtEnd() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                        text_[pos_] == '-' || text_[pos_] == '_')) {
      ++pos_;
    }
    if (start == pos_) Fail(std::string("expected ") + what);
    return text_.substr(start, pos_ - start);
  }

  std::string ParseValue() {
    if (!AtEnd() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      char quote = text_[pos_++];
      size_t end = text_.find(quote, pos_);
      if (end == std::string::npos) Fail("unterminated quote");
      std::string value = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      return value;
    }
    size_t start = pos_;
    while (!AtEnd() && !std::isspace(static_cast<unsigned char>(text_[pos_])) &&
           text_[pos_] != '}' && text_[pos_] != '{' && text_[pos_] != ';') {
      ++pos_;
    }
    if (start == pos_) Fail("expected an option value");
    return text_.substr(start, pos_ - start);
  }

  void Expect(char c) {
    if (AtEnd() || text_[pos_] != c) Fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void SkipSpaces() {
    while (!AtEnd() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }

  [[noreturn]] void Fail(const std::string& what) const {
    ThrowUsage("pipeline parse error at column {}: {}\n  {}\n  {}^", pos_ + 1, what, text_,
               std::string(pos_, ' '));
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

std::string PassOptions::Get(const std::string& key, const std::string& def) const {
  auto it = values_.find(key);
  return it == values_.end() ? def : it->second;
}

int64_t PassOptions::GetInt(const std::string& key, int64_t def) const {
  auto it = values_.find(key);
  if (it == values_.end()) return def;
  int64_t v = 0;
  const auto& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    ThrowUsage("option {}={}: expected an integer", key, s);
  }
  return v;
}

int64_t PassOptions::GetInt(const std::string& key, int64_t def, int64_t lo, int64_t hi) const {
  int64_t v = GetInt(key, def);
  if (Has(key) && (v < lo || v > hi)) {
    ThrowUsage("option {}={}: expected an integer from {} to {}", key, Get(key), lo, hi);
  }
  return v;
}

std::vector<PipelineStep> ParsePipeline(const std::string& text) { return Parser(text).Parse(); }

namespace {

void CheckIntegerOption(const Pass& pass, const PassOptions& options, const OptionHelp& o) {
  if (!o.integer_range || !options.Has(o.key)) return;
  auto [min, max] = *o.integer_range;
  bool ok = false;
  try {
    int64_t v = options.GetInt(o.key, min);
    ok = v >= min && v <= max;
  } catch (const Error&) {
    // not an integer (or beyond int64): reported below with the range
  }
  if (!ok) {
    ThrowUsage("pass '{}' option {}={}: expected an integer from {} to {}", pass.id(), o.key,
               options.Get(o.key), min, max);
  }
}

void CheckOptions(const Pass& pass, const PassOptions& options) {
  auto known = pass.options();
  for (const auto& o : known) CheckIntegerOption(pass, options, o);
  for (const auto& [key, value] : options.values()) {
    bool found = false;
    for (const auto& o : known) found |= o.key == key;
    if (!found) {
      std::string list;
      for (const auto& o : known) list += (list.empty() ? "" : ", ") + o.key;
      ThrowUsage("pass '{}' has no option '{}' (options: {})", pass.id(), key,
                 list.empty() ? "none" : list);
    }
  }
}

// "left the bodies of If 'a' (2 nodes), Loop 'b' (5 nodes) as they are", or "" when the main
// graph has no node with a graph attribute.
std::string UnvisitedBodiesNote(const onnx::GraphProto& graph) {
  std::string list;
  for (const auto& node : graph.node()) {
    int nodes = 0;
    for (const auto& a : node.attribute()) {
      if (a.has_g()) nodes += a.g().node_size();
      for (const auto& g : a.graphs()) nodes += g.node_size();
    }
    if (nodes == 0) continue;
    list += fmt::format("{}{} '{}' ({} nodes)", list.empty() ? "" : ", ", node.op_type(),
                        node.name(), nodes);
  }
  if (list.empty()) return "";
  return "this pass does not look inside subgraph bodies; left the bodies of " + list +
         " as they are";
}

}  // namespace

void ValidatePipeline(const std::vector<PipelineStep>& steps) {
  for (const auto& step : steps) CheckOptions(FindPass(step.id), step.options);
}

std::vector<StepReport> RunPipeline(io::Model& model, const std::vector<PipelineStep>& steps,
                                    PassContext& context) {
  ValidatePipeline(steps);
  std::vector<StepReport> reports;
  for (const auto& step : steps) {
    const Pass& pass = FindPass(step.id);
    reports.push_back({step.id, pass.Run(model, step.options, context)});
    if (!pass.visits_subgraph_bodies()) {
      std::string note = UnvisitedBodiesNote(model.proto.graph());
      if (!note.empty()) reports.back().result.notes.push_back(std::move(note));
    }
    if (context.note_sink) {
      for (const auto& note : reports.back().result.notes) context.note_sink(step.id, note);
    }
    if (reports.back().result.failed) break;
  }
  return reports;
}

std::vector<StepReport> RunPipeline(io::Model& model, const std::vector<PipelineStep>& steps) {
  PassContext context;
  return RunPipeline(model, steps, context);
}

int RunToFixedPoint(io::Model& model, const std::vector<PipelineStep>& steps, int max_rounds,
                    bool& hit_cap, std::vector<StepReport>& reports, PassContext& context) {
  ValidatePipeline(steps);
  hit_cap = false;
  for (int round = 1; round <= max_rounds; ++round) {
    int changes = 0;
    for (auto& report : RunPipeline(model, steps, context)) {
      changes += report.result.changes;
      bool failed = report.result.failed;
      reports.push_back(std::move(report));
      if (failed) return round;
    }
    if (changes == 0) return round;
  }
  hit_cap = true;
  return max_rounds;
}

int RunToFixedPoint(io::Model& model, const std::vector<PipelineStep>& steps, int max_rounds,
                    bool& hit_cap, std::vector<StepReport>& reports) {
  PassContext context;
  return RunToFixedPoint(model, steps, max_rounds, hit_cap, reports, context);
}

}  // namespace porttool::passes
