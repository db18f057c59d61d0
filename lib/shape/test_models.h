// Model fixtures shared by the test suites (header-only, tests only): the bundled demo detector
// pinned to a small input, and a tensor's recorded shape as text. One place, so a test never
// carries its own slightly different copy.
#pragma once

#include <string>

#include "lib/io/model.h"
#include "lib/ir/dtype.h"
#include "lib/ir/graph_view.h"
#include "lib/shape/input_shapes.h"
#include "lib/util/testing.h"

namespace porttool::testing {

// testdata/demo_detector.onnx with `images` pinned to 1x3xSIDExSIDE (small, so tests stay fast).
inline io::Model DemoModel(int64_t side = 64) {
  io::Model m = io::Load(DemoModelPath());
  shape::ApplyInputShapes(m, shape::InputShapes{{"images", {1, 3, side, side}}});
  return m;
}

// Names every unnamed node "n_<first output>", subgraphs included (the 1.12 text parser gives
// nodes no names, and split and extract address nodes by name).
inline void NameNodes(onnx::GraphProto& graph) {
  for (auto& node : *graph.mutable_node()) {
    if (node.name().empty() && node.output_size() > 0) node.set_name("n_" + node.output(0));
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) NameNodes(*attr.mutable_g());
    }
  }
}

// ONNX text parsed, with every node named as NameNodes does.
inline io::Model ParseNamed(const std::string& text) {
  io::Model model = io::ParseText(text);
  NameNodes(*model.proto.mutable_graph());
  return model;
}

// A Reshape whose target ONNX 1.12 cannot follow (Shape -> Cast -> Cast) on an input x of
// `x_dims` ("N,3" or "2,3"), with its output 'r' declared as tf2onnx declares what it could not
// infer: [unk__363, unk__364] (issue 49's placeholder dims). Node 4 is the Reshape.
inline io::Model PlaceholderDimsModel(const std::string& x_dims) {
  io::Model m = io::ParseText(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[)" + x_dims + R"(] x) => (float[?,?] y) {
      s = Shape(x)
      c = Cast<to = 6>(s)
      d = Cast<to = 7>(c)
      t = Transpose(x)
      r = Reshape(t, d)
      y = Relu(r)
    })");
  auto* vi = m.proto.mutable_graph()->add_value_info();
  vi->set_name("r");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (const char* dim : {"unk__363", "unk__364"}) {
    vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(dim);
  }
  return m;
}

// The shape recorded for `name` (graph input, value_info or output) as "1x3x?", or "absent".
inline std::string ShapeOf(const io::Model& model, const std::string& name) {
  ir::GraphView view(model.proto.graph());
  const auto* vi = view.ValueInfo(name);
  return vi ? ir::ShapeToString(vi->type()) : "absent";
}

}  // namespace porttool::testing
