// The attribute matrix (ctest `attribute_matrix`): every INT, INTS, FLOAT and FLOATS attribute of
// every op's schema, set in turn to 0, a negative value, a huge value and (lists) the wrong
// number of values, on a carrier model per op (the first ONNX backend node test of that op, from
// Debian's libonnx-testdata), run through ten subcommands in process. Every run must end with an
// exit code of 0-3 and no signal (a child process per case, so a crash names its case); a case
// that io::ValidateNodeAttributes refuses must get exit 3 from every subcommand with a message
// naming the node and the attribute. libonnx's own inference used to die of SIGFPE on several
// of these (strides 0, blocksize 2^32) before porttool's code ran.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/io/model.h"
#include "lib/io/node_attributes.h"
#include "lib/util/testing.h"
#include "tools/porttool/commands.h"

namespace porttool {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";
constexpr const char* kNode = "matrix_node";

struct Case {
  std::string label;  // "test_conv_with_strides_padding: strides=[0, 0]"
  std::string attr;
  onnx::ModelProto model;
};

// One carrier per (domain, op): the first node test, in name order, whose model is one node.
std::map<std::string, onnx::ModelProto> Carriers() {
  std::map<std::string, onnx::ModelProto> carriers;
  std::set<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeTests)) dirs.insert(e.path());
  for (const auto& dir : dirs) {
    onnx::ModelProto m;
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    if (!m.ParseFromIstream(&in) || m.graph().node_size() != 1) continue;
    const auto& node = m.graph().node(0);
    std::string key = node.domain() + "::" + node.op_type();
    if (carriers.count(key)) continue;
    m.mutable_graph()->mutable_node(0)->set_name(kNode);
    m.mutable_graph()->set_name(dir.filename().string());
    carriers.emplace(key, std::move(m));
  }
  return carriers;
}

int OpsetOf(const onnx::ModelProto& m, const std::string& domain) {
  for (const auto& o : m.opset_import()) {
    if (o.domain() == domain || (domain.empty() && o.domain() == "ai.onnx")) return o.version();
  }
  return 0;
}

// The attribute as the carrier has it, else the schema's default, else a 2-D window's value.
onnx::AttributeProto BaseValue(const onnx::NodeProto& node,
                               const onnx::OpSchema::Attribute& schema) {
  for (const auto& a : node.attribute()) {
    if (a.name() == schema.name) return a;
  }
  onnx::AttributeProto a = schema.default_value;
  a.set_name(schema.name);
  a.set_type(schema.type);
  if (schema.type == onnx::AttributeProto::INTS && a.ints_size() == 0) {
    a.add_ints(1);
    a.add_ints(1);
  }
  if (schema.type == onnx::AttributeProto::FLOATS && a.floats_size() == 0) {
    a.add_floats(1);
    a.add_floats(1);
  }
  return a;
}

std::string Show(const onnx::AttributeProto& a) {
  std::ostringstream s;
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      s << a.i();
      break;
    case onnx::AttributeProto::FLOAT:
      s << a.f();
      break;
    case onnx::AttributeProto::INTS:
      s << "[";
      for (int i = 0; i < a.ints_size(); ++i) s << (i ? ", " : "") << a.ints(i);
      s << "]";
      break;
    default:
      s << "[";
      for (int i = 0; i < a.floats_size(); ++i) s << (i ? ", " : "") << a.floats(i);
      s << "]";
  }
  return s.str();
}

// {0, negative, huge, wrong rank} for one attribute.
std::vector<onnx::AttributeProto> Variants(onnx::AttributeProto base) {
  constexpr int64_t kHuge = int64_t{1} << 32;
  std::vector<onnx::AttributeProto> out;
  auto with = [&](auto edit) {
    onnx::AttributeProto a = base;
    edit(a);
    out.push_back(std::move(a));
  };
  switch (base.type()) {
    case onnx::AttributeProto::INT:
      for (int64_t v : {int64_t{0}, int64_t{-1}, kHuge}) with([&](auto& a) { a.set_i(v); });
      break;
    case onnx::AttributeProto::FLOAT:
      for (float v : {0.0f, -1.0f, 1e30f}) with([&](auto& a) { a.set_f(v); });
      break;
    case onnx::AttributeProto::INTS:
      for (int64_t v : {int64_t{0}, int64_t{-1}, kHuge}) {
        with([&](auto& a) {
          for (auto& x : *a.mutable_ints()) x = v;
        });
      }
      with([](auto& a) { a.add_ints(1); });
      if (base.ints_size() > 0) with([](auto& a) { a.mutable_ints()->RemoveLast(); });
      break;
    case onnx::AttributeProto::FLOATS:
      for (float v : {0.0f, -1.0f, 1e30f}) {
        with([&](auto& a) {
          for (auto& x : *a.mutable_floats()) x = v;
        });
      }
      with([](auto& a) { a.add_floats(1); });
      break;
    default:
      break;
  }
  return out;
}

std::vector<Case> MatrixCases() {
  std::vector<Case> cases;
  for (auto& [key, carrier] : Carriers()) {
    const auto& node = carrier.graph().node(0);
    const auto* schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), OpsetOf(carrier, node.domain()), node.domain());
    if (!schema) continue;
    for (const auto& [name, attr] : schema->attributes()) {
      for (auto& variant : Variants(BaseValue(node, attr))) {
        Case c;
        c.label = carrier.graph().name() + ": " + name + "=" + Show(variant);
        c.attr = name;
        c.model = carrier;
        auto* n = c.model.mutable_graph()->mutable_node(0);
        auto* attrs = n->mutable_attribute();
        for (int i = attrs->size() - 1; i >= 0; --i) {
          if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
        }
        *n->add_attribute() = std::move(variant);
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

std::vector<std::vector<std::string>> Commands(const fs::path& model, const fs::path& out) {
  std::string m = model.string();
  std::string o = out.string();
  return {
      {"check", m},
      {"inspect", m},
      {"infer-shapes", m, "-o", o + "/i.onnx"},
      {"simplify", m, "-o", o + "/s.onnx"},
      {"fold-constants", m, "-o", o + "/f.onnx"},
      {"rewrite", m, "--rule", "resize-to-upsample", "-o", o + "/r.onnx"},
      {"split", m, "--at", kNode, "-o", o + "/split"},
      {"emit-header", m, "-o", o + "/m.h"},
      {"decide", m, "--target", "rknn-rk3588"},
      {"run", m, "--random-inputs"},
  };
}

// Runs the ten subcommands in this (forked) process; records "<i> <exit code>" per command in
// `results` as it goes, so a crash leaves the number of the command that crashed. Output of
// command i goes to out/<i>.err.
[[noreturn]] void RunChild(const fs::path& model, const fs::path& out, const fs::path& results) {
  int log = ::open(results.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  auto commands = Commands(model, out);
  for (size_t i = 0; i < commands.size(); ++i) {
    std::string start = "start " + std::to_string(i) + "\n";
    (void)!::write(log, start.data(), start.size());
    int err = ::open((out / (std::to_string(i) + ".err")).c_str(), O_WRONLY | O_CREAT, 0644);
    ::dup2(err, 1);
    ::dup2(err, 2);
    ::close(err);
    std::vector<std::string> words = {"porttool"};
    words.insert(words.end(), commands[i].begin(), commands[i].end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    int rc = cli::Main(static_cast<int>(words.size()), argv.data());
    std::fflush(stdout);
    std::fflush(stderr);
    std::string done = "rc " + std::to_string(i) + " " + std::to_string(rc) + "\n";
    (void)!::write(log, done.data(), done.size());
  }
  ::close(log);
  _exit(0);
}

std::string CommandText(const std::vector<std::string>& words) {
  std::string s = "porttool";
  for (const auto& w : words) s += " " + w;
  return s;
}

TEST(AttributeMatrix, EveryAttributeValueEndsCleanlyInEverySubcommand) {
  if (!fs::is_directory(kNodeTests)) {
    PORTTOOL_SKIP_MISSING(kNodeTests << " is absent (Debian package libonnx-testdata)");
  }
  testing::TempDir tmp;
  auto cases = MatrixCases();
  ASSERT_GT(cases.size(), 500u) << "the carriers lost most of their attributes";
  std::vector<std::string> failures;
  std::map<int, int> exit_codes;
  int refused = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    fs::path dir = tmp.path() / std::to_string(k);
    fs::create_directories(dir);
    fs::path model = dir / "model.onnx";
    {
      std::ofstream f(model, std::ios::binary);
      c.model.SerializeToOstream(&f);
    }
    bool validator_refuses = false;
    try {
      io::ValidateNodeAttributes(c.model);
    } catch (const Error&) {
      validator_refuses = true;
      ++refused;
    }
    fs::path results = dir / "results.txt";
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) RunChild(model, dir, results);
    int status = 0;
    ::waitpid(pid, &status, 0);
    auto commands = Commands(model, dir);
    std::ifstream log(results);
    std::map<int, int> rc;
    int started = -1;
    for (std::string word; log >> word;) {
      int i = 0, code = 0;
      if (word == "start" && log >> i) started = i;
      if (word == "rc" && log >> i >> code) rc[i] = code;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failures.push_back(fmt::format("{}: `{}` died (signal {})", c.label,
                                     started >= 0 ? CommandText(commands[started]) : "?",
                                     WIFSIGNALED(status) ? WTERMSIG(status) : -1));
    }
    for (auto [i, code] : rc) {
      ++exit_codes[code];
      std::string err = testing::ReadFile(dir / (std::to_string(i) + ".err"));
      if (code < 0 || code > 3) {
        failures.push_back(fmt::format("{}: `{}` exit {}: {}", c.label, CommandText(commands[i]),
                                       code, err.substr(0, 300)));
      } else if (validator_refuses && (code != 3 || err.find(kNode) == std::string::npos ||
                                       err.find("'" + c.attr + "'") == std::string::npos)) {
        failures.push_back(fmt::format("{}: `{}` exit {} without naming node and attribute: {}",
                                       c.label, CommandText(commands[i]), code,
                                       err.substr(0, 300)));
      }
    }
    fs::remove_all(dir);
  }
  std::string histogram;
  for (auto [code, n] : exit_codes) histogram += fmt::format(" exit {}: {}", code, n);
  std::cout << cases.size() << " cases x " << Commands("m", "o").size()
            << " subcommands; refused by the attribute rules: " << refused << ";" << histogram
            << "\n";
  std::string shown;
  for (size_t i = 0; i < failures.size() && i < 60; ++i) shown += failures[i] + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:\n" << shown;
}

}  // namespace
}  // namespace porttool
