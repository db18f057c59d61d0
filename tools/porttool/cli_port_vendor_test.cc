// `port`'s step from the bundle to the device (lib/emit/vendor_steps.h). The RKNN bundle's
// rknn/convert.py runs under /usr/bin/python3 against a stub `rknn.api` that records every call
// and its arguments, and the calls are checked against the bundle: platform, dtypes and
// algorithm, mean/std (the calibration images' pixels are known, so the dataset's pixels and
// their normalisation are checked against them), the dataset's files and the segment's bridge
// tensors, load_onnx's names, the hybrid-quantization layers. The trtexec and stedgeai scripts
// run against stub tools that check every file they are given exists. The vendor files are
// byte-identical across runs and thread counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/io/model.h"
#include "lib/runtime/session.h"
#include "lib/runtime/tensor_io.h"
#include "lib/util/testing.h"

namespace porttool::port_vendor_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunPorttool;
using testing::RunShell;
using testing::TempDir;

// Large enough that the cost model gives the NPU segments (at 64x64 the demo runs on the host).
constexpr int kSize = 160;
const std::string kDemoPin = fmt::format("--input-shape images:1x3x{0}x{0}", kSize);
const char* kPython = testing::kSystemPython;
constexpr int kImages = 8;      // port holds out the last quarter for its evaluation
constexpr int kCalibrated = 6;  // so the first 6 are what it calibrates on
const double kMean[3] = {0.485, 0.456, 0.406};
const double kStd[3] = {0.229, 0.224, 0.225};

json ReadJson(const fs::path& path) { return json::parse(testing::ReadFile(path)); }

// The bundle is written whatever the verdict; exit 0 means ready, 1 a failing gate, and the
// report says the same. Returns the report's gates by id.
std::map<std::string, json> ExpectVerdict(const testing::CommandResult& r, const fs::path& bundle,
                                          const std::string& status) {
  EXPECT_EQ(r.exit_code, status == "ready" ? 0 : 1) << r.out << r.err;
  std::map<std::string, json> gates;
  if (!fs::exists(bundle / "report.json")) {
    ADD_FAILURE() << "no report in " << bundle;
    return gates;
  }
  json report = ReadJson(bundle / "report.json");
  EXPECT_EQ(report["status"], status) << report["gates"];
  for (const auto& g : report["gates"]) gates[g["id"]] = g;
  return gates;
}

// Pixel (x, y) of channel c (RGB) of calibration image k.
uint8_t Pixel(int k, int c, int y, int x) {
  return static_cast<uint8_t>((x * 3 + y * 5 + c * 60 + k * 17) % 256);
}

// A kSize x kSize 24-bit BMP (bottom-up rows, BGR): exactly the pixels Pixel() gives, no codec
// rounding, and no resize (the model's own size).
void WriteBmp(const fs::path& path, int k) {
  const int w = kSize, h = kSize, row = w * 3, size = 54 + row * h;
  std::string b(size, '\0');
  auto put32 = [&](int at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, w);
  put32(22, h);
  b[26] = 1;
  b[28] = 24;
  put32(34, row * h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int at = 54 + (h - 1 - y) * row + x * 3;
      for (int c = 0; c < 3; ++c) b[at + 2 - c] = static_cast<char>(Pixel(k, c, y, x));
    }
  }
  testing::WriteFile(path, b);
}

fs::path WriteImages(const TempDir& tmp) {
  fs::path dir = tmp / "images";
  fs::create_directories(dir);
  for (int k = 0; k < kImages; ++k) WriteBmp(dir / fmt::format("img{}.bmp", k), k);
  return dir;
}

std::string ImageArgs(const fs::path& images) {
  return fmt::format("--data {} --resize {}x{} --mean {},{},{} --std {},{},{}", images.string(),
                     kSize, kSize, kMean[0], kMean[1], kMean[2], kStd[0], kStd[1], kStd[2]);
}

// rknn.api as the toolkit's API reference describes it, recording each call (arguments, working
// directory, and for dataset lists which files exist relative to it) into $RKNN_STUB_LOG.
// hybrid_quantization_step1 writes <model>.model/.data/.quantization.cfg like the toolkit, the
// cfg naming every node output of the model; step2 records the custom_quantize_layers it reads.
const char* kStub = R"PY(import json
import os


def _lines(dataset):
    if dataset is None:
        return None
    with open(dataset) as f:
        return [[{'path': p, 'exists': os.path.isfile(p),
                  'abs': os.path.abspath(p)} for p in line.split()]
                for line in f if line.strip()]


def _record(call, **args):
    log = os.environ['RKNN_STUB_LOG']
    calls = json.load(open(log)) if os.path.exists(log) else []
    calls.append({'call': call, 'args': args, 'cwd': os.getcwd()})
    with open(log, 'w') as f:
        json.dump(calls, f)


class RKNN:
    def __init__(self, verbose=False, verbose_file=None):
        self.model = None
        _record('RKNN', verbose=verbose)

    def config(self, **kwargs):
        _record('config', **kwargs)

    def load_onnx(self, model, inputs=None, input_size_list=None, outputs=None, **kwargs):
        self.model = model
        _record('load_onnx', model=model, inputs=inputs, input_size_list=input_size_list,
                outputs=outputs, exists=os.path.isfile(model), **kwargs)
        return 0

    def build(self, do_quantization=True, dataset=None, rknn_batch_size=None, **kwargs):
        _record('build', do_quantization=do_quantization, dataset=dataset,
                dataset_lines=_lines(dataset), **kwargs)
        return 0

    def hybrid_quantization_step1(self, dataset=None, rknn_batch_size=None, proposal=False,
                                  proposal_dataset_size=1, **kwargs):
        import onnx
        _record('hybrid_quantization_step1', dataset=dataset, dataset_lines=_lines(dataset),
                proposal=proposal, **kwargs)
        base = os.path.splitext(os.path.basename(self.model))[0]
        names = [o for n in onnx.load(self.model).graph.node for o in n.output]
        with open(base + '.quantization.cfg', 'w') as f:
            f.write('%YAML 1.2\n---\n# add layer name and corresponding quantized_dtype to '
                    'custom_quantize_layers, e.g conv2_3: float16\ncustom_quantize_layers: {}\n'
                    'quantize_parameters:\n')
            for name in names:
                f.write("    '%s':\n        qtype: asymmetric_quantized\n        max_value:\n"
                        "        -   1.0\n" % name.replace("'", "''"))
        for suffix in ('.model', '.data'):
            open(base + suffix, 'w').write('stub')
        return 0

    def hybrid_quantization_step2(self, model_input, data_input, model_quantization_cfg,
                                  **kwargs):
        import yaml
        cfg = yaml.safe_load(open(model_quantization_cfg))
        _record('hybrid_quantization_step2', model_input=model_input, data_input=data_input,
                model_quantization_cfg=model_quantization_cfg,
                custom_quantize_layers=cfg.get('custom_quantize_layers') or {},
                cfg_layers=sorted(cfg['quantize_parameters']), **kwargs)
        return 0

    def export_rknn(self, export_path, **kwargs):
        _record('export_rknn', export_path=export_path, **kwargs)
        open(export_path, 'w').write('stub rknn')
        return 0

    def release(self):
        _record('release')
)PY";

std::string PythonUnavailable() {
  if (!fs::exists(kPython)) return std::string(kPython) + " is absent";
  auto r = RunShell(std::string(kPython) + " -c 'import onnx, numpy, yaml'");
  return r.exit_code == 0 ? "" : std::string(kPython) + " lacks onnx, numpy or yaml: " + r.err;
}

struct ConvertRun {
  testing::CommandResult result;
  json calls = json::array();
};

// Runs <bundle>/rknn/convert.py from another directory, with the stub first on PYTHONPATH.
ConvertRun RunConvert(const TempDir& tmp, const fs::path& bundle, const std::string& args = "") {
  fs::path stub = tmp / "stub";
  fs::create_directories(stub / "rknn" / "api");
  testing::WriteFile(stub / "rknn" / "__init__.py", "");
  testing::WriteFile(stub / "rknn" / "api" / "__init__.py", kStub);
  fs::path log = tmp / "calls.json";
  fs::remove(log);
  ConvertRun run;
  run.result = RunShell("cd " + tmp.path().string() + " && RKNN_STUB_LOG=" + log.string() +
                        " PYTHONPATH=" + stub.string() + " " + kPython + " " +
                        (bundle / "rknn" / "convert.py").string() + " " + args);
  if (fs::exists(log)) run.calls = ReadJson(log);
  return run;
}

// The arguments of the calls to any of `names`, in call order.
std::vector<json> CallsNamed(const json& calls, const std::set<std::string>& names) {
  std::vector<json> out;
  for (const auto& c : calls) {
    if (names.count(c["call"].get<std::string>())) out.push_back(c["args"]);
  }
  return out;
}

std::vector<json> CallsNamed(const json& calls, const std::string& name) {
  return CallsNamed(calls, std::set<std::string>{name});
}

struct SegmentInfo {
  std::string stem, file;
  std::vector<runtime::InputSpec> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, std::vector<std::string>> node_outputs;  // node name -> outputs
};

std::vector<SegmentInfo> AcceleratorSegments(const fs::path& bundle) {
  std::vector<SegmentInfo> out;
  const json manifest = ReadJson(bundle / "pipeline.json");
  for (const auto& seg : manifest["segments"]) {
    if (seg["role"] != "accelerator") continue;
    SegmentInfo info;
    info.file = seg["file"];
    info.stem = fs::path(info.file).stem().string();
    io::Model model = io::Load(bundle / info.file);
    info.inputs = runtime::Session(model).inputs();
    for (const auto& o : model.proto.graph().output()) info.outputs.push_back(o.name());
    for (const auto& n : model.proto.graph().node()) {
      info.node_outputs[n.name()] = {n.output().begin(), n.output().end()};
    }
    out.push_back(info);
  }
  return out;
}

std::vector<std::string> Names(const std::vector<runtime::InputSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.name);
  return out;
}

// load_onnx and export_rknn of each accelerator segment, in order: the segment's own file, input
// and output names and dims; the .rknn beside the segment, where runner/rknn opens it.
void ExpectLoadsEverySegment(const json& calls, const fs::path& bundle,
                             const std::vector<SegmentInfo>& segments) {
  auto loads = CallsNamed(calls, "load_onnx");
  auto exports = CallsNamed(calls, "export_rknn");
  ASSERT_EQ(loads.size(), segments.size()) << calls.dump(1);
  ASSERT_EQ(exports.size(), segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentInfo& seg = segments[i];
    EXPECT_EQ(fs::path(loads[i]["model"].get<std::string>()),
              fs::weakly_canonical(bundle / seg.file));
    EXPECT_TRUE(loads[i]["exists"]);
    EXPECT_EQ(loads[i]["inputs"], json(Names(seg.inputs)));
    json dims = json::array();
    for (const auto& in : seg.inputs) dims.push_back(in.dims);
    EXPECT_EQ(loads[i]["input_size_list"], dims);
    EXPECT_EQ(loads[i]["outputs"], json(seg.outputs));
    fs::path rknn = bundle / "segments" / (seg.stem + ".rknn");
    EXPECT_EQ(fs::path(exports[i]["export_path"].get<std::string>()), fs::weakly_canonical(rknn));
    EXPECT_TRUE(fs::is_regular_file(rknn)) << rknn;
  }
}

std::string Details(const fs::path& bundle) {
  return ReadJson(bundle / "report.json")["steps"].dump();
}

// ---- RKNN -----------------------------------------------------------------------------------

TEST(CliPortVendor, FloatRknnPortConvertsEverySegmentWithoutQuantization) {
  std::string python = PythonUnavailable();
  if (!python.empty()) PORTTOOL_SKIP_MISSING(python);
  TempDir tmp;
  fs::path bundle = tmp / "b";
  auto r = RunPorttool("port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " -o " +
                       bundle.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(bundle / "rknn" / "README.md"));
  EXPECT_FALSE(fs::exists(bundle / "rknn" / "dataset.txt")) << "a float port has no dataset";
  std::vector<SegmentInfo> segments = AcceleratorSegments(bundle);
  ASSERT_FALSE(segments.empty());
  ConvertRun run = RunConvert(tmp, bundle);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  ExpectLoadsEverySegment(run.calls, bundle, segments);
  auto configs = CallsNamed(run.calls, "config");
  ASSERT_EQ(configs.size(), segments.size());
  for (const auto& c : configs) {
    EXPECT_EQ(c, json({{"target_platform", "rk3588"}, {"float_dtype", "float16"}})) << c;
  }
  for (const auto& b : CallsNamed(run.calls, "build")) {
    EXPECT_EQ(b["do_quantization"], false);
    EXPECT_TRUE(b["dataset"].is_null());
  }
  EXPECT_TRUE(CallsNamed(run.calls, "hybrid_quantization_step1").empty());
  EXPECT_NE(Details(bundle).find("rknn/: convert.py for rknn-toolkit2 2.3.2"), std::string::npos);
}

// The normalised tensor porttool calibrated on, from the known pixels: (p / 255 - mean) / std.
float Normalised(int k, int c, int y, int x) {
  return static_cast<float>((Pixel(k, c, y, x) / 255.0 - kMean[c]) / kStd[c]);
}

// The image's normalised tensor, as porttool's preprocessing made it, NCHW.
runtime::Tensor NormalisedImage(int k) {
  runtime::Tensor t(onnx::TensorProto::FLOAT, {1, 3, kSize, kSize});
  float* p = t.mutable_data<float>();
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < kSize; ++y)
      for (int x = 0; x < kSize; ++x) p[(c * kSize + y) * kSize + x] = Normalised(k, c, y, x);
  return t;
}

// What a segment takes for calibration image k: the image for the model's input, and for a
// bridge the float segments before it run on the image (porttool's executor, as port ran them).
runtime::TensorMap SegmentFeed(const fs::path& bundle, const SegmentInfo& seg, int k) {
  runtime::TensorMap values = {{"images", NormalisedImage(k)}};
  const json manifest = ReadJson(bundle / "pipeline.json");
  for (const auto& s : manifest["segments"]) {
    if (s["file"] == seg.file) break;
    io::Model m = io::Load(bundle / s["file"].get<std::string>());
    runtime::Session session(m);
    runtime::TensorMap in;
    for (const auto& spec : session.inputs()) in[spec.name] = values.at(spec.name);
    for (auto& o : session.Run(in)) values[o.name] = o.value;
  }
  return values;
}

double MaxDiff(const runtime::Tensor& a, const runtime::Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
  }
  return worst;
}

// The dataset lines the toolkit got: one per calibrated image, in order, each file existing
// relative to the working directory (how the toolkit reads them), holding what the segment
// takes for that image: for the model's input the image's pixels (`pixels`, normalisation on the
// NPU) or its normalised tensor, for a bridge the float chain's tensor.
void ExpectDataset(const json& lines, const SegmentInfo& seg, const fs::path& bundle, bool pixels) {
  ASSERT_EQ(lines.size(), static_cast<size_t>(kCalibrated)) << lines;
  for (int k = 0; k < kCalibrated; ++k) {
    SCOPED_TRACE(fmt::format("{} sample {}", seg.stem, k));
    ASSERT_EQ(lines[k].size(), seg.inputs.size());
    runtime::TensorMap want = SegmentFeed(bundle, seg, k);
    for (size_t i = 0; i < seg.inputs.size(); ++i) {
      const std::string& name = seg.inputs[i].name;
      EXPECT_TRUE(lines[k][i]["exists"]) << lines[k][i];
      runtime::Tensor got = runtime::ReadNpy(lines[k][i]["abs"].get<std::string>());
      EXPECT_EQ(got.shape(), seg.inputs[i].dims) << name;
      if (name == "images" && pixels) {
        const float* v = got.data<float>();
        double worst = 0;
        for (int c = 0; c < 3; ++c)
          for (int y = 0; y < kSize; ++y)
            for (int x = 0; x < kSize; ++x)
              worst = std::max(
                  worst, std::fabs(v[(c * kSize + y) * kSize + x] - double(Pixel(k, c, y, x))));
        EXPECT_LE(worst, 1e-3) << "pixels";
      } else {
        EXPECT_LE(MaxDiff(got, want.at(name)), 1e-5) << name;
      }
    }
  }
}

// The segment holding `node`.
const SegmentInfo* Holder(const std::vector<SegmentInfo>& segments, const std::string& node) {
  for (const auto& seg : segments) {
    if (seg.node_outputs.count(node)) return &seg;
  }
  return nullptr;
}

TEST(CliPortVendor, Int8RknnPortCarriesMeanStdDatasetAndTheNodeKeptFloat) {
  std::string python = PythonUnavailable();
  if (!python.empty()) PORTTOOL_SKIP_MISSING(python);
  TempDir tmp;
  fs::path images = WriteImages(tmp);
  fs::path bundle = tmp / "b";
  std::string args = "port " + testing::DemoArg() + " --target rknn-rk3588 " + kDemoPin + " " +
                     ImageArgs(images) +
                     " --per-channel --method entropy --precision float:block1/Conv";
  auto r = RunPorttool(args + " --threads 1 -o " + bundle.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<SegmentInfo> segments = AcceleratorSegments(bundle);
  ASSERT_FALSE(segments.empty());

  for (bool in_app : {false, true}) {
    SCOPED_TRACE(in_app ? "--normalize-in-app" : "normalisation on the NPU");
    ConvertRun run = RunConvert(tmp, bundle, in_app ? "--normalize-in-app" : "");
    ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
    ExpectLoadsEverySegment(run.calls, bundle, segments);
    auto configs = CallsNamed(run.calls, "config");
    ASSERT_EQ(configs.size(), segments.size());
    // One build or hybrid step 1 per segment, each with its dataset.
    std::vector<json> builds =
        CallsNamed(run.calls, std::set<std::string>{"build", "hybrid_quantization_step1"});
    ASSERT_EQ(builds.size(), segments.size());
    for (size_t i = 0; i < segments.size(); ++i) {
      const SegmentInfo& seg = segments[i];
      SCOPED_TRACE(seg.stem);
      const json& c = configs[i];
      EXPECT_EQ(c["target_platform"], "rk3588");
      EXPECT_EQ(c["float_dtype"], "float16");
      EXPECT_EQ(c["quantized_dtype"], "w8a8");
      EXPECT_EQ(c["quantized_algorithm"], "kl_divergence");  // porttool's entropy
      EXPECT_EQ(c["quantized_method"], "channel");           // --per-channel
      const bool takes_image = Names(seg.inputs) == std::vector<std::string>{"images"};
      if (takes_image && !in_app) {
        // mean_values = mean / (1/255), std_values = std / (1/255), per channel.
        ASSERT_EQ(c["mean_values"].size(), 1u) << c;
        for (int ch = 0; ch < 3; ++ch) {
          EXPECT_NEAR(c["mean_values"][0][ch].get<double>(), kMean[ch] * 255, 1e-4);
          EXPECT_NEAR(c["std_values"][0][ch].get<double>(), kStd[ch] * 255, 1e-4);
        }
      } else {
        EXPECT_EQ(c.count("mean_values"), 0u) << c;
        EXPECT_EQ(c.count("std_values"), 0u) << c;
      }
      const json& b = builds[i];
      EXPECT_EQ(b.value("do_quantization", true), true);
      EXPECT_EQ(b.value("proposal", false), false);
      ExpectDataset(b["dataset_lines"], seg, bundle, takes_image && !in_app);
    }
    // block1/Conv, kept float by hand, is float16 in the toolkit's hybrid quantization, named
    // by its output tensor in the segment that holds it; no other layer is.
    auto step2 = CallsNamed(run.calls, "hybrid_quantization_step2");
    ASSERT_EQ(step2.size(), 1u) << run.calls.dump(1);
    const SegmentInfo* holder = Holder(segments, "block1/Conv");
    ASSERT_NE(holder, nullptr);
    json want = json::object();
    for (const auto& o : holder->node_outputs.at("block1/Conv")) want[o] = "float16";
    EXPECT_EQ(step2[0]["custom_quantize_layers"], want);
    EXPECT_EQ(fs::path(step2[0]["model_input"].get<std::string>()).stem(), holder->stem);
  }
  // The bundle, vendor files and dataset included, is the same for another thread count.
  fs::path again = tmp / "again";
  r = RunPorttool(args + " --threads 2 -o " + again.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files = testing::RelativeFiles(bundle);
  std::vector<std::string> files_again = testing::RelativeFiles(again);
  for (auto* list : {&files, &files_again}) {  // what convert.py added is not port's
    list->erase(std::remove_if(list->begin(), list->end(),
                               [](const std::string& f) {
                                 return f.rfind("rknn/build/", 0) == 0 ||
                                        fs::path(f).extension() == ".rknn";
                               }),
                list->end());
  }
  EXPECT_EQ(files, files_again);
  size_t vendor = 0;
  for (const auto& f : files) {
    if (f == "port.log") continue;
    vendor += f.rfind("rknn/", 0) == 0;
    EXPECT_EQ(testing::ReadFile(bundle / f), testing::ReadFile(again / f)) << f;
  }
  size_t inputs = 0;
  for (const auto& seg : segments) inputs += seg.inputs.size();
  EXPECT_EQ(vendor, 2u + segments.size() + kCalibrated * inputs)
      << "convert.py, README.md, a dataset list per segment and an .npy per sample and input";
}

TEST(CliPortVendor, Rv1106HasNoFloatConversionAndRaisesKeptFloatToInt16) {
  std::string python = PythonUnavailable();
  if (!python.empty()) PORTTOOL_SKIP_MISSING(python);
  TempDir tmp;
  std::string port = "port " + testing::DemoArg() + " --target rknn-rv1106 " + kDemoPin;
  // No float on the RV1106 NPU: without calibration data there is no conversion, and the bundle
  // says so instead of shipping a script the toolkit would refuse.
  auto r = RunPorttool(port + " -o " + (tmp / "float").string());
  // Not ready twice over: float on an int8-only NPU, and the conversion step is missing.
  auto gates = ExpectVerdict(r, tmp / "float", "not-ready");
  EXPECT_EQ(gates["arithmetic"]["status"], "fail");
  EXPECT_NE(gates["completeness"]["finding"].get<std::string>().find("computes no float"),
            std::string::npos)
      << gates["completeness"];
  EXPECT_FALSE(fs::exists(tmp / "float" / "rknn"));
  EXPECT_NE(Details(tmp / "float").find("missing: rknn-rv1106: the NPU computes no float"),
            std::string::npos)
      << Details(tmp / "float");
  fs::path bundle = tmp / "int8";
  r = RunPorttool(port + " " + ImageArgs(WriteImages(tmp)) + " --precision float:head/Conv -o " +
                  bundle.string());
  // RV1106 has no kernel for Erf: a custom operator is left, so still not ready.
  gates = ExpectVerdict(r, bundle, "not-ready");
  EXPECT_EQ(gates["arithmetic"]["status"], "pass");
  EXPECT_NE(gates["completeness"]["finding"].get<std::string>().find("Erf"), std::string::npos);
  // Two accelerator segments around the host's Erf: the second is calibrated on its bridges.
  std::vector<SegmentInfo> segments = AcceleratorSegments(bundle);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_TRUE(fs::is_regular_file(bundle / "rknn" / "dataset.txt"));
  EXPECT_TRUE(fs::is_regular_file(bundle / "rknn" / ("dataset_" + segments[1].stem + ".txt")));
  ConvertRun run = RunConvert(tmp, bundle);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
  ExpectLoadsEverySegment(run.calls, bundle, segments);
  for (const auto& c : CallsNamed(run.calls, "config")) {
    EXPECT_EQ(c["target_platform"], "rv1106");
    EXPECT_EQ(c.count("float_dtype"), 0u) << c;
    EXPECT_EQ(c["quantized_algorithm"], "mmse");  // porttool's default mse: see convert.py
    EXPECT_EQ(c["quantized_method"], "channel");  // porttool's default per-channel weights
  }
  std::vector<json> builds =
      CallsNamed(run.calls, std::set<std::string>{"build", "hybrid_quantization_step1"});
  ASSERT_EQ(builds.size(), segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    ExpectDataset(builds[i]["dataset_lines"], segments[i], bundle, i == 0);
  }
  // Kept float, on an NPU without float: int16, the nearest precision it has.
  auto step2 = CallsNamed(run.calls, "hybrid_quantization_step2");
  ASSERT_EQ(step2.size(), 1u) << run.calls.dump(1);
  const SegmentInfo* holder = Holder(segments, "head/Conv");
  ASSERT_NE(holder, nullptr);
  json want = json::object();
  for (const auto& o : holder->node_outputs.at("head/Conv")) want[o] = "int16";
  EXPECT_EQ(step2[0]["custom_quantize_layers"], want);
}

// A fake tool that fails unless every file its arguments name exists (relative to where the
// script runs it), creates what it is asked to write, and logs its arguments.
void WriteFakeTools(const fs::path& bin) {
  fs::create_directories(bin);
  testing::WriteFile(bin / "trtexec", R"(#!/bin/sh
echo "$@" >> "$TOOL_LOG"
for a in "$@"; do
  case "$a" in
    --onnx=*|--calib=*) f="${a#*=}"; [ -f "$f" ] || { echo "no file $f" >&2; exit 1; } ;;
    --saveEngine=*) : > "${a#*=}" ;;
  esac
done
)");
  testing::WriteFile(bin / "stedgeai", R"(#!/bin/sh
echo "$@" >> "$TOOL_LOG"
[ "$1" = generate ] || exit 2
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --model) [ -f "$2" ] || { echo "no file $2" >&2; exit 1; }; shift 2 ;;
    --output) mkdir -p "$2"; shift 2 ;;
    *) shift ;;
  esac
done
)");
  fs::permissions(bin / "trtexec", fs::perms::owner_all);
  fs::permissions(bin / "stedgeai", fs::perms::owner_all);
}

std::vector<std::string> RunScript(const TempDir& tmp, const fs::path& script) {
  fs::path log = tmp / "tool.log";
  fs::remove(log);
  auto r = RunShell("cd / && TOOL_LOG=" + log.string() + " PATH=" + (tmp / "bin").string() +
                    ":$PATH sh " + script.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> lines;
  std::istringstream in(testing::ReadFile(log));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CliPortVendor, TrtexecAndStedgeaiLinesNameFilesTheBundleHolds) {
  TempDir tmp;
  WriteFakeTools(tmp / "bin");
  fs::path images = WriteImages(tmp);
  for (const char* target : {"jetson-orin", "stm32f767"}) {
    for (bool int8 : {false, true}) {
      SCOPED_TRACE(std::string(target) + (int8 ? " int8" : " float"));
      fs::path bundle = tmp / fmt::format("{}-{}", target, int8);
      auto r = RunPorttool("port " + testing::DemoArg() + " --target " + target + " " + kDemoPin +
                           (int8 ? " " + ImageArgs(images) + " --precision float:head/Conv" : "") +
                           " -o " + bundle.string());
      // Float activations of the demo at 160x160 need 1.17 MiB: more than the Cortex-M7's RAM.
      bool over_ram = std::string(target) == "stm32f767" && !int8;
      ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
      auto gates = ExpectVerdict(r, bundle, r.exit_code == 0 ? "ready" : "not-ready");
      EXPECT_EQ(gates["fit"]["status"], over_ram ? "fail" : "pass") << gates["fit"];
      EXPECT_EQ(gates["completeness"]["status"], "pass") << gates["completeness"];
      std::vector<SegmentInfo> segments = AcceleratorSegments(bundle);
      bool jetson = std::string(target) == "jetson-orin";
      std::vector<std::string> calls =
          RunScript(tmp, bundle / (jetson ? "tensorrt/build_engine.sh" : "stedgeai/generate.sh"));
      ASSERT_EQ(calls.size(), segments.size());
      for (size_t i = 0; i < segments.size(); ++i) {
        const std::string& line = calls[i];
        const SegmentInfo& seg = segments[i];
        if (jetson) {
          EXPECT_NE(line.find("--onnx=" + seg.file), std::string::npos) << line;
          EXPECT_TRUE(fs::is_regular_file(bundle / "tensorrt" / (seg.stem + ".engine")));
          EXPECT_NE(line.find("--fp16"), std::string::npos) << line;
          EXPECT_EQ(line.find("--int8") != std::string::npos, int8) << line;
          EXPECT_EQ(line.find("--calib=tensorrt/calibration.cache") != std::string::npos, int8);
          if (int8) {
            // Tagged for trtexec's calibrator (entropy 2) and the profile's TensorRT 8.4.1:
            // another tag and TensorRT calibrates on trtexec's random inputs instead.
            std::string cache = testing::ReadFile(bundle / "tensorrt" / "calibration.cache");
            EXPECT_EQ(cache.substr(0, cache.find('\n')), "TRT-8401-EntropyCalibration2");
          }
          bool holds_head = seg.node_outputs.count("head/Conv") > 0;
          EXPECT_EQ(line.find("--precisionConstraints=obey --layerPrecisions=head/Conv:fp16") !=
                        std::string::npos,
                    int8 && holds_head)
              << line;
        } else {
          std::string model = int8 ? "segments/" + seg.stem + ".qdq.onnx" : seg.file;
          EXPECT_NE(line.find("--model " + model + " "), std::string::npos) << line;
          EXPECT_NE(line.find("--target stm32f7 --compression lossless"), std::string::npos);
          EXPECT_TRUE(fs::is_directory(bundle / "stedgeai" / seg.stem));
        }
      }
    }
  }
}

// A profile that names no tool: the missing step is reported, not hidden; one whose segments
// load as they are (onnxruntime-cpu) has nothing missing and no vendor folder.
TEST(CliPortVendor, ProfileWithoutVendorToolReportsTheMissingStep) {
  TempDir tmp;
  json profile = ReadJson(testing::SourceDir() / "rules" / "targets" / "jetson-orin.json");
  profile.erase("vendor_tool");
  profile["name"] = "bare";
  testing::WriteFile(tmp / "bare.json", profile.dump(2));
  auto r = RunPorttool("port " + testing::DemoArg() + " --target " + (tmp / "bare.json").string() +
                       " " + kDemoPin + " -o " + (tmp / "b").string());
  // A missing step to the device fails the completeness gate.
  auto gates = ExpectVerdict(r, tmp / "b", "not-ready");
  EXPECT_EQ(gates["completeness"]["status"], "fail");
  EXPECT_NE(
      Details(tmp / "b").find("missing: bare: no step from the bundle to the device is known"),
      std::string::npos)
      << Details(tmp / "b");
  EXPECT_FALSE(fs::exists(tmp / "b" / "tensorrt"));
  r = RunPorttool("port " + testing::DemoArg() + " --target onnxruntime-cpu " + kDemoPin + " -o " +
                  (tmp / "ort").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Details(tmp / "ort").find("missing:"), std::string::npos) << Details(tmp / "ort");
  for (const char* dir : {"rknn", "tensorrt", "stedgeai"})
    EXPECT_FALSE(fs::exists(tmp / "ort" / dir));
}

}  // namespace
}  // namespace porttool::port_vendor_test
