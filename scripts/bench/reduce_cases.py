#!/usr/bin/env python3
"""Failing cases for scripts/bench/bench_reduce.sh, planted in copies of the shared models, and the
checks that detect them (python onnx 1.12).

  reduce_cases.py plant-det DET.onnx OUT.onnx    one Resize of det: nearest_mode=round_prefer_ceil,
                                                 its scales computed by a Concat of two Constants
  reduce_cases.py plant-rec REC.onnx OUT.onnx    one Softmax of rec over axis 1 of its rank-4 input
  reduce_cases.py corrupt-conv DET.onnx OUT.onnx NODE   NODE's weights + 1e-2
  reduce_cases.py check-resize MODEL   exit 1 when a Resize with round_prefer_ceil is fed by a Concat
  reduce_cases.py check-softmax MODEL  exit 1 when a Softmax is over a non-last axis (ranks from
                                       $PORTTOOL infer-shapes)

PP-OCRv4 det as published has neither pattern (its Resizes use nearest_mode=floor and read
Constants; rec's Softmaxes are over the last axis), so the bench plants them: the checks stand for
a converter that rejects these spellings, as RKNN's does for some Resize modes.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper


def plant_det(src, out):
    m = onnx.load(src)
    g = m.graph
    producers = {o: n for n in g.node for o in n.output}
    resize = next(n for n in g.node if n.op_type == "Resize" and n.name == "p2o.Resize.2")
    for a in resize.attribute:
        if a.name == "nearest_mode":
            a.s = b"round_prefer_ceil"
    scales_const = producers[resize.input[2]]
    scales = numpy_helper.to_array(scales_const.attribute[0].t)
    a = helper.make_node("Constant", [], ["planted_scales_a"], name="planted_scales_a",
                         value=numpy_helper.from_array(scales[:2].copy()))
    b = helper.make_node("Constant", [], ["planted_scales_b"], name="planted_scales_b",
                         value=numpy_helper.from_array(scales[2:].copy()))
    cat = helper.make_node("Concat", ["planted_scales_a", "planted_scales_b"], ["planted_scales"],
                           name="planted_concat", axis=0)
    resize.input[2] = "planted_scales"
    index = list(g.node).index(resize)
    for node in reversed([a, b, cat]):
        g.node.insert(index, node)
    onnx.save(m, out)


def plant_rec(src, out):
    m = onnx.load(src)
    softmax = next(n for n in m.graph.node if n.op_type == "Softmax")
    for a in softmax.attribute:
        if a.name == "axis":
            a.i = 1
    onnx.save(m, out)


def corrupt_conv(src, out, node_name):
    """NODE's weights + 1e-2, whether an initializer or a Constant node holds them (det's)."""
    m = onnx.load(src)
    g = m.graph
    weight = next(n for n in g.node if n.name == node_name).input[1]
    for init in g.initializer:
        if init.name == weight:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) + np.float32(1e-2),
                                                  weight))
    for node in g.node:
        if node.op_type == "Constant" and node.output[0] == weight:
            t = node.attribute[0].t
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) + np.float32(1e-2), t.name))
    onnx.save(m, out)


def check_resize(path):
    g = onnx.load(path).graph
    producers = {o: n for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type != "Resize":
            continue
        mode = next((a.s for a in n.attribute if a.name == "nearest_mode"), b"")
        fed = any(i in producers and producers[i].op_type == "Concat" for i in n.input)
        if mode == b"round_prefer_ceil" and fed:
            print("unsupported: Resize %s (round_prefer_ceil) fed by a Concat" % n.name)
            return 1
    return 0


def inferred(path):
    """The model with porttool's shape inference (python onnx's leaves rec's ranks unknown)."""
    porttool = os.environ.get("PORTTOOL", "porttool")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "inferred.onnx")
        done = subprocess.run([porttool, "-q", "infer-shapes", path, "-o", out, "--allow-partial"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # A model inference refuses has no ranks to judge: the original is checked as it is.
        return onnx.load(out) if done.returncode == 0 else onnx.load(path)


def check_softmax(path):
    g = inferred(path).graph
    ranks = {v.name: len(v.type.tensor_type.shape.dim)
             for v in list(g.value_info) + list(g.input) + list(g.output)}
    for n in g.node:
        if n.op_type != "Softmax":
            continue
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
        rank = ranks.get(n.input[0])
        if rank and axis not in (-1, rank - 1):
            print("unsupported: Softmax %s over axis %d of rank %d" % (n.name, axis, rank))
            return 1
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "plant-det":
        plant_det(sys.argv[2], sys.argv[3])
    elif cmd == "plant-rec":
        plant_rec(sys.argv[2], sys.argv[3])
    elif cmd == "corrupt-conv":
        corrupt_conv(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "check-resize":
        sys.exit(check_resize(sys.argv[2]))
    elif cmd == "check-softmax":
        sys.exit(check_softmax(sys.argv[2]))
    else:
        sys.exit("unknown command " + cmd)
