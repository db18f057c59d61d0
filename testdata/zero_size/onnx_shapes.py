#!/usr/bin/python3
"""The shape oracle of lib/runtime/kernels/zero_size_test.cc: ONNX's own shape inference
(python onnx 1.12, strict) over every model in DIR. Prints one line per model:

  <file stem> ok <shape>;<shape>...   each output's inferred dims, comma separated; "?" for an
                                      output (or a dim) inference leaves unknown
  <file stem> error <message>         ONNX's inference refuses the node
  <file stem> unknown                 an op or opset this onnx release does not know

Usage: /usr/bin/python3 testdata/zero_size/onnx_shapes.py DIR
"""
import os
import sys

import onnx
from onnx import shape_inference


def dims(value_info):
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return "?"
    out = []
    for d in t.shape.dim:
        out.append(str(d.dim_value) if d.HasField("dim_value") else "?")
    return "[" + ",".join(out) + "]"


def infer(path):
    model = onnx.load(path)
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as e:  # noqa: BLE001 (onnx raises several types)
        text = " ".join(str(e).split())
        if "No Op registered" in text or "is not a registered" in text or "opset" in text.lower():
            return "unknown"
        return "error " + text[:200]
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    shapes = []
    for name in model.graph.node[0].output:
        if not name:
            continue
        shapes.append(dims(known[name]) if name in known else "?")
    return "ok " + ";".join(shapes)


def main():
    folder = sys.argv[1]
    for name in sorted(os.listdir(folder)):
        if name.endswith(".onnx"):
            print(name[:-5], infer(os.path.join(folder, name)), flush=True)


if __name__ == "__main__":
    main()
