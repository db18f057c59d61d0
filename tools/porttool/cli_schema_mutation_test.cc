// Schema validation of every JSON file a user writes (issue 54), tested by mutation: each shipped
// rules file (rules/decision/*.json, rules/targets/*.json) has every field, found by JSON pointer,
// changed to each wrong type, a negative number, 2^31, 2^63, 1e308, an empty string, array or
// object, and removed. Every mutated file must load or be refused as user error (exit 1, 2 or 3),
// never an internal error (exit 4) or a signal; and `rules validate` must refuse exactly the files
// a command refuses at load. In process through the loaders for every mutation (fast); through
// the CLI (check, split --auto, decide, port, rules validate) for a deterministic sample plus every
// mutation of the fields issue 54 reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "lib/decide/analyzed_model.h"
#include "lib/decide/facts.h"
#include "lib/decide/remedies.h"
#include "lib/decide/rules.h"
#include "lib/decide/rules_dir.h"
#include "lib/decide/scan.h"
#include "lib/io/model.h"
#include "lib/stages/target.h"
#include "lib/util/error.h"
#include "lib/util/testing.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::kAsan;
// In process, every 3rd mutation (3 is prime to the 13 changes per field, so every field gets
// changed and each change kind reaches every third field; the reported fields get all of them):
// about 30 s of a 2-core machine. The sanitizer build runs the loaders 5-10x slower: every 16th.
// PORTTOOL_SCHEMA_MUTATIONS_ALL=1 runs all of them (about 100 s).
size_t InProcessStride() {
  const char* all = std::getenv("PORTTOOL_SCHEMA_MUTATIONS_ALL");
  return all && std::string(all) == "1" ? 1 : kAsan ? 16 : 3;
}
// Through the CLI (five subprocesses each, ~0.25 s a mutation): about this many sampled ones,
// plus the reported fields' type and sign changes (under ASan, the sign change of every 4th
// reported field: an instrumented port takes seconds).
constexpr size_t kCliSample = kAsan ? 6 : 16;

struct Mutation {
  std::string file;  // relative to the rules dir: "targets/stm32f767.json"
  std::string pointer;
  std::string change;  // "-> -1", "removed"
  json doc;
  std::string Name() const { return file + ":" + (pointer.empty() ? "/" : pointer) + " " + change; }
};

std::string Token(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// Every value's pointer; of an array, elements 0, 1 and the last (the loaders validate the
// elements of one array with one function, and op lists run to hundreds of names).
void Pointers(const json& v, const std::string& p, std::vector<std::string>& out) {
  out.push_back(p);
  if (v.is_object()) {
    for (const auto& item : v.items()) Pointers(item.value(), p + "/" + Token(item.key()), out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i < 2 || i + 1 == v.size()) Pointers(v[i], p + "/" + std::to_string(i), out);
    }
  }
}

std::vector<std::pair<std::string, json>> Replacements() {
  return {{"a string", "x"},
          {"-1", -1},
          {"2^31", int64_t{1} << 31},
          {"2^63", uint64_t{1} << 63},
          {"1e308", 1e308},
          {"0.5", 0.5},
          {"true", true},
          {"null", nullptr},
          {"\"\"", ""},
          {"[]", json::array()},
          {"[\"a\"]", json::array({"a"})},
          {"{}", json::object()}};
}

std::vector<Mutation> MutationsOf(const std::string& file, const json& doc) {
  std::vector<std::string> pointers;
  Pointers(doc, "", pointers);
  std::vector<Mutation> out;
  for (const auto& p : pointers) {
    if (p.empty()) continue;
    json::json_pointer ptr(p);
    for (const auto& r : Replacements()) {
      json d = doc;
      d[ptr] = r.second;
      out.push_back({file, p, "-> " + r.first, std::move(d)});
    }
    json d = doc;
    json& parent = d[ptr.parent_pointer()];
    if (parent.is_object()) {
      parent.erase(ptr.back());
    } else {
      parent.erase(std::stoul(ptr.back()));
    }
    out.push_back({file, p, "removed", std::move(d)});
  }
  return out;
}

std::vector<Mutation> AllMutations() {
  std::vector<Mutation> out;
  for (const auto& path : decide::ShippedRuleFiles(testing::SourceDir() / "rules")) {
    std::string rel = path.parent_path().filename().string() + "/" + path.filename().string();
    auto m = MutationsOf(rel, json::parse(testing::ReadFile(path)));
    out.insert(out.end(), std::make_move_iterator(m.begin()), std::make_move_iterator(m.end()));
  }
  return out;
}

// The fields issue 54 named: an input_rank check's input, axis_in's values, attr_range's
// from_weight, resize_scale's integer, alignment_bytes and rewrites.
bool Reported(const Mutation& m, const json& original) {
  if (m.pointer == "/alignment_bytes" || m.pointer == "/rewrites") return true;
  auto slash = m.pointer.rfind('/');
  json::json_pointer check(m.pointer.substr(0, slash));
  if (slash == 0 || !original.contains(check) || !original[check].is_object()) return false;
  std::string kind = original[check].value("kind", ""), key = m.pointer.substr(slash + 1);
  return (kind == "input_rank" && key == "input") || (kind == "axis_in" && key == "values") ||
         (kind == "attr_range" && key == "from_weight") ||
         (kind == "resize_scale" && key == "integer");
}

// A copy of the shipped rules directory in which one file at a time is replaced.
class RulesCopy {
 public:
  RulesCopy() {
    fs::copy(testing::SourceDir() / "rules", dir_.path() / "rules", fs::copy_options::recursive);
  }
  fs::path dir() const { return dir_.path() / "rules"; }
  void Write(const Mutation& m) { testing::WriteFile(dir() / m.file, m.doc.dump(2)); }
  void Restore(const std::string& file) {
    fs::copy_file(testing::SourceDir() / "rules" / file, dir() / file,
                  fs::copy_options::overwrite_existing);
  }

 private:
  testing::TempDir dir_;
};

// What a call did: nothing thrown (0), a porttool::Error (its exit code), or an internal error or
// a foreign exception (4, with the message).
struct Outcome {
  int code = 0;
  std::string message;
};

template <typename F>
Outcome Attempt(F&& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return {ExitCodeFor(e.kind()), e.what()};
  } catch (const std::exception& e) {
    return {4, std::string("not a porttool::Error: ") + e.what()};
  }
}

// Shipped profiles whose chain of "extends" reaches `name` (itself included): the ones a mutation
// of `name` can break.
std::vector<std::string> ProfilesUsing(const std::string& name) {
  static std::map<std::string, std::vector<std::string>> cache;
  if (cache.count(name)) return cache[name];
  const fs::path rules = testing::SourceDir() / "rules";
  std::vector<std::string>& out = cache[name];
  for (const auto& target : decide::TargetNames(rules)) {
    std::string at = target;
    for (int depth = 0; depth < 5; ++depth) {
      if (at == name) {
        out.push_back(target);
        break;
      }
      json doc = json::parse(testing::ReadFile(rules / "targets" / (at + ".json")));
      if (!doc.contains("extends")) break;
      at = doc["extends"].get<std::string>();
    }
  }
  return out;
}

bool IsTarget(const Mutation& m) { return m.file.rfind("targets/", 0) == 0; }
std::string TargetName(const Mutation& m) { return fs::path(m.file).stem().string(); }

// The demo model analysed once, without pins (the scan runs its checks on every node).
const decide::AnalyzedModel& DemoModel() {
  static const io::Model model = io::Load(testing::DemoModelPath());
  static const decide::AnalyzedModel analyzed(model, {});
  return analyzed;
}

// The shipped remedies and one shipped profile (the scans of the other file kind's mutations).
const std::vector<decide::RemedyRule>& ShippedRemedies() {
  static const auto rules = decide::LoadRemedies(
      decide::JsonFile::Load(testing::SourceDir() / "rules/decision/remedies.json"));
  return rules;
}
const decide::TargetProfile& ShippedTarget() {
  static const auto target = decide::LoadTarget(testing::SourceDir() / "rules", "rknn-rk3588");
  return target;
}

void Scan(const decide::TargetProfile& t, const std::vector<decide::RemedyRule>& rules) {
  auto s = decide::ScanTarget(DemoModel(), t);
  decide::ComputeRemedies(DemoModel(), t, s, rules);
  decide::FallbackRewrites(DemoModel(), s, rules);
}

// What the commands load from `rules` for `m`, then use: the profiles the mutated file is part
// of (stages::LoadTargetProfile, as check, split, decide and port do) scanned on the demo model;
// or the decision files (as decide and port do), their remedies computed for rknn-rk3588.
Outcome CommandsLoad(const fs::path& rules, const Mutation& m) {
  if (IsTarget(m)) {
    for (const auto& t : ProfilesUsing(TargetName(m))) {
      Outcome o = Attempt([&] { Scan(stages::LoadTargetProfile(rules, t), ShippedRemedies()); });
      if (o.code != 0) return o;
    }
    return {};
  }
  return Attempt([&] {
    auto catalog = decide::FactCatalog::Load(rules / "decision/facts.json");
    decide::LoadDecisionTable(decide::JsonFile::Load(rules / "decision/table.json"), catalog);
    stages::ValidateRemedyPasses(rules / "decision/remedies.json");
    Scan(ShippedTarget(),
         decide::LoadRemedies(decide::JsonFile::Load(rules / "decision/remedies.json")));
  });
}

// `rules validate` over the whole directory, as the command runs it with no file arguments.
Outcome ValidateAll(const fs::path& rules) {
  return Attempt([&] {
    for (const auto& f : decide::ShippedRuleFiles(rules)) stages::ValidateRuleFile(rules, f);
  });
}

// The same, limited to the files `m` can break (the others are the shipped, valid ones): the
// mutated file, the profiles extending a mutated profile, the table checked against mutated facts.
Outcome ValidateAffected(const fs::path& rules, const Mutation& m) {
  std::vector<std::string> files = {m.file};
  if (IsTarget(m)) {
    for (const auto& t : ProfilesUsing(TargetName(m))) files.push_back("targets/" + t + ".json");
  }
  if (m.file == "decision/facts.json") files.push_back("decision/table.json");
  return Attempt([&] {
    for (const auto& f : files) stages::ValidateRuleFile(rules, rules / f);
  });
}

TEST(SchemaMutation, ShippedFilesValidateAndTheMutationsAreMany) {
  RulesCopy copy;
  EXPECT_EQ(ValidateAll(copy.dir()).code, 0) << ValidateAll(copy.dir()).message;
  EXPECT_GT(AllMutations().size(), 5000u);
}

// Every InProcessStride()-th mutation, and all of the reported fields: loaders and the
// scan raise only user errors, and validation fails exactly when the commands' loading does.
TEST(SchemaMutation, LoadersRefuseEveryMutationAsUserErrorAndValidateAgrees) {
  RulesCopy copy;
  auto all = AllMutations();
  std::map<std::string, json> originals;
  const size_t stride = InProcessStride();
  size_t tested = 0, refused = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Mutation& m = all[i];
    if (!originals.count(m.file)) {
      originals[m.file] = json::parse(testing::ReadFile(testing::SourceDir() / "rules" / m.file));
    }
    if (i % stride != 0 && !Reported(m, originals[m.file])) continue;
    copy.Write(m);
    Outcome load = CommandsLoad(copy.dir(), m), validate = ValidateAffected(copy.dir(), m);
    copy.Restore(m.file);
    ++tested;
    refused += validate.code != 0;
    EXPECT_TRUE(load.code == 0 || load.code == 3) << m.Name() << ": " << load.message;
    EXPECT_NE(validate.code, 4) << m.Name() << ": " << validate.message;
    EXPECT_EQ(load.code != 0, validate.code != 0)
        << m.Name() << "\n  commands: " << load.message << "\n  validate: " << validate.message;
    if (validate.code != 0) {
      EXPECT_EQ(validate.code, 3) << m.Name() << ": " << validate.message;
    }
  }
  std::cout << "in process: " << tested << " mutations, " << refused << " refused\n";
  EXPECT_GT(refused, tested / 2);
}

// A --facts file is JSON a user writes too: one with every catalog fact, each changed as above,
// through the loader, the derived facts and the decision table (what decide does with it).
TEST(SchemaMutation, UserFactsFileMutationsAreUserErrors) {
  const fs::path rules = testing::SourceDir() / "rules";
  auto catalog = decide::FactCatalog::Load(rules / "decision/facts.json");
  auto table =
      decide::LoadDecisionTable(decide::JsonFile::Load(rules / "decision/table.json"), catalog);
  json doc = json::object();
  for (const auto& name : catalog.Names()) {
    const decide::FactSpec& spec = *catalog.Find(name);
    json value = spec.min ? json(*spec.min) : json(1);
    if (spec.type == decide::FactType::kBoolean) value = true;
    if (spec.type == decide::FactType::kString) value = "640x640";
    if (spec.type == decide::FactType::kEnum) value = spec.values.front();
    doc[json::json_pointer("/" + std::regex_replace(name, std::regex("\\."), "/"))] = value;
  }
  auto load = [&](const json& d) {
    return Attempt([&] {
      decide::Facts facts;
      decide::LoadUserFacts(decide::JsonFile::FromText(d.dump(), "project.json"), catalog, facts);
      decide::AddDerivedFacts(catalog, facts);
      std::vector<decide::DimensionResult> results;
      for (const auto& dim : table.dimensions) results.push_back(EvaluateDimension(dim, facts));
      decide::Combine(table.policy, results);
    });
  };
  ASSERT_EQ(load(doc).code, 0) << load(doc).message;
  auto mutations = MutationsOf("project.json", doc);
  for (const auto& m : mutations) {
    Outcome o = load(m.doc);
    EXPECT_TRUE(o.code == 0 || o.code == 3) << m.Name() << ": " << o.message;
  }
  EXPECT_GT(mutations.size(), 300u);
}

// The messages issue 54 asked for: file, JSON pointer and the expected range, no flag.
TEST(SchemaMutation, ReportedFieldsNameFileAndPointer) {
  RulesCopy copy;
  auto expect_refused = [&](const std::string& file, const std::string& pointer, const json& value,
                            const std::string& expected) {
    json doc = json::parse(testing::ReadFile(copy.dir() / file));
    doc[json::json_pointer(pointer)] = value;
    Mutation m{file, pointer, "", doc};
    copy.Write(m);
    Outcome o = ValidateAll(copy.dir());
    copy.Restore(file);
    EXPECT_EQ(o.code, 3) << file << pointer;
    EXPECT_NE(o.message.find(file), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("at " + pointer + ": " + expected), std::string::npos) << o.message;
  };
  expect_refused("targets/stm32f767.json", "/alignment_bytes", 3,
                 "expected a power of two in [1, 4096], got 3");
  expect_refused("targets/stm32f767.json", "/alignment_bytes", -64,
                 "expected an integer in [1, 4096], got -64");
  expect_refused("targets/stm32f767.json", "/alignment_bytes", int64_t{1} << 62,
                 "expected an integer in [1, 4096]");
  expect_refused("targets/stm32f767.json", "/alignment_bytes", 0,
                 "expected an integer in [1, 4096], got 0");
  expect_refused("targets/stm32f767.json", "/rewrites", "convert-opset{min=x max=13}",
                 "pass 'convert-opset' option min=x: expected an integer from 1 to 1000");
  expect_refused("targets/stm32f767.json", "/rewrites", "convert-opset{min=1 max=1099511627776}",
                 "pass 'convert-opset' option max=1099511627776");
}

// Through the binary: exit 0-3 from every command, never 4 or a signal, and `rules validate`
// exits 3 exactly when some command refused the rules at load (exit 3 naming the file).
struct CliRun {
  std::string command;
  testing::CommandResult result;
};

std::vector<CliRun> RunCommands(const fs::path& rules, const Mutation& m, const fs::path& out) {
  std::string r = " --rules-dir " + testing::ShellQuote(rules),
              model = testing::DemoArg() + " --input-shape images:1x3x64x64";
  std::string target = m.file.rfind("targets/", 0) == 0 ? fs::path(m.file).stem().string()
                                                        : std::string("rknn-rk3588");
  std::string o = testing::ShellQuote(out);
  fs::remove_all(out);
  std::vector<std::string> commands = {
      "rules validate" + r, "check " + model + " --target " + target + r,
      "split " + model + " --auto --target " + target + " -o " + o + "/split" + r,
      "decide " + model + " --target " + target + r,
      "port " + model + " --target " + target + " -o " + o + "/port" + r};
  std::vector<CliRun> runs;
  for (const auto& c : commands) runs.push_back({c, testing::RunPorttool(c)});
  return runs;
}

TEST(SchemaMutation, CliExitsZeroOneOrThreeAndValidateAgrees) {
  RulesCopy copy;
  testing::TempDir out;
  auto all = AllMutations();
  std::map<std::string, json> originals;
  std::vector<const Mutation*> picked;
  size_t stride = std::max<size_t>(1, all.size() / kCliSample), reported_seen = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Mutation& m = all[i];
    if (!originals.count(m.file)) {
      originals[m.file] = json::parse(testing::ReadFile(testing::SourceDir() / "rules" / m.file));
    }
    // The reported fields: their type and sign changes (every change is covered in process).
    bool reported =
        Reported(m, originals[m.file]) &&
        (m.change == "-> -1" || (!kAsan && (m.change == "-> a string" || m.change == "-> 2^63")));
    if (reported && kAsan && reported_seen++ % 4 != 0) reported = false;
    if (i % stride == stride / 2 || reported) picked.push_back(&m);
  }
  for (const Mutation* m : picked) {
    copy.Write(*m);
    auto runs = RunCommands(copy.dir(), *m, out.path() / "o");
    copy.Restore(m->file);
    bool load_refused = false;
    for (const auto& run : runs) {
      int code = run.result.exit_code;
      // A rules file is data the user wrote: never a usage error (2), never an internal one (4).
      EXPECT_TRUE(code == 0 || code == 1 || code == 3)
          << m->Name() << "\n  porttool " << run.command << " exited " << code << ": "
          << run.result.err;
      if (run.command.rfind("rules", 0) != 0 && code == 3 &&
          run.result.err.find(m->file) != std::string::npos) {
        load_refused = true;
      }
    }
    EXPECT_EQ(runs[0].result.exit_code != 0, load_refused)
        << m->Name() << "\n  validate: " << runs[0].result.err
        << "\n  check: " << runs[1].result.err << "\n  decide: " << runs[3].result.err
        << "\n  port: " << runs[4].result.err;
  }
  std::cout << "CLI: " << picked.size() << " mutations x " << 5 << " commands\n";
}

}  // namespace
}  // namespace porttool
