#!/usr/bin/python3
"""Writes the one-op models scripts/bench/bench_unseen_ops.sh times against ONNX Runtime (issue
49): the ops the executor had never been measured on, at the shapes the models that exposed them
use.

  maxpool_k{5,9,13}     MaxPool k x k, stride 1, same padding over [1, 256, 20, 20] (YOLOX's SPP)
  resize_linear_nchw    Resize linear half_pixel by sizes, [1, 64, 80, 80] -> [1, 64, 160, 160]
                        (M-LSD's last decoder upsampling, after tf2onnx's transposes)
  resize_linear_nchw{20,40}  the same from [1, 64, 20, 20] and [1, 64, 40, 40] (M-LSD's other two)
  resize_linear_nhwc    the same on [1, 80, 80, 64] -> [1, 160, 160, 64] (a tf2onnx Resize left
                        in NHWC: scales [1, 2, 2, 1])
  resize_nearest_nchw   Resize nearest asymmetric floor x2, [1, 64, 80, 80]
  resize_nearest_nhwc   the same on [1, 80, 80, 64]
  dynamic_int8          what quantize_dynamic writes for convs (ORT's quantizer is not installed
                        here, so the nodes are written directly): DynamicQuantizeLinear, then
                        ConvInteger with uint8 weights and zero points, Cast, Mul by the scales,
                        Add of the bias, Relu; a 3x3 stride-2 stem, a depthwise 3x3 and pointwise
                        convs over [1, 3, 256, 256]

Usage: /usr/bin/python3 scripts/gen_unseen_op_models.py OUT_DIR
Each model has one input "x" (float32) and one output "y". Fixed seed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out_dir, name, nodes, shape, inits=(), opset=13):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, name, [x], [y], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))


def maxpools(out_dir):
    for k in (5, 9, 13):
        p = k // 2
        node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[k, k], strides=[1, 1],
                                pads=[p, p, p, p])
        save(out_dir, f"maxpool_k{k}", [node], [1, 256, 20, 20])


def resizes(out_dir):
    empty = numpy_helper.from_array(np.array([], np.float32), "empty")
    for layout, shape, out in (("nchw", [1, 64, 80, 80], [1, 64, 160, 160]),
                               ("nhwc", [1, 80, 80, 64], [1, 160, 160, 64])):
        sizes = numpy_helper.from_array(np.array(out, np.int64), "sizes")
        node = helper.make_node("Resize", ["x", "empty", "empty", "sizes"], ["y"], mode="linear",
                                coordinate_transformation_mode="half_pixel")
        save(out_dir, f"resize_linear_{layout}", [node], shape, [empty, sizes])
        scales = numpy_helper.from_array(
            np.array([o / i for o, i in zip(out, shape)], np.float32), "scales")
        node = helper.make_node("Resize", ["x", "empty", "scales"], ["y"], mode="nearest",
                                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        save(out_dir, f"resize_nearest_{layout}", [node], shape, [empty, scales])
    for side in (20, 40):
        sizes = numpy_helper.from_array(np.array([1, 64, 2 * side, 2 * side], np.int64), "sizes")
        node = helper.make_node("Resize", ["x", "empty", "empty", "sizes"], ["y"], mode="linear",
                                coordinate_transformation_mode="half_pixel")
        save(out_dir, f"resize_linear_nchw{side}", [node], [1, 64, side, side], [empty, sizes])


def dynamic_int8(out_dir):
    rng = np.random.default_rng(49)
    nodes, inits = [], []

    def init(name, value):
        inits.append(numpy_helper.from_array(value, name))
        return name

    def qconv(x, cin, cout, k, stride, group, index, relu=True):
        xq, xs, xz = (f"q{index}", f"qs{index}", f"qz{index}")
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [xq, xs, xz]))
        w = rng.integers(0, 256, size=[cout, cin // group, k, k]).astype(np.uint8)
        wz = init(f"wz{index}", np.array(128, np.uint8))
        wq = init(f"w{index}", w)
        acc = f"acc{index}"
        nodes.append(helper.make_node("ConvInteger", [xq, wq, xz, wz], [acc], group=group,
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        nodes.append(helper.make_node("Cast", [acc], [f"f{index}"], to=TensorProto.FLOAT))
        ws = init(f"ws{index}", np.array(0.002, np.float32))
        nodes.append(helper.make_node("Mul", [xs, ws], [f"s{index}"]))
        nodes.append(helper.make_node("Mul", [f"f{index}", f"s{index}"], [f"m{index}"]))
        b = init(f"b{index}", (rng.standard_normal([1, cout, 1, 1]) * 0.1).astype(np.float32))
        out = f"a{index}" if relu else "y"
        nodes.append(helper.make_node("Add", [f"m{index}", b], [out if not relu else f"p{index}"]))
        if relu:
            nodes.append(helper.make_node("Relu", [f"p{index}"], [out]))
        return out

    h = qconv("x", 3, 32, 3, 2, 1, 0)         # 128 x 128
    h = qconv(h, 32, 32, 3, 1, 32, 1)         # depthwise
    h = qconv(h, 32, 64, 1, 1, 1, 2)          # pointwise
    h = qconv(h, 64, 64, 3, 2, 64, 3)         # depthwise, stride 2: 64 x 64
    h = qconv(h, 64, 128, 1, 1, 1, 4)
    h = qconv(h, 128, 128, 3, 1, 1, 5)        # dense 3x3
    qconv(h, 128, 64, 1, 1, 1, 6, relu=False)
    save(out_dir, "dynamic_int8", nodes, [1, 3, 256, 256], inits)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    maxpools(out_dir)
    resizes(out_dir)
    dynamic_int8(out_dir)


if __name__ == "__main__":
    main()
